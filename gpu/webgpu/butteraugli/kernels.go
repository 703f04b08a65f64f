package butteraugli

import (
	"fmt"
	"os"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Two generations of some kernel families (issue #23). The first computes
// one output per thread on 16×16 (Malta) or 64×4 / 32×8 (blurs) blocks;
// the second is the structure of gpu/cuda/butteraugli's
// butteraugli_fast.cu: several outputs per thread, the loads a thread's
// outputs share made once, larger blocks and so less halo. Each new
// kernel computes every output with the same WGSL functions, hence the
// same f32 operations in the same order, as the kernel it replaces (the
// tests check the maps bit for bit); only which thread computes what, the
// tiles and the dispatch geometry differ. Both are kept so that one binary
// can time them against each other: ZENMETRICS_WEBGPU_BA_NEW (read when a
// device first compiles the kernels) is "0" for the old kernels only,
// "malta" or "blur" for that family only, anything else (unset) for every
// new family.

// bfGen says which kernel families use the second generation.
type bfGen struct {
	malta bool // malta_x_v2, malta_y_v2: 32×8 threads, 4 rows each
	blur  bool // rows_v2, cols_*_v2 of the HF, UHF, mask and MF blurs
}

func (n bfGen) String() string {
	switch n {
	case bfGen{}:
		return "0"
	case bfGen{malta: true}:
		return "malta"
	case bfGen{blur: true}:
		return "blur"
	}
	return "all"
}

// bfGenEnv is the generation ZENMETRICS_WEBGPU_BA_NEW asks for.
func bfGenEnv() bfGen {
	switch os.Getenv("ZENMETRICS_WEBGPU_BA_NEW") {
	case "0":
		return bfGen{}
	case "malta":
		return bfGen{malta: true}
	case "blur":
		return bfGen{blur: true}
	}
	return bfGen{malta: true, blur: true}
}

// bfGenOverride, when not nil, replaces the environment's choice for
// references prepared from now on (tests compare every variant).
var bfGenOverride *bfGen

// Geometry of the second generation (the host hands it to the shaders as
// `const` declarations, so that their function-scope arrays can be sized
// by it).
const (
	bfMaltaW, bfMaltaH, bfMaltaR = 32, 8, 4 // Malta: threads x, y; rows per thread
)

// bfMaltaTile declares the Malta tile (butteraugli_malta.wgsl): blocks of
// bw×bh outputs with the 4-pixel halo, three planes.
func bfMaltaTile(bw, bh int) string {
	tw, th := bw+8, bh+8
	return fmt.Sprintf("const MT = %du;\nconst MT_N = %du;\nvar<workgroup> mt: array<f32, %d>;\n", tw, tw*th, 3*tw*th)
}

// bfMaltaV2Bytes is the workgroup memory of the second-generation Malta
// kernels.
const bfMaltaV2Bytes = 4 * 3 * (bfMaltaW + 8) * (bfMaltaH*bfMaltaR + 8)

// kernels returns the device's Butteraugli kernels of the generation the
// environment (or a test) asks for, compiling them the first time (device
// thread). A family whose workgroup memory exceeds the device's limit
// stays on the first generation (k.gen says what was compiled).
func kernels(g *webgpu.GPU) (*bfKernels, error) {
	want := bfGenEnv()
	if bfGenOverride != nil {
		want = *bfGenOverride
	}
	lim := g.Limits().MaxComputeWorkgroupStorageSize
	if uint64(bfMaltaV2Bytes) > uint64(lim) {
		want.malta = false
	}
	if uint64(bfBlurV2MaxBytes()) > uint64(lim) {
		want.blur = false
	}
	return webgpu.Compiled(g, "butteraugli/"+want.String(), func(g *webgpu.GPU) (*bfKernels, error) {
		return compileButteraugli(g, want)
	})
}
