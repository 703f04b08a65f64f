package zensim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkZensimCached scores a distorted image against a prepared
// reference (the whole GPU side of a score: upload, XYB, pyramid, blurs,
// features, reductions, read-back of 241 floats), for 1 MP and 16 MP
// synthetic RGB8 pairs; the target is ≤ 10 ms per 16 MP on the
// H200. Bytes are the 8-bit RGB input (MB/s ÷ 3 = megapixels per second).
// With timestamp queries it also reports the GPU time of each kernel kind
// over all scales (xyb-ms, down-ms, hblur-ms, vstats-ms, reduce-ms) from
// one profiled score after the timed loop.
func BenchmarkZensimCached(b *testing.B) {
	be := backend(b)
	for _, side := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%dMP", side*side>>20), func(b *testing.B) {
			ref, dist := metrictest.SyntheticPair(side, side, 1)
			r, err := be.Prepare(context.Background(), zenmetrics.Zensim, ref, zenmetrics.Options{})
			if err != nil {
				b.Skip(err)
			}
			defer r.Release()
			metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), dist); return err })
			b.SetBytes(int64(side * side * 3))
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// GPU time per kernel kind (all scales), one profiled score.
			times, err := PassProfile(context.Background(), r, dist)
			if err != nil {
				b.Fatal(err)
			}
			per := map[string]float64{}
			for _, pt := range times {
				per[strings.Fields(pt.Label)[0]] += pt.DurationNS / 1e6
			}
			for k, v := range per {
				b.ReportMetric(v, k+"-ms")
			}
		})
		// Two callers on one reference (the orchestrator's workers per
		// GPU): pipelined uploads (pipe.go) overlap one's host fill with
		// the other's GPU work. ms/score is the time per score.
		b.Run(fmt.Sprintf("%dMP/2callers", side*side>>20), func(b *testing.B) {
			ref, dist := metrictest.SyntheticPair(side, side, 1)
			r, err := be.Prepare(context.Background(), zenmetrics.Zensim, ref, zenmetrics.Options{})
			if err != nil {
				b.Skip(err)
			}
			defer r.Release()
			metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), dist); return err })
			b.SetBytes(int64(2 * side * side * 3))
			errs := make(chan error, 2)
			t0 := time.Now()
			b.ResetTimer()
			for b.Loop() {
				for range 2 {
					go func() { _, err := r.Score(context.Background(), dist); errs <- err }()
				}
				for range 2 {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(time.Since(t0).Microseconds())/1e3/float64(2*b.N), "ms/score")
		})
	}
}
