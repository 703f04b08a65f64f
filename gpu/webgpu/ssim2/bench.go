package ssim2

import (
	"context"
	"fmt"
	"os"
	"strconv"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// FMAMode reports how the SSIMULACRA2 kernels compute fused multiply-adds
// on b's device ("native", "emulated", "inexact"; "" before first use).
func FMAMode(b *webgpu.Backend) string {
	if k := webgpu.CompiledOn[ssim2Kernels](b.Device(), kernelsName); k != nil {
		return k.FMA
	}
	return ""
}

// BytesPerPixel is the model of global-memory traffic per distorted
// pixel of one SSIMULACRA2 score (one alpha pass), counting every load and
// store a kernel issues once (an upper bound: hblur's five quantity threads
// re-read the same two planes, which L2 partly absorbs). Per scale with
// N_s pixels: unpack (scale 0) raw bytes + 6 planes written; downsample
// 3 planes read at the finer scale + 6 written; per channel hblur 5 × 2
// planes read + 5 written, vmaps 7 planes read (the rows it reads again
// 10 rows later come from cache).
func BytesPerPixel(w, h, rawBytesPerPixel int) float64 {
	plan := ssim2Plan(w, h)
	n0 := float64(w) * float64(h)
	total := float64(rawBytesPerPixel)*n0 + 24*n0
	for s, sc := range plan {
		n := float64(sc.W) * float64(sc.H)
		if s > 0 {
			prev := float64(plan[s-1].W) * float64(plan[s-1].H)
			total += 12*prev + 24*n
		}
		total += 3 * (4*(10+5)*n + 4*7*n)
	}
	return total / n0
}

// PassProfile scores dist against a reference prepared by this
// package with every dispatch in its own timed pass, and returns the GPU
// time of each (labels "unpack s0", "downsample s1", "hblur s0 c1",
// "vmaps s2 c0", ..., "reduce"). Nil without TimestampQuery. Timing each
// dispatch separately serialises them, so the sum exceeds a plain score a
// little.
func PassProfile(ctx context.Context, ref zenmetrics.Reference, dist *zenmetrics.Image) ([]webgpu.PassTime, error) {
	r, ok := ref.(*ssim2Ref)
	if !ok {
		return nil, fmt.Errorf("webgpu: ssim2.PassProfile: not a SSIMULACRA2 reference of this backend")
	}
	if err := webgpu.SizeMismatch(r.w, r.h, dist); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	var out []webgpu.PassTime
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		if !g.Timestamps() {
			return nil
		}
		var err error
		out, err = r.run(g, dist, true, nil)
		return err
	})
	return out, err
}

// ssim2Tuning returns the SSIMULACRA2 kernel geometry: vmaps columns per
// workgroup, whether widths that are a multiple of 4 use the 16-byte
// hblur kernel, and the height of vmaps' row bands. The first two leave
// every computed value unchanged (the scores are bit-identical); the band
// height changes only the order in which the per-pixel terms are added
// (the blurred values are the same bits). The environment can override
// them for benchmarking (read once per device, when the kernels are
// compiled): ZENMETRICS_SSIM2_VX = 8, 16 or 32, ZENMETRICS_SSIM2_HBLUR4 =
// 0, ZENMETRICS_SSIM2_BAND = rows (a positive multiple of 20; 0: one band).
func ssim2Tuning() (vx int, hblur4 bool, band int) {
	vx, hblur4, band = ssim2VCols, true, ssim2BandRowsDefault
	switch os.Getenv("ZENMETRICS_SSIM2_VX") {
	case "8":
		vx = 8
	case "16":
		vx = 16
	case "32":
		vx = 32
	}
	if os.Getenv("ZENMETRICS_SSIM2_HBLUR4") == "0" {
		hblur4 = false
	}
	if v, err := strconv.Atoi(os.Getenv("ZENMETRICS_SSIM2_BAND")); err == nil && v >= 0 && v%wgsl.SSIM2ChunkRows == 0 {
		band = v
	}
	return vx, hblur4, band
}
