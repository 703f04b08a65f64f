package iwssim

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestStrips scores images in strips of several heights and compares with
// the whole image on the same device: every owned value is computed from
// the same crop-independent inputs by the same kernels (the halo keeps the
// crop edges' reflect padding out of reach, see stripSpec) and the row
// sums are added in the same order, so the scores must be identical bits.
// Also: the strip count StripInfo reports, and that Estimate with
// ModeStrip is what the strip reference holds.
func TestStrips(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	for _, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
	}{
		{203, 700, 16, zenmetrics.RGB8},
		{203, 700, 112, zenmetrics.Gray16},
		{257, 1001, 64, zenmetrics.RGBA8},
		{180, 530, 48, zenmetrics.GrayA8},
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(c.h), c.f)
		full, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.IWSSIM, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.Prepare(ctx, zenmetrics.IWSSIM, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: c.band})
		if err != nil {
			t.Fatalf("%dx%d band %d: %v", c.w, c.h, c.band, err)
		}
		n, kept, _ := webgpu.StripInfo(r)
		s, err := r.Score(ctx, dist)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%dx%d %v, band %d: %d strips (resident %v): strips %.17g, whole %.17g", c.w, c.h, c.f, c.band, n, kept, s.Value, full.Value)
		if n < 2 || kept {
			t.Errorf("%dx%d band %d: %d strips, resident %v; want several, not resident", c.w, c.h, c.band, n, kept)
		}
		if math.Float64bits(s.Value) != math.Float64bits(full.Value) {
			t.Errorf("%dx%d band %d: strips %.17g, whole image %.17g (|Δ| %.3g)", c.w, c.h, c.band, s.Value, full.Value, math.Abs(s.Value-full.Value))
		}
	}
}
