// Package butteraugli is Butteraugli on WebGPU: the host code that drives
// the wgsl/butteraugli_*.wgsl kernels (butteraugli.go, with the constants
// they are built with in consts.go, and in kernels.go which kernel
// versions are built and why), its strips (strip.go), benchmark and
// per-dispatch profile (bench.go) and host-phase trace (trace.go), written
// on the shared kit of package webgpu.
// Importing it registers the metric with every webgpu.Backend.
package butteraugli

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

func init() { webgpu.Register(zenmetrics.Butteraugli, impl{}) }

// forceKeep, when not nil, forces the strip reference strategy (kept or
// recomputed per Score) instead of the plan's choice; tests set it.
var forceKeep *bool

// impl is Butteraugli's webgpu.MetricImpl.
type impl struct{}

// Estimate is the bytes-per-pixel model (EstimateButteraugli; strips: the
// strip plan's prediction at the band height chosen now), for the worst
// case: RGBA16 with alpha, whose raw upload is the largest binding.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	lim := b.Device().Limits()
	if mode == zenmetrics.ModeStrip {
		if w < bfMinSize || h < bfMinSize {
			return 0, false
		}
		p, err := planButteraugliStrips(w, h, 2, 8, b.Available(), lim.MaxStorageBufferBindingSize, 0)
		if err != nil {
			return 0, false
		}
		return p.bytes, true
	}
	bytes := EstimateButteraugli(w, h)
	if uint64(w)*uint64(h)*8 > lim.MaxStorageBufferBindingSize {
		return bytes, false
	}
	return bytes, true
}

// Prepare prepares a whole image (refused above the VRAM budget) or, with
// ModeStrip, strips. Images under 8 px a side are refused as too small, as
// the cpu backend and the CLIs refuse them: libjxl's comparator leaves the
// map all zeros there, a score of 0 that reads as a perfect match
// (prepareButteraugli itself still computes those zeros, like the
// cpu/butteraugli package, for callers that want the tool's behaviour).
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if ref != nil && ref.Width > 0 && ref.Height > 0 && (ref.Width < bfMinSize || ref.Height < bfMinSize) {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.Butteraugli, Width: ref.Width, Height: ref.Height,
			MinWidth: bfMinSize, MinHeight: bfMinSize}
	}
	if opt.Mode == zenmetrics.ModeStrip {
		if err := ref.Validate(); err != nil {
			return nil, err
		}
		b.RefreshHeld(ctx)
		s, err := prepareButteraugliStrips(ctx, b.Device(), ref, opt, b.Available(), forceKeep)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if b.VRAMBudget() > 0 && ref != nil && ref.Width > 0 && ref.Height > 0 {
		variants := 1
		if ref.Format.HasAlpha() {
			variants = 2
		}
		need := bfEstimate(ref.Width, ref.Height, variants, int64(ref.Width)*int64(ref.Height)*int64(ref.Format.BytesPerPixel()))
		if err := b.CheckBudget(need); err != nil {
			return nil, err
		}
	}
	br, err := prepareButteraugli(ctx, b.Device(), ref, opt)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	br.pipe.enable() // strips score windows of their crops: the plain path
	return br, nil
}
