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

// Estimate is the full-image model (estimate) for the worst case: a
// reference with real transparency (two pyramids) and RGBA16 uploads.
// Strips are not implemented on CUDA yet.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < minSide || h < minSide || mode != zenmetrics.ModeFull {
		return 0, false
	}
	return estimate(w, h, 2, int64(w)*int64(h)*8), true
}

// Prepare prepares a whole image; it is refused as out of memory (before
// anything is allocated) when the estimate exceeds the free device memory.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.DistMap {
		return nil, fmt.Errorf("%w: distance map for %v on %s", zenmetrics.ErrUnsupported, zenmetrics.SSIMULACRA2, b.Name())
	}
	r, err := prepare(ctx, b, ref)
	if err != nil {
		return nil, err
	}
	return r, nil
}
