// Package ssim2 is SSIMULACRA2 on WebGPU: the host code that drives the
// wgsl/ssim2_*.wgsl kernels (ssim2.go), its pipelined uploads (pipe.go),
// strips (strip.go, halo.go) and benchmark helpers (bench.go), written on
// the shared kit of package webgpu. Importing it registers the metric
// with every webgpu.Backend; SSIM2_PERF.md records how the kernels were
// tuned.
package ssim2

import (
	"context"
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

func init() { webgpu.Register(zenmetrics.SSIMULACRA2, impl{}) }

// forceKeep, when not nil, forces the strip reference strategy (kept or
// recomputed per Score) instead of the plan's choice; tests set it.
var forceKeep *bool

// impl is SSIMULACRA2's webgpu.MetricImpl.
type impl struct{}

// Estimate is the bytes-per-pixel model (ssim2Estimate; strips: the strip
// plan's prediction at the band height chosen now), for the worst case:
// RGBA16 with alpha (two passes, 8 bytes per pixel uploaded).
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < ssim2MinSide || h < ssim2MinSide {
		return 0, false
	}
	lim := b.Device().Limits()
	if mode == zenmetrics.ModeStrip {
		p, err := planSSIM2Strips(w, h, 2, 8, b.Available(), lim.MaxStorageBufferBindingSize, 0)
		if err != nil {
			return 0, false
		}
		return p.bytes, true
	}
	bytes := ssim2Estimate(w, h, 2, w*h*8)
	if ssim2BindingBytes(w, h) > min(lim.MaxStorageBufferBindingSize, lim.MaxBufferSize) || uint64(w)*uint64(h)*8 > lim.MaxBufferSize {
		return bytes, false
	}
	return bytes, true
}

// Prepare prepares a whole image (refused above the VRAM budget, or when a
// plane exceeds the binding limit) or, with ModeStrip, strips.
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.Mode == zenmetrics.ModeStrip {
		if err := ssim2Check(ref); err != nil {
			return nil, err
		}
		b.RefreshHeld(ctx)
		s, err := prepareSSIM2Strips(ctx, b, ref, opt, b.Available(), forceKeep)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if b.VRAMBudget() > 0 && ref != nil && ref.Width > 0 && ref.Height > 0 {
		passes := len(ssim2Bgs(ref))
		if err := b.CheckBudget(ssim2Estimate(ref.Width, ref.Height, passes, ref.Width*ref.Height*ref.Format.BytesPerPixel())); err != nil {
			return nil, err
		}
	}
	if opt.DistMap {
		return nil, fmt.Errorf("%w: distance map for %v on %s", zenmetrics.ErrUnsupported, zenmetrics.SSIMULACRA2, b.Name())
	}
	if err := ssim2Check(ref); err != nil {
		return nil, err
	}
	if need := ssim2BindingBytes(ref.Width, ref.Height); need > b.Device().Limits().MaxStorageBufferBindingSize {
		return nil, &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: int64(need),
			Free: -1, Detail: "a channel's pyramid exceeds maxStorageBufferBindingSize"}
	}
	s, err := prepareSSIM2(ctx, b, ref, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}
