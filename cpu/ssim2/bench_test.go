package ssim2

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkSSIM2 scores a synthetic photo-like pair at 1 and 4 megapixels,
// on one goroutine and on all cores, both as a full score (prepare + score)
// and against a cached reference. Bytes are the 8-bit RGB input, so MB/s
// divided by 3 is megapixels per second.
func BenchmarkSSIM2(b *testing.B) {
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
				for b.Loop() {
					if _, err := Score(ref, dist, cfg); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/threads=%d/cached", sz.name, threads), func(b *testing.B) {
				r, err := Prepare(ref, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Release()
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := r.Score(dist); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
