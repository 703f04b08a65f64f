package ssim2

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// The pyramids hold all three channels in one buffer where the binding
// limit allows (one hblur, vstate and vmaps dispatch for every scale and
// channel) and one buffer per channel otherwise (three of each). Every
// value is computed by the same operations either way, so the scores must
// be the same bits: checked here with both layouts forced, on widths that
// take hblur4 and the row kernel, with row bands (240 rows, on for this
// test; heights over 240), and
// with alpha (two passes). Identical images must score exactly 100.
func TestSSIM2PyramidLayoutsBitIdentical(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	defer func() { forcePyrBuffers = 0 }()
	// Row bands on (vstate and banded vmaps in the job tables too).
	setBand := func(rows int) int { return setVBand(t, b, rows) }
	const band = 240
	defer setBand(setBand(band))
	cases := []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{192, 136, zenmetrics.RGB8}, {201, 97, zenmetrics.RGB8}, {120, 88, zenmetrics.RGBA8}, {140, 530, zenmetrics.Gray8},
	}
	for i, c := range cases {
		ref, d0 := metrictest.Synthetic(c.w, c.h, int64(700+10*i), c.f)
		dists := []*zenmetrics.Image{d0}
		for j := 1; j < 3; j++ {
			_, d := metrictest.Synthetic(c.w, c.h, int64(700+10*i+j), c.f)
			dists = append(dists, d)
		}
		dists = append(dists, ref)
		var got [2][]float64
		for li, nb := range []int{1, 3} {
			forcePyrBuffers = nb
			r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sr := r.(*ssim2Ref)
			if sr.pyr.nb != nb {
				t.Fatalf("forced %d buffers per pyramid, got %d", nb, sr.pyr.nb)
			}
			if c.h > band && sr.lay.bands[0] < 2 {
				t.Fatalf("%dx%d: no row bands at scale 0", c.w, c.h)
			}
			for _, d := range dists {
				s, err := r.Score(ctx, d)
				if err != nil {
					t.Fatal(err)
				}
				got[li] = append(got[li], s.Value)
			}
			r.Release()
		}
		for j := range dists {
			one, three := got[0][j], got[1][j]
			if math.Float64bits(one) != math.Float64bits(three) {
				t.Errorf("%dx%d %v dist %d: one pyramid buffer %.17g, three %.17g", c.w, c.h, c.f, j, one, three)
			}
			if j == len(dists)-1 && (one != 100 || three != 100) {
				t.Errorf("%dx%d %v: identical images score %.17g / %.17g, want exactly 100", c.w, c.h, c.f, one, three)
			}
		}
		t.Logf("%dx%d %v: %.9f %.9f %.9f", c.w, c.h, c.f, got[0][0], got[0][1], got[0][2])
	}
}
