package zensim

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestStrips scores images in strips of several heights, with the
// reference pyramids resident and recomputed per score, and compares with
// the whole image on the same device: every value is computed from the
// same rows by the same kernels and every strip's sums land in the slot
// the whole image gives them (plan.go), so the scores must be identical
// bits (tolerance 0). Also the strip count and strategy StripInfo reports,
// and that the memory model is what the strip reference holds.
func TestStrips(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer func() { forceKeep = nil }()
	for _, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
		keep       bool
	}{
		{203, 700, 128, zenmetrics.RGB8, true},
		{203, 700, 128, zenmetrics.RGB8, false},
		{150, 1001, 256, zenmetrics.RGBA16, false},
		{257, 530, 128, zenmetrics.GrayA8, true},
		{96, 900, 384, zenmetrics.Gray16, true},
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(c.h), c.f)
		full, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		keep := c.keep
		forceKeep = &keep
		r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: c.band})
		if err != nil {
			t.Fatalf("%dx%d band %d: %v", c.w, c.h, c.band, err)
		}
		n, kept, _ := webgpu.StripInfo(r)
		// The memory model of this layout (Estimate's, plan.go) is what
		// the strip reference holds.
		zr := r.(*reference)
		if want, held := zr.l.memory(worstRaw(c.w, zr.l.maxRows), kept), webgpu.ReferenceBytes(r); held != want {
			t.Errorf("%dx%d band %d: the strip reference holds %d bytes, the model says %d", c.w, c.h, c.band, held, want)
		}
		s, err := r.Score(ctx, dist)
		same, err2 := r.Score(ctx, ref)
		r.Release()
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		t.Logf("%dx%d %v, band %d: %d strips (resident %v): strips %.17g, whole %.17g", c.w, c.h, c.f, c.band, n, kept, s.Value, full.Value)
		if n < 2 || kept != c.keep {
			t.Errorf("%dx%d band %d: %d strips, resident %v; want several, resident %v", c.w, c.h, c.band, n, kept, c.keep)
		}
		if math.Float64bits(s.Value) != math.Float64bits(full.Value) {
			t.Errorf("%dx%d band %d: strips %.17g, whole image %.17g (|Δ| %.3g)", c.w, c.h, c.band, s.Value, full.Value, math.Abs(s.Value-full.Value))
		}
		if same.Value != 100 {
			t.Errorf("%dx%d band %d: the reference against itself in strips scores %v, want 100", c.w, c.h, c.band, same.Value)
		}
	}
}

// TestHblurPaths: hblur's 16-byte interior path and its general path give
// the same bits (tolerance 0): a reference prepared with the general path
// only scores every image exactly as the default one, at widths that take
// the 16-byte path at every scale, at some, and at none (below 20).
func TestHblurPaths(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	defer func() { scalarHblur = false }()
	for _, c := range []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{{203, 150, zenmetrics.RGB8}, {300, 97, zenmetrics.RGBA16}, {80, 64, zenmetrics.Gray8}, {12, 40, zenmetrics.RGB8}} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(c.w), c.f)
		var got [2]float64
		for i, scalar := range []bool{false, true} {
			scalarHblur = scalar
			s, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got[i] = s.Value
		}
		t.Logf("%dx%d %v: 16-byte path %.17g, general path %.17g", c.w, c.h, c.f, got[0], got[1])
		if math.Float64bits(got[0]) != math.Float64bits(got[1]) {
			t.Errorf("%dx%d %v: 16-byte path %.17g, general path %.17g", c.w, c.h, c.f, got[0], got[1])
		}
	}
}
