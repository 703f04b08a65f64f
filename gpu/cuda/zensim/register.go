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
// reference and its first scorer take) for the worst case, RGBA16
// uploads; ok is false below zensim's 8×8 minimum and beyond the kernels'
// indexing. Only ModeFull: strips (gpu/webgpu/zensim/plan.go) are not
// implemented on CUDA.
func (impl) Estimate(b *cuda.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < cpuz.MinSize || h < cpuz.MinSize || mode != zenmetrics.ModeFull {
		return 0, false
	}
	return estimate(w, h, worstRaw(w, h)), fits(w, h)
}

// Prepare prepares a whole image; it is refused as out of memory (before
// anything is allocated) when the estimate exceeds the free device memory.
func (impl) Prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	r, err := prepare(ctx, b, ref)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return r, nil
}
