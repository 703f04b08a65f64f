package zensim

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkZensim scores a synthetic photo-like RGB8 pair at 1920×1080 (the
// size of zensim's README timing: 89 ms single-threaded on a Ryzen 9
// 7950X), on one goroutine and on all cores, as a one-shot score (prepare
// + score + release) and against a cached reference. Bytes are the 8-bit
// RGB input (MB/s ÷ 3 = megapixels per second). cpu-ms/op is the
// process's CPU time per operation: on a shared machine it is what the
// cores spent, where ns/op also counts waiting for a core.
func BenchmarkZensim(b *testing.B) {
	const w, h = 1920, 1080
	ref, dist := metrictest.SyntheticPair(w, h, 1)
	for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
		cfg := Config{Threads: threads}
		b.Run(fmt.Sprintf("1080p/threads=%d/oneshot", threads), func(b *testing.B) {
			b.SetBytes(int64(w * h * 3))
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				if _, err := Compare(ref, dist, cfg); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
		b.Run(fmt.Sprintf("1080p/threads=%d/cached", threads), func(b *testing.B) {
			r, err := Prepare(ref, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Release()
			b.SetBytes(int64(w * h * 3))
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, c0)
		})
	}
}

// reportCPU adds the process CPU time per operation since c0.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c := processCPU(); c > 0 && b.N > 0 {
		b.ReportMetric(float64(c-c0)/1e6/float64(b.N), "cpu-ms/op")
	}
}
