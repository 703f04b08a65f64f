package ssim2

import (
	"context"
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

func init() { cuda.Register(zenmetrics.SSIMULACRA2, impl{}) }

// impl is SSIMULACRA2's cuda.MetricImpl.
type impl struct{}

// Estimate is the full-image model (estimate) or, for ModeStrip, the
// strip plan Prepare would pick now (strip.go: within StripHeadroom of the
// free device memory), for the worst case: a reference with real
// transparency (two pyramids) and RGBA16 uploads.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < minSide || h < minSide {
		return 0, false
	}
	return b.EstimateMode(mode,
		func() (int64, bool) { return estimate(w, h, 2, int64(w)*int64(h)*8), true },
		func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) })
}

// PreparesStrips marks SSIMULACRA2 as taking ModeStrip (cuda.StripImpl).
func (impl) PreparesStrips() {}

// Prepare prepares a whole image or, with ModeStrip, strips (strip.go);
// either is refused as out of memory (before anything is allocated) when
// its memory exceeds the free device memory.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.DistMap {
		return nil, fmt.Errorf("%w: distance map for %v on %s", zenmetrics.ErrUnsupported, zenmetrics.SSIMULACRA2, b.Name())
	}
	if opt.Mode == zenmetrics.ModeStrip {
		return cuda.Prepared(prepareStrips(ctx, b, ref, opt))
	}
	return cuda.Prepared(prepare(ctx, b, ref))
}
