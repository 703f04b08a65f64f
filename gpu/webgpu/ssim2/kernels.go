package ssim2

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// probeFMA runs ssim2_fmaprobe.wgsl: a = b = 1 + 2^-12, c = -(1 + 2^-11),
// so a * b + c = 2^-24 when fused and 0 when the product is rounded first.
func probeFMA(g *webgpu.GPU, color string) (native, emulated bool, err error) {
	src, err := wgsl.Source("ssim2_fmaprobe")
	if err != nil {
		return false, false, err
	}
	return webgpu.ProbeFMA(g, "ssim2_fmaprobe", color+"\n"+src)
}

// compileHBlur4t compiles hblur4t, with its outputs staged in workgroup
// memory (32-column tiles) when out is set, else stored by the walkers
// (64-column tiles). It needs no optional feature (no subgroup
// operations): 16 KiB of workgroup memory, WebGPU's default limit, or 28
// KiB with out. Where the device has less it compiles the variant without
// out, and returns nil where it has less than that (hblur4 stays).
func (k *ssim2Kernels) compileHBlur4t(g *webgpu.GPU, out bool) (*webgpu.Pipeline, error) {
	blk, vec4s := 16, 2*ssim2HTRows*16
	if out {
		blk = 8
		vec4s = 7 * ssim2HTRows * blk
	}
	lim := int(g.Limits().MaxComputeWorkgroupStorageSize)
	if 16*vec4s > lim {
		if out {
			return k.compileHBlur4t(g, false)
		}
		return nil, nil
	}
	shared, err := webgpu.Sources("ssim2_color", "ssim2_iir")
	if err != nil {
		return nil, err
	}
	fmaNative, htOut := 1.0, 0.0
	if k.FMA == "emulated" {
		fmaNative = 0
	}
	if out {
		htOut = 1
	}
	var pl *webgpu.Pipeline
	err = webgpu.Compile(g, []webgpu.Kernel{{File: "ssim2_hblur4", Entry: "hblur4t", Prefix: shared[0] + "\n" + shared[1] + "\n",
		Constants: webgpu.Constants{"HT_ROWS": ssim2HTRows, "HT_BLK": float64(blk), "HT_OUT": htOut, "FMA_NATIVE": fmaNative}, Dst: &pl}})
	return pl, err
}
