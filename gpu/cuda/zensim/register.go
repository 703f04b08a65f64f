package zensim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

func init() { cuda.Register(zenmetrics.Zensim, impl{}) }

// impl is zensim's cuda.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return 8 * int64(w) * int64(h) }

// Estimate is the full-image model (estimate: exactly the buffers a
// reference and its first scorer take) or, for ModeStrip, the strip plan
// Prepare would pick now (strip.go: within StripHeadroom of the free
// device memory, so that the orchestrator's chooser, which admits a GPU
// rung at 0.85 of the free memory, accepts it), for the worst case,
// RGBA16 uploads; ok is false below zensim's 8×8 minimum, beyond the
// kernels' indexing, and for strips when no plan fits.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < cpuz.MinSize || h < cpuz.MinSize {
		return 0, false
	}
	return b.EstimateMode(mode,
		func() (int64, bool) { return estimate(w, h, worstRaw(w, h)), fits(w, h) },
		func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) })
}

// PreparesStrips marks zensim as taking ModeStrip (cuda.StripImpl).
func (impl) PreparesStrips() {}

// Prepare prepares a whole image or, with ModeStrip, strips (stripref.go);
// either is refused as out of memory (before anything is allocated) when
// its memory exceeds the free device memory.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.Mode == zenmetrics.ModeStrip {
		return cuda.Prepared(prepareStrips(ctx, b, ref, opt))
	}
	return cuda.Prepared(prepare(ctx, b, ref))
}
