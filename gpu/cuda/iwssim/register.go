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
// reference and its first scorer take) for the worst case, RGBA16
// uploads. Only ModeFull: strips (gpu/webgpu/iwssim) are not implemented
// on CUDA. Below piq's minimum (161×161) there is no score, nor an
// estimate.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < minSide || h < minSide || mode != zenmetrics.ModeFull {
		return 0, false
	}
	return estimate(w, h, worstRaw(w, h)), fits(w, h)
}

// Prepare prepares a whole image; it is refused as out of memory (before
// anything is allocated, and before the CPU does the reference's half)
// when the estimate exceeds the free device memory. Options do not apply
// (IW-SSIM has no distance map), as on the CPU and WebGPU.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, _ zenmetrics.Options) (zenmetrics.Reference, error) {
	r, err := prepare(ctx, b, ref)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return r, nil
}
