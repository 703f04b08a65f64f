package iwssim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

func init() { cuda.Register(zenmetrics.IWSSIM, impl{}) }

// impl is IW-SSIM's cuda.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return 8 * int64(w) * int64(h) }

// Estimate is the full-image model (estimate: exactly the buffers a
// reference and its first scorer take) or, for ModeStrip, the strip plan
// Prepare would pick now (strip.go: within StripHeadroom of the free
// device memory), for the worst case, RGBA16 uploads. Below piq's minimum
// (161×161) there is no score, nor an estimate.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < minSide || h < minSide {
		return 0, false
	}
	return b.EstimateMode(mode,
		func() (int64, bool) { return estimate(w, h, worstRaw(w, h)), fits(w, h) },
		func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) })
}

// estimateStrips is the memory of the strip plan of a w×h RGBA16 image
// within budget, and whether there is one.
func estimateStrips(w, h int, budget int64) (int64, bool) {
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	p, err := planStrips(w, h, rawOf, budget, 0)
	if err != nil {
		return 0, false
	}
	return p.memory(rawOf(p.rows)), true
}

// PreparesStrips marks IW-SSIM as taking ModeStrip (cuda.StripImpl).
func (impl) PreparesStrips() {}

// Prepare prepares a whole image or, with ModeStrip, strips (stripref.go);
// either is refused as out of memory (before anything is allocated) when
// its memory exceeds the free device memory, or, for strips, when no plan
// fits within StripHeadroom of it. Options other than the mode and strip
// height do not apply (IW-SSIM has no distance map), as on the CPU and
// WebGPU.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.Mode == zenmetrics.ModeStrip {
		return cuda.Prepared(prepareStrips(ctx, b, ref, opt))
	}
	return cuda.Prepared(prepare(ctx, b, ref))
}
