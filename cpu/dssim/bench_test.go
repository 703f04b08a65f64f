package dssim

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkDSSIM scores a synthetic photo-like RGB8 pair at 1 and 4
// megapixels, on one goroutine and on all cores, as a full score (prepare
// + score + release, what the dssim tool does per pair) and against a
// cached reference. Bytes are the 8-bit RGB input, so MB/s ÷ 3 is
// megapixels per second. cpu-ms/op is the process's CPU time per
// operation (see processCPU): on a loaded machine it is what one core
// spends, where ns/op also counts waiting for a core.
func BenchmarkDSSIM(b *testing.B) {
	sizes := []struct {
		name string
		w, h int
	}{{"1MP", 1024, 1024}, {"4MP", 2048, 2048}}
	for _, sz := range sizes {
		ref, dist := metrictest.SyntheticPair(sz.w, sz.h, 1)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			cfg := Config{Threads: threads}
			b.Run(fmt.Sprintf("%s/threads=%d/full", sz.name, threads), func(b *testing.B) {
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				c0 := processCPU()
				for b.Loop() {
					if _, _, err := Compare(ref, dist, cfg); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, c0)
			})
			b.Run(fmt.Sprintf("%s/threads=%d/cached", sz.name, threads), func(b *testing.B) {
				r, err := Prepare(ref, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Release()
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				c0 := processCPU()
				for b.Loop() {
					if _, _, err := r.Score(context.Background(), dist); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, c0)
			})
		}
	}
}

// reportCPU adds the process CPU time per operation since c0.
func reportCPU(b *testing.B, c0 time.Duration) {
	if c := processCPU(); c > 0 && b.N > 0 {
		b.ReportMetric(float64(c-c0)/1e6/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkLab converts one 1 MP linear RGB scale to L*a*b* on one
// goroutine (the per-pixel colour step of every scale).
func BenchmarkLab(b *testing.B) {
	const w, h = 1024, 1024
	ref, _ := metrictest.SyntheticPair(w, h, 1)
	n := w * h
	lin := &linImage{w: w, h: h, r: make([]float32, n), g: make([]float32, n), b: make([]float32, n)}
	toLinearRows(ref, lin, 0, h)
	l, a, bb := make([]float32, n), make([]float32, n), make([]float32, n)
	b.SetBytes(int64(n * 3))
	c0 := processCPU()
	for b.Loop() {
		labRows(lin, l, a, bb, 0, h)
	}
	reportCPU(b, c0)
}
