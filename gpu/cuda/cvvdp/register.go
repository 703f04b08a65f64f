package cvvdp

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

func init() { cuda.Register(zenmetrics.CVVDP, impl{}) }

// impl is CVVDP's cuda.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return 8 * int64(w) * int64(h) }

// Estimate is the full-image model (estimate: exactly the buffers a
// reference and its first scorer take, without the distortion map, which
// Options would add and Prepare checks) or, for ModeStrip, the strip plan
// Prepare would pick now (strip.go: within StripHeadroom of the free
// device memory), for the worst case, RGBA16 uploads, on the default
// display model (standard_4k; Estimate has no Options): exact for it, and
// within a few small levels' buffers for a display with more bands, whose
// Prepare checks its own exact need. Below 2×2 pycvvdp has no pyramid:
// not ok.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < cpucv.MinSide || h < cpucv.MinSide || (mode != zenmetrics.ModeFull && mode != zenmetrics.ModeStrip) {
		return 0, false
	}
	p, err := cpucv.NewPlan(w, h, "")
	if err != nil {
		return 0, false
	}
	return b.EstimateMode(mode,
		func() (int64, bool) { return estimate(p, worstRaw(w, h), false), fits(w, h) },
		func(budget int64) (int64, bool) { return estimateStrips(p, budget) })
}

// estimateStrips is the memory of the strip plan of p's image in RGBA16
// within budget, and whether there is one.
func estimateStrips(p *cpucv.Plan, budget int64) (int64, bool) {
	rawOf := func(rows int) int64 { return worstRaw(p.W[0], rows) }
	sp, err := planStrips(p, rawOf, false, budget, 0)
	if err != nil {
		return 0, false
	}
	return sp.memory(rawOf(sp.winRows)), true
}

// PreparesStrips marks CVVDP as taking ModeStrip (cuda.StripImpl).
func (impl) PreparesStrips() {}

// Prepare prepares a whole image or, with ModeStrip, strips (stripref.go);
// either is refused as out of memory (before anything is allocated) when
// its memory exceeds the free device memory.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.Mode == zenmetrics.ModeStrip {
		return cuda.Prepared(prepareStrips(ctx, b, ref, opt))
	}
	return cuda.Prepared(prepare(ctx, b, ref, opt))
}
