package ssim2

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIM2RowBands checks vmaps' row bands. vstate walks each column in
// the very operations of vmaps and leaves the recursion state at every
// band start, so a band's blurred values are the whole column's bit for
// bit; what changes with the band height is only how the per-pixel terms
// are grouped into sums (per workgroup, then the reduce). So:
//   - any band height scores within 2e-6 of one band: compensated f32 sums
//     of up to ~10^5 terms regrouped, measured ≤ 3e-7 here; a wrong state
//     (one row off, a missing band, a quantity's state swapped) moves the
//     score by 1e-3 or more, because the recursion's rounding never decays
//     (see ssim2_vmaps.wgsl, strips);
//   - the same band height is deterministic, and kept reference blurs are
//     bit-identical to blurring all five quantities (as without bands).
func TestSSIM2RowBands(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	setBand := func(rows int) int { return setVBand(t, b, rows) }
	defer setBand(setBand(0))
	defer func(on bool) { ssim2KeepBlurs = on }(ssim2KeepBlurs)
	score := func(rows int, keep bool, ref, d *zenmetrics.Image) float64 {
		t.Helper()
		setBand(rows)
		ssim2KeepBlurs = keep
		r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		sr := r.(*ssim2Ref)
		if want := rows > 0 && rows < ref.Height; (sr.lay.bands[0] > 1) != want {
			t.Fatalf("band rows %d, height %d: %d bands at scale 0", rows, ref.Height, sr.lay.bands[0])
		}
		if sr.keep != keep {
			t.Fatalf("keep = %v, want %v", sr.keep, keep)
		}
		s, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return s.Value
	}
	worst := 0.0
	for i, c := range []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{200, 300, zenmetrics.RGB8}, {133, 171, zenmetrics.RGBA8}, {96, 420, zenmetrics.RGB16}, {77, 250, zenmetrics.Gray8},
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(700+i), c.f)
		one := score(0, false, ref, dist)
		for _, rows := range []int{20, 40, 100} {
			s := score(rows, false, ref, dist)
			d := math.Abs(s - one)
			worst = math.Max(worst, d)
			if d > 2e-6 {
				t.Errorf("%dx%d %v: bands of %d rows score %.9f, one band %.9f (|Δ| %.2e)", c.w, c.h, c.f, rows, s, one, d)
			}
			if again := score(rows, false, ref, dist); math.Float64bits(again) != math.Float64bits(s) {
				t.Errorf("%dx%d %v, bands of %d rows: not deterministic: %.17g then %.17g", c.w, c.h, c.f, rows, s, again)
			}
			if kept := score(rows, true, ref, dist); math.Float64bits(kept) != math.Float64bits(s) {
				t.Errorf("%dx%d %v, bands of %d rows: kept blurs %.17g, five blurs %.17g", c.w, c.h, c.f, rows, kept, s)
			}
		}
		if same := score(40, false, ref, ref); same != 100 {
			t.Errorf("%dx%d %v: identical images score %.17g with bands", c.w, c.h, c.f, same)
		}
	}
	t.Logf("max |Δ| bands vs one band: %.2e", worst)
}
