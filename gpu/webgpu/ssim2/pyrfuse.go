package ssim2

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// The XYB pyramid in one dispatch (ssim2_pyramid.wgsl).
//
// unpack and the five downsamples were six dispatches, each behind Dawn's
// full compute barrier: at 1 MP on an H200 `zmbench -profile` timed them
// at 0.019 + 0.041 ms of a GPU part of ~0.3 ms that is dominated by
// dispatch latency, and each dispatch is also work for Queue.Submit (Dawn
// translates the command list into Vulkan there, on the score's critical
// path). The pyramid kernel computes every scale of a 32 × 32 tile in one
// workgroup, the same values bit for bit (TestSSIM2PyramidFusedExact). It
// writes no linear-RGB planes: only the downsample read them. Banded
// uploads build it band by band, each band's rows of tiles
// (bandwork.go); the legacy band work (ZENMETRICS_SSIM2_BANDWORK=0) keeps
// the separate kernels.

// ssim2PyrEnv selects the fused pyramid kernel, read once:
//
//	unset, 1, on   fused for images of at most ssim2PyrDefaultMax pixels
//	0, off         never (unpack + downsample, as before)
//	all            at every size
//	N (> 1)        for images of at most N pixels
const ssim2PyrEnv = "ZENMETRICS_SSIM2_PYR"

// ssim2PyrDefaultMax is the largest image (pixels) that uses the fused
// pyramid by default: every size. On the H200 it was faster wherever it
// runs (GPU time 1 MP 0.061 → 0.026 ms, 4 MP 0.114 → 0.067 ms; cached 16
// MP with banded uploads off 4.53 → 4.43 ms); banded uploads run it per
// band (bandwork.go). See SSIM2_PERF.md.
const ssim2PyrDefaultMax = 1 << 62

// ssim2PyrMax is the largest image (pixels) that uses the fused pyramid;
// 0: none.
var ssim2PyrMax = parsePyrEnv(os.Getenv(ssim2PyrEnv))

// ssim2PyrOff is set when the environment turned the fused pyramid off:
// the kernel is then not even compiled (tests change ssim2PyrMax alone).
var ssim2PyrOff = ssim2PyrMax == 0

func parsePyrEnv(v string) int64 {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "1", "on":
		return ssim2PyrDefaultMax
	case "0", "off":
		return 0
	case "all":
		return 1 << 62
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 1 {
		return n
	}
	return ssim2PyrDefaultMax
}

// ssim2PyrTile is the side of the scale-0 tile a workgroup takes (16 × 16
// threads, a 2 × 2 block each).
const ssim2PyrTile = 32

// ssim2PyrOut is the pyramid kernel's WGSL prefix: the XYB output
// bindings from binding first on and put_lvl(s, i, v), which stores pixel
// i of scale s at the scale's plane offsets (L[s].base, base1, base2).
// With split, three buffers (one per channel), else one.
func ssim2PyrOut(first int, split bool) string {
	var b strings.Builder
	names := [3]string{"xyb", "xyb", "xyb"}
	if split {
		names = [3]string{"xyb_x", "xyb_y", "xyb_b"}
		for i, n := range names {
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<f32>;\n", first+i, n)
		}
	} else {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> xyb: array<f32>;\n", first)
	}
	fmt.Fprintf(&b, "fn put_lvl(s: u32, i: u32, v: vec3<f32>) {\n  %s[L[s].base + i] = v.x;\n  %s[L[s].base1 + i] = v.y;\n  %s[L[s].base2 + i] = v.z;\n}\n",
		names[0], names[1], names[2])
	return b.String()
}

// compilePyramid compiles the pyramid kernel for split (three-buffer) and
// one-buffer pyramids, unless the environment turned it off. col is
// ssim2_color.wgsl.
func (k *ssim2Kernels) compilePyramid(g *webgpu.GPU, col string, fmaNative float64) error {
	if ssim2PyrOff {
		return nil
	}
	cst := webgpu.Constants{"FMA_NATIVE": fmaNative}
	return webgpu.Compile(g, []webgpu.Kernel{
		{File: "ssim2_pyramid", Entry: "pyramid", Prefix: col + "\n" + ssim2PyrOut(3, true), Constants: cst, Dst: &k.pyramid},
		{File: "ssim2_pyramid", Entry: "pyramid", Prefix: col + "\n" + ssim2PyrOut(3, false), Constants: cst, Dst: &k.pyramid1},
	})
}

// allocPyrTab takes and writes the pyramid kernel's table of scales (WGSL
// L: per scale its dims and plane offsets; L[0].pad1 the scale count).
func (r *ssim2Ref) allocPyrTab(g *webgpu.GPU, t *webgpu.Buffers) {
	if ssim2PyrOff || len(r.plan) == 0 {
		return
	}
	r.pyrTab = t.Uniform(g, 6*ssim2ParamBytes)
	if t.Err != nil {
		return
	}
	var data []byte
	for s := 0; s < 6; s++ {
		p := &ssim2Params{}
		if s < len(r.plan) {
			p = r.pyr.withBases(&ssim2Params{Width: uint32(r.plan[s].W), Height: uint32(r.plan[s].H)}, s)
		}
		if s == 0 {
			p.Pad1 = uint32(len(r.plan))
		}
		data = append(data, p.bytes()...)
	}
	g.Write(r.pyrTab, 0, data)
}

// fusedPyramid says whether r's XYB pyramid is made by the fused kernel
// (else by unpack and the downsamples).
func (r *ssim2Ref) fusedPyramid(k *ssim2Kernels) bool {
	return r.pyrTab != nil && k.pyramid != nil && int64(r.w)*int64(r.h) <= ssim2PyrMax
}

// encodePyramid records the fused pyramid of one pass into out (the XYB
// pyramid buffers) with unpack block u (r.fusedPyramid).
func (r *ssim2Ref) encodePyramid(e *webgpu.Encoder, k *ssim2Kernels, u *webgpu.Buffer, out []*webgpu.Buffer) {
	pl := k.pyramid
	if r.pyr.nb == 1 {
		pl = k.pyramid1
	}
	sc := r.plan[0]
	bufs := append([]*webgpu.Buffer{u, r.up.Raw, r.pyrTab}, r.pyr.xybOut(out)...)
	e.Dispatch(pl, webgpu.Groups(sc.W, ssim2PyrTile), webgpu.Groups(sc.H, ssim2PyrTile), 1, bufs...)
}
