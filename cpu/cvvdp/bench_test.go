package cvvdp

import (
	"fmt"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkCVVDP measures a 1 MP (1024×1024 RGB8) synthetic pair with the
// default display (standard_4k): a fresh score (Prepare + Score + Release)
// and a cached one (Score on a prepared reference), on one thread and on
// all of them (GOMAXPROCS).
func BenchmarkCVVDP(b *testing.B) {
	ref, dist := metrictest.SyntheticPair(1024, 1024, 1)
	for _, th := range []int{1, 0} {
		name := "threads=1"
		if th == 0 {
			name = "threads=all"
		}
		b.Run(fmt.Sprintf("1MP/fresh/%s", name), func(b *testing.B) {
			c0 := processCPU()
			for b.Loop() {
				if _, err := Score(ref, dist, Config{Threads: th}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
		b.Run(fmt.Sprintf("1MP/cached/%s", name), func(b *testing.B) {
			r, err := Prepare(ref, Config{Threads: th})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Release()
			c0 := processCPU()
			for b.Loop() {
				if _, err := r.Score(dist); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
	}
}

// reportCPU adds the process CPU time per operation since c0 (ms) and the
// wall time per operation (ms).
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "wall-ms/op")
	if c := processCPU(); c > 0 {
		b.ReportMetric(float64((c-c0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	}
}
