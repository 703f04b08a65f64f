package butteraugli

import (
	"fmt"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// One version of each kernel, but for the Malta pair, which has a fallback,
// and the blurs, whose old kernels stay selectable for A/B runs (lf.go,
// ZENMETRICS_BA_LF; blur.go, ZENMETRICS_BA_BLUR).
//
// Issue #23 tried a second generation of the opsin, blur (HF, UHF, mask,
// MF) and Malta kernels in the structure of gpu/cuda/butteraugli: several
// outputs per thread, shared loads made once, larger blocks. On an H200 at
// 16 MP (per-dispatch GPU time, ms, one output per thread -> several; from
// zmbench -metric butteraugli -profile) only Malta won: malta_x 1.005 ->
// 0.923, malta_y 0.997 -> 0.956. The others lost: opsin 0.428 -> 0.544,
// HF rows 0.620 -> 0.646, MF columns 0.542 -> 0.829, UHF rows and columns
// 0.279 and 0.272 -> 0.294 and 0.316, mask rows 0.195 -> 0.202 (only the
// mask columns gained, 0.193 -> 0.161). A cached 16 MP score took 9.82 and
// 10.05 ms with the old kernels, 10.19 and 10.12 with all new ones and 9.62
// with only Malta new. So opsin stayed the one-output-per-thread kernel on
// 16×16 blocks, and Malta is the column kernel pair
// (butteraugli_malta_cols.wgsl: 32×8 threads, 4 rows each, 32×32 output
// blocks). The blurs stayed one output per thread on 64×4 (rows) and 32×8
// (columns) blocks until the vec4 kernels of blur.go, which keep their
// tiles in vec4 words and their sums in registers, beat them on LF.
//
// The column Malta kernels need bfMaltaBytes = 19,200 bytes of workgroup
// memory, more than WebGPU's default maxComputeWorkgroupStorageSize (16
// KiB). A device that offers less runs the same kernels on 16×16 threads,
// one row each (6,912 bytes): every output is the same WGSL functions in
// the same order, only the blocks differ, so the maps are the same bits
// (TestButteraugliKernels checks it, and both against the CPU).

// Geometry of the column Malta kernels (the host hands it to the shaders
// as `const` declarations, so that their function-scope arrays can be
// sized by it).
const (
	bfMaltaW, bfMaltaH, bfMaltaR = 32, 8, 4 // threads x, y; rows per thread
)

// bfMaltaTile declares the Malta tile (butteraugli_malta.wgsl): blocks of
// bw×bh outputs with the 4-pixel halo, three planes.
func bfMaltaTile(bw, bh int) string {
	tw, th := bw+8, bh+8
	return fmt.Sprintf("const MT = %du;\nconst MT_N = %du;\nvar<workgroup> mt: array<f32, %d>;\n", tw, tw*th, 3*tw*th)
}

// bfMaltaBytes is the workgroup memory of the column Malta kernels.
const bfMaltaBytes = 4 * 3 * (bfMaltaW + 8) * (bfMaltaH*bfMaltaR + 8)

// bfForceMalta16, set by tests, compiles the 16×16 Malta fallback for
// references prepared from now on even where the column kernels fit.
var bfForceMalta16 bool

// kernels returns the device's Butteraugli kernels, compiling them the
// first time (device thread): with the column Malta kernels where the
// device's workgroup memory holds them, else with the 16×16 ones
// (k.malta16 says which).
func kernels(g *webgpu.GPU) (*bfKernels, error) {
	malta16 := bfForceMalta16 || uint64(bfMaltaBytes) > uint64(g.Limits().MaxComputeWorkgroupStorageSize)
	lf, blur := bfLFKnob.variant(), bfBlurKnob.variant()
	name := "butteraugli/lf=" + lf + "/blur=" + blur
	if malta16 {
		name += "/malta16"
	}
	return webgpu.Compiled(g, name, func(g *webgpu.GPU) (*bfKernels, error) {
		bfLFKnob.report("LF pair", lf)
		bfBlurKnob.report("HF, UHF and masking blurs", blur)
		return compileButteraugli(g, malta16, lf, blur)
	})
}
