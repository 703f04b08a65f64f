package ssim2

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// benchImpls are the two paths, side by side in one run: impl=ref is the
// pure-Go reference code, impl=simd the cpusimd kernels (left out where
// they are not available).
func benchImpls() []string {
	if useSIMD {
		return []string{"ref", "simd"}
	}
	return []string{"ref"}
}

// BenchmarkSSIM2 scores a synthetic photo-like pair at 1 and 4 megapixels,
// on one goroutine and on all cores, both as a full score (prepare + score)
// and against a cached reference, on each path. Bytes are the 8-bit RGB
// input, so MB/s divided by 3 is megapixels per second.
func BenchmarkSSIM2(b *testing.B) {
	sizes := []struct {
		name string
		w, h int
	}{{"1MP", 1024, 1024}, {"4MP", 2048, 2048}}
	for _, sz := range sizes {
		ref, dist := metrictest.SyntheticPair(sz.w, sz.h, 1)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			cfg := Config{Threads: threads}
			for _, impl := range benchImpls() {
				b.Run(fmt.Sprintf("%s/threads=%d/full/impl=%s", sz.name, threads, impl), func(b *testing.B) {
					defer setSIMD(impl == "simd")()
					b.SetBytes(int64(sz.w * sz.h * 3))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := Score(ref, dist, cfg); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			for _, impl := range benchImpls() {
				b.Run(fmt.Sprintf("%s/threads=%d/cached/impl=%s", sz.name, threads, impl), func(b *testing.B) {
					defer setSIMD(impl == "simd")()
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
}
