package butteraugli

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

func init() { cuda.Register(zenmetrics.Butteraugli, impl{}) }

// impl is Butteraugli's cuda.MetricImpl.
type impl struct{}

// Estimate is the full-image model (estimate) or, for ModeStrip, the
// strip plan Prepare would pick now (strip.go: within StripHeadroom of
// the free device memory), for the worst case: a reference with alpha
// (two backgrounds) and RGBA16 uploads. Images under 8 px a side are
// refused as too small.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < minSize || h < minSize {
		return 0, false
	}
	return b.EstimateMode(mode,
		func() (int64, bool) { return estimate(w, h, 2, 8*int64(w)*int64(h)), true },
		func(budget int64) (int64, bool) { return estimateStrips(w, h, budget) })
}

// PreparesStrips marks Butteraugli as taking ModeStrip (cuda.StripImpl).
func (impl) PreparesStrips() {}

// Prepare prepares a whole image or, with ModeStrip, strips (strip.go);
// either is refused as out of memory (before anything is allocated) when
// its memory exceeds the free device memory.
// Images under 8 px a side are refused as too small, as the other
// backends and the CLIs refuse them: libjxl's comparator leaves the map
// all zeros there, a score of 0 that reads as a perfect match.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if ref != nil && ref.Width > 0 && ref.Height > 0 && (ref.Width < minSize || ref.Height < minSize) {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.Butteraugli, Width: ref.Width, Height: ref.Height,
			MinWidth: minSize, MinHeight: minSize}
	}
	if opt.Mode == zenmetrics.ModeStrip {
		return cuda.Prepared(prepareStrips(ctx, b, ref, opt))
	}
	return cuda.Prepared(prepare(ctx, b, ref, opt))
}
