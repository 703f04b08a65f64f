package butteraugli

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// The LF blur pair (33 taps: rowsLF three times, then colLF) in several
// versions, to be timed against each other on the H200 (issue #23: the
// pair took 1.00 + 1.24 ms a 16 MP score there, CUDA's port of the same
// kernels 0.53 + 0.62 ms). Every version computes each output with the
// float operations of butteraugli_fir.wgsl in its order (pairs of taps
// into four partial sums, centre first in the final sum; the cut-off and
// renormalised sum near the borders), so all give the same bits
// (TestButteraugliLFVariants compares them). They differ in how the
// samples reach the arithmetic:
//
//	old     butteraugli_rows.wgsl (64×4 threads) and butteraugli_col_lf.wgsl
//	        (32×8 threads, the three planes' tiles side by side, 15 KiB):
//	        one output per thread, the taps in a loop over the override OFF,
//	        read from the uniform with a computed index
//	unroll  the same kernels and tiles with the interior sum written out
//	        (bfFIRUnrolled): constant tile offsets and constant tap indices,
//	        nothing left for the driver's compiler to unroll
//	new     (default) butteraugli_rows_lf4.wgsl: 64×4 threads, 4 outputs
//	        each, the tile in vec4 (16-byte) words, a thread's 36 samples
//	        read as 9 words and summed from registers (9 workgroup loads for
//	        4 outputs instead of 132); butteraugli_col_lf4.wgsl: 8×32
//	        threads, 4 columns each, one plane's 64-row tile at a time
//	        (8 KiB), each tap one vec4 load and vec4 arithmetic (lane-wise
//	        the scalar operations); 2 halo rows per output row instead of 5
//	newst   new whose row kernel stages its outputs back through the tile
//	        (two more barriers) so that a warp stores 32 consecutive
//	        pixels, not 4 each at 16-byte steps (staged outputs won for
//	        ssim2's hblur4t)
//	new3    new with the three planes' column tiles side by side (24 KiB,
//	        one barrier instead of five; new where the device allows less)
//	new4    new whose planes are bound as arrays of vec4 where the width
//	        is a multiple of 4 (both levels of 4096², not of odd sizes):
//	        every global load and store 16 bytes, a thread's 4 outputs one
//	        store (16-byte accesses helped ssim2's hblur on the H200)
//	new34   new3 (column tiles side by side) with new4's global accesses
//	new16   new with 16×16 threads in both: 64-column row tiles and 64×16
//	        column blocks (12 KiB)
//
// "R,C" (e.g. "new16,new3") combines version R's row kernel with version
// C's column kernel: zmbench -profile times rowsLF and colLF apart, so
// the fastest of each can be picked and then checked together.
//
// Robustness clamps every workgroup-array index Tint emits: a vec4 word
// costs one clamp for four samples, and a constant offset lets the
// driver fold the address arithmetic where no clamp sits in between.
const bfLFMode = "ZENMETRICS_BA_LF"

// bfLFEnv is ZENMETRICS_BA_LF, read once.
var bfLFEnv = sync.OnceValue(func() string { return os.Getenv(bfLFMode) })

// bfLFForce, set by tests, overrides the environment for kernels compiled
// from now on.
var bfLFForce string

// bfLFVariants are the versions ZENMETRICS_BA_LF names ("" and unknown
// names mean "new"; bfLFSplit reads "R,C").
var bfLFVariants = []string{"old", "unroll", "new", "newst", "new3", "new16", "new4", "new34"}

// bfLFGeom is one version's workgroup shapes: the row kernel's threads
// (rx×ry, rv outputs each along x) and the column kernel's (cx×cy, cv
// outputs each along x; cq planes held at once).
type bfLFGeom struct {
	rx, ry, rv     int
	cx, cy, cv, cq int
	vec            bool // the vec4 kernels (butteraugli_*_lf4.wgsl)
	stage          bool // vec: the row kernel stages its outputs (RST)
	g4             bool // vec: 16-byte global accesses where w % 4 == 0
	unroll         bool // the scalar kernels with bfFIRUnrolled
}

func bfLFGeomOf(v string) bfLFGeom {
	switch v {
	case "old":
		return bfLFGeom{rx: bfRowTX, ry: bfRowTY, rv: 1, cx: bfColTX, cy: bfColTY, cv: 1, cq: 3}
	case "unroll":
		return bfLFGeom{rx: bfRowTX, ry: bfRowTY, rv: 1, cx: bfColTX, cy: bfColTY, cv: 1, cq: 3, unroll: true}
	case "new3":
		return bfLFGeom{rx: 64, ry: 4, rv: 4, cx: 8, cy: 32, cv: 4, cq: 3, vec: true}
	case "newst":
		return bfLFGeom{rx: 64, ry: 4, rv: 4, cx: 8, cy: 32, cv: 4, cq: 1, vec: true, stage: true}
	case "new4":
		return bfLFGeom{rx: 64, ry: 4, rv: 4, cx: 8, cy: 32, cv: 4, cq: 1, vec: true, g4: true}
	case "new34":
		return bfLFGeom{rx: 64, ry: 4, rv: 4, cx: 8, cy: 32, cv: 4, cq: 3, vec: true, g4: true}
	case "new16":
		return bfLFGeom{rx: 16, ry: 16, rv: 4, cx: 16, cy: 16, cv: 4, cq: 1, vec: true}
	default:
		return bfLFGeom{rx: 64, ry: 4, rv: 4, cx: 8, cy: 32, cv: 4, cq: 1, vec: true}
	}
}

// colBytes is the workgroup memory of the vec4 column kernel.
func (q bfLFGeom) colBytes() int { return 16 * q.cq * q.cx * (q.cy + 2*bfKernLF.off) }

// bfLFSplit is a version's row and column halves: "R,C" takes the row
// kernel of version R and the column kernel of version C (so that the
// fastest of each can be combined), a single name both of one version.
// Unknown names mean new.
func bfLFSplit(v string) (string, string) {
	r, c, ok := strings.Cut(v, ",")
	if !ok {
		c = r
	}
	norm := func(n string) string {
		for _, k := range bfLFVariants {
			if n == k {
				return n
			}
		}
		return "new"
	}
	return norm(r), norm(c)
}

// bfLFVariant is the version to compile on g: the forced or configured
// one, normalised ("R,C" with R = C written once), with a column kernel
// whose tiles do not fit the device's workgroup memory replaced by new's.
func bfLFVariant(g *webgpu.GPU) string {
	v := bfLFForce
	if v == "" {
		v = bfLFEnv()
	}
	r, c := bfLFSplit(v)
	if q := bfLFGeomOf(c); q.vec && uint64(q.colBytes()) > uint64(g.Limits().MaxComputeWorkgroupStorageSize) {
		c = "new"
		if q.g4 {
			c = "new4"
		}
	}
	if r == c {
		return r
	}
	return r + "," + c
}

// bfLF is a compiled LF pair and its dispatch geometry (outputs per
// workgroup along x and y).
type bfLF struct {
	variant  string
	rows     *webgpu.Pipeline
	cols     *webgpu.Pipeline
	rbx, rby int
	cbx, cby int
	// rows4, cols4 replace rows, cols for widths that are a multiple of 4
	// (nil: none).
	rows4, cols4 *webgpu.Pipeline
}

// lfKernels returns version v (bfLFVariant's form) of the LF pair and the
// kernels that fill it in (compiled with the others, side by side); base
// is the prelude and the common declarations, fir butteraugli_fir.wgsl.
func lfKernels(v, base, fir string) (*bfLF, []webgpu.Kernel, error) {
	rn, cn := bfLFSplit(v)
	qr, qc := bfLFGeomOf(rn), bfLFGeomOf(cn)
	lf := &bfLF{variant: v, rbx: qr.rx * qr.rv, rby: qr.ry, cbx: qc.cx * qc.cv, cby: qc.cy}
	off := bfKernLF.off
	if (qr.vec || qc.vec) && off != 16 {
		// butteraugli_rows_lf4.wgsl passes lf_row4 its 9 words.
		return nil, nil, fmt.Errorf("butteraugli LF pair %q: written for a radius of 16, not %d", v, off)
	}
	geo := fmt.Sprintf("const LOFF: i32 = %d;\nconst RTX = %du;\nconst RTY = %du;\nconst RV = %du;\nconst RST = %v;\n"+
		"const CTX = %du;\nconst CTY = %du;\nconst CQ = %du;\nconst CR = %du;\nconst CPL = %du;\n",
		off, qr.rx, qr.ry, qr.rx+off/2, qr.stage, qc.cx, qc.cy, qc.cq, qc.cy+2*off, qc.cx*(qc.cy+2*off))
	// The scalar kernels' fir; for unroll the loop version becomes the
	// border path of a fir whose interior sum is written out.
	firOf := func(q bfLFGeom) string {
		if q.unroll {
			return strings.Replace(fir, "fn fir(", "fn fir_loop(", 1) + bfFIRUnrolled(bfKernLF)
		}
		return fir
	}
	io, err := webgpu.Sources("butteraugli_rows_lf4_s", "butteraugli_rows_lf4_v", "butteraugli_col_lf4_s", "butteraugli_col_lf4_v")
	if err != nil {
		return nil, nil, err
	}
	rowPre, colPre := base+geo+bfFIRRow4(bfKernLF), base+geo+bfFIRCol4(bfKernLF)
	rows := webgpu.Kernel{File: "butteraugli_rows_lf4", Entry: "rows", Prefix: rowPre + io[0], Dst: &lf.rows}
	if !qr.vec {
		rows = webgpu.Kernel{File: "butteraugli_rows", Entry: "rows", Prefix: base + firOf(qr), Dst: &lf.rows,
			Constants: webgpu.Constants{"OFF": float64(off), "TX": float64(qr.rx), "TY": float64(qr.ry),
				"TILE_N": float64(qr.ry * (qr.rx + 2*off))}}
	}
	cols := webgpu.Kernel{File: "butteraugli_col_lf4", Entry: "cols", Prefix: colPre + io[2], Dst: &lf.cols}
	if !qc.vec {
		cols = webgpu.Kernel{File: "butteraugli_col_lf", Entry: "cols", Prefix: base + firOf(qc), Dst: &lf.cols,
			Constants: webgpu.Constants{"OFF": float64(off), "TX": float64(qc.cx), "TY": float64(qc.cy),
				"TILE_N": float64(3 * qc.cx * (qc.cy + 2*off))}}
	}
	ks := []webgpu.Kernel{rows, cols}
	if qr.g4 {
		ks = append(ks, webgpu.Kernel{File: "butteraugli_rows_lf4", Entry: "rows", Prefix: rowPre + io[1], Dst: &lf.rows4})
	}
	if qc.g4 {
		ks = append(ks, webgpu.Kernel{File: "butteraugli_col_lf4", Entry: "cols", Prefix: colPre + io[3], Dst: &lf.cols4})
	}
	return lf, ks, nil
}

// bfFIRTerm is one pair term of the interior sum: accumulator acc gets
// (s[p-d] + s[p+d]) * half[tap].
type bfFIRTerm struct{ acc, d, tap int }

// bfFIRTerms lists the interior sum's pair terms in fir's order
// (butteraugli_fir.wgsl: pair i into sum i mod 4, outermost first).
func bfFIRTerms(off int) []bfFIRTerm {
	var ts []bfFIRTerm
	for i := 0; i < off; i += 4 {
		for a := 0; a < 4 && i+a < off; a++ {
			ts = append(ts, bfFIRTerm{acc: a, d: off - i - a, tap: i + a})
		}
	}
	return ts
}

// bfHalf is the WGSL expression of normalised tap i (a constant index
// into the Kernel uniform).
func bfHalf(i int) string { return fmt.Sprintf("K.half[%d][%d]", i/4, i%4) }

// bfFIRUnrolled is fir (butteraugli_fir.wgsl) for kernel k with the
// interior sum written out; the border path is fir_loop, the original.
func bfFIRUnrolled(k bfKernel) string {
	var b strings.Builder
	b.WriteString("\n// Generated by gpu/webgpu/butteraugli/lf.go: fir with the interior sum written out.\n")
	fmt.Fprintf(&b, "fn fir(c: u32, st: u32, p: i32, n: i32) -> f32 {\n  if (p >= %d && p < n - %d) {\n", k.off, k.off)
	b.WriteString("    var a0 = 0.0;\n    var a1 = 0.0;\n    var a2 = 0.0;\n    var a3 = 0.0;\n")
	for _, t := range bfFIRTerms(k.off) {
		fmt.Fprintf(&b, "    a%d = a%d + (tile[c - %du * st] + tile[c + %du * st]) * %s;\n", t.acc, t.acc, t.d, t.d, bfHalf(t.tap))
	}
	fmt.Fprintf(&b, "    return tile[c] * %s + a0 + a1 + a2 + a3;\n  }\n  return fir_loop(c, st, p, n);\n}\n", bfHalf(k.off))
	return b.String()
}

// bfFIRRow4 is lf_row4: the interior sums of 4 consecutive outputs from
// the 2·off+4 samples around them, given as (2·off+4)/4 vec4 words (word
// m holds samples 4m..4m+3; output j is centred on sample off+j).
func bfFIRRow4(k bfKernel) string {
	nw := (2*k.off + 4) / 4
	var b strings.Builder
	b.WriteString("\n// Generated by gpu/webgpu/butteraugli/lf.go: 4 interior row outputs from registers.\nfn lf_row4(")
	for m := 0; m < nw; m++ {
		if m > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "w%d: vec4<f32>", m)
	}
	b.WriteString(") -> vec4<f32> {\n")
	s := func(i int) string { return fmt.Sprintf("w%d.%c", i/4, "xyzw"[i%4]) }
	for j := 0; j < 4; j++ {
		for a := 0; a < 4; a++ {
			fmt.Fprintf(&b, "  var a%d_%d = 0.0;\n", j, a)
		}
		c := k.off + j
		for _, t := range bfFIRTerms(k.off) {
			fmt.Fprintf(&b, "  a%d_%d = a%d_%d + (%s + %s) * %s;\n", j, t.acc, j, t.acc, s(c-t.d), s(c+t.d), bfHalf(t.tap))
		}
		fmt.Fprintf(&b, "  let r%d = %s * %s + a%d_0 + a%d_1 + a%d_2 + a%d_3;\n", j, s(c), bfHalf(k.off), j, j, j, j)
	}
	b.WriteString("  return vec4<f32>(r0, r1, r2, r3);\n}\n")
	return b.String()
}

// bfFIRCol4 is lf_col4: the interior sums of the 4 columns of tile word c
// (butteraugli_col_lf4.wgsl's ct, CTX words a row), in vec4 arithmetic.
func bfFIRCol4(k bfKernel) string {
	var b strings.Builder
	b.WriteString("\n// Generated by gpu/webgpu/butteraugli/lf.go: 4 interior column outputs, lane-wise.\n")
	b.WriteString("fn lf_col4(c: u32) -> vec4<f32> {\n")
	for a := 0; a < 4; a++ {
		fmt.Fprintf(&b, "  var a%d = vec4<f32>(0.0);\n", a)
	}
	for _, t := range bfFIRTerms(k.off) {
		fmt.Fprintf(&b, "  a%d = a%d + (ct[c - %du * CTX] + ct[c + %du * CTX]) * %s;\n", t.acc, t.acc, t.d, t.d, bfHalf(t.tap))
	}
	fmt.Fprintf(&b, "  return ct[c] * %s + a0 + a1 + a2 + a3;\n}\n", bfHalf(k.off))
	return b.String()
}

// encodeLF records the LF pair of level lv: x (the XYB planes) blurred
// along x into t, then along y into lf, x becoming x minus the blur.
func (r *butteraugliRef) encodeLF(e *webgpu.Encoder, lf *bfLF, lv *bfLevel, x, t, out [3]*webgpu.Buffer) {
	rows, cols := lf.rows, lf.cols
	if lv.w%4 == 0 && lf.rows4 != nil {
		rows = lf.rows4
	}
	if lv.w%4 == 0 && lf.cols4 != nil {
		cols = lf.cols4
	}
	rx, ry := webgpu.Groups(lv.w, lf.rbx), webgpu.Groups(lv.h, lf.rby)
	for c := 0; c < 3; c++ {
		r.mark(e, "rowsLF", lv)
		e.Dispatch(rows, rx, ry, 1, lv.params, r.kern[1], x[c], t[c])
	}
	r.mark(e, "colLF", lv)
	e.Dispatch(cols, webgpu.Groups(lv.w, lf.cbx), webgpu.Groups(lv.h, lf.cby), 1, lv.params, r.kern[1],
		t[0], t[1], t[2], x[0], x[1], x[2], out[0], out[1], out[2])
}
