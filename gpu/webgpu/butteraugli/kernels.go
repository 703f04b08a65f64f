package butteraugli

import (
	"fmt"
	"os"
	"strings"

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
// "malta", "opsin" or "blur" for that family only (or several joined by
// "+"), anything else (unset) for every new family.

// bfGen says which kernel families use the second generation.
type bfGen struct {
	malta bool // malta_x_v2, malta_y_v2: 32×8 threads, 4 rows each
	opsin bool // opsin_v2: 32×8 threads, 2 rows each
	blur  bool // rows_v2, cols_*_v2 of the HF, UHF, mask and MF blurs
}

// bfGenAll is every family new (the default).
var bfGenAll = bfGen{malta: true, opsin: true, blur: true}

// String is the switch's value for n: "0", "all", or the new families
// joined by "+" ("malta", "malta+blur").
func (n bfGen) String() string {
	switch n {
	case bfGen{}:
		return "0"
	case bfGenAll:
		return "all"
	}
	var parts []string
	for _, f := range []struct {
		on   bool
		name string
	}{{n.malta, "malta"}, {n.opsin, "opsin"}, {n.blur, "blur"}} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, "+")
}

// bfGenEnv is the generation ZENMETRICS_WEBGPU_BA_NEW asks for: "0" old
// kernels only; "malta", "opsin", "blur" or several joined by "+" or ","
// ("malta+blur") those families new; unset, "all" or anything else every
// family new.
func bfGenEnv() bfGen {
	v := os.Getenv("ZENMETRICS_WEBGPU_BA_NEW")
	if v == "0" {
		return bfGen{}
	}
	var n bfGen
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == '+' || r == ',' }) {
		switch strings.TrimSpace(f) {
		case "malta":
			n.malta = true
		case "opsin":
			n.opsin = true
		case "blur":
			n.blur = true
		default:
			return bfGenAll
		}
	}
	if n == (bfGen{}) {
		return bfGenAll
	}
	return n
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

// bfOpsinV2Bytes is the workgroup memory of opsin_v2: 720 + 640 vec3
// (16 bytes each in workgroup memory).
const bfOpsinV2Bytes = 16 * (720 + 640)

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
	if bfOpsinV2Bytes > uint64(lim) {
		want.opsin = false
	}
	return webgpu.Compiled(g, "butteraugli/"+want.String(), func(g *webgpu.GPU) (*bfKernels, error) {
		return compileButteraugli(g, want)
	})
}
