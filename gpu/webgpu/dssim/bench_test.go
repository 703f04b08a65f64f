package dssim

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// BenchmarkScoreCached times one DSSIM score against a prepared (cached)
// reference on the WebGPU device: upload of the distorted RGB8 image, its
// pyramid and the pooling, read-back included. The size is
// ZENMETRICS_DSSIM_BENCH_MP megapixels (default 1; issue #13's target is
// 16 MP at ≤ 10 ms on an H200). The GPU is warmed for a second first (clock
// ramp). It also reports the byte model (BytesPerPixel) as GB/s.
func BenchmarkScoreCached(b *testing.B) {
	mp := 1.0
	if v, err := strconv.ParseFloat(os.Getenv("ZENMETRICS_DSSIM_BENCH_MP"), 64); err == nil && v > 0 {
		mp = v
	}
	w := int(4 * 256 * mp / 1) // 4:3 aspect: w×h = mp·2^20
	h := w * 3 / 4
	for w*h < int(mp*(1<<20)) {
		w++
		h = w * 3 / 4
	}
	be := backend(b)
	ref, dist := metrictest.Synthetic(w, h, 1, zenmetrics.RGB8)
	ctx := context.Background()
	r, err := be.Prepare(ctx, zenmetrics.DSSIM, ref, zenmetrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Release()
	for t0 := time.Now(); time.Since(t0) < time.Second; {
		if _, err := r.Score(ctx, dist); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Score(ctx, dist); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(per*1e3, "ms/score")
	b.ReportMetric(BytesPerPixel(w, h, 3)*float64(w*h)/per/1e9, "model-GB/s")
	b.Logf("%dx%d (%.1f MP)", w, h, float64(w*h)/(1<<20))
}
