package butteraugli

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// The LF blur pair (33 taps: rowsLF three times, then colLF), the two
// heaviest dispatches of a score (issue #23: 1.00 + 1.24 ms at 16 MP on
// the H200 with the one-output-per-thread kernels, CUDA's port of the
// same blurs 0.53 + 0.62 ms).
//
// By default the pair is the vec4 kernels: butteraugli_rows_lf4.wgsl on
// 16×16 threads, 4 outputs each (64-column tiles; a thread reads the 9
// vec4 words around its outputs and sums from registers, lf_row4), and
// butteraugli_col_lf4.wgsl on 8×32 threads, 4 columns each, one plane's
// 64-row tile at a time (each tap one vec4 load, lf_col4), its planes
// bound as arrays of vec4 where the width is a multiple of 4 so that
// every global load and store is 16 bytes. Timed on an H200 at 16 MP
// (2026-11-28, ms of GPU time, rowsLF / colLF) against the other layouts
// tried: one output per thread 1.001 / 1.271; the same with the sums
// written out 0.693 / 1.016; vec4 rows on 64×4 threads 0.836 (0.867 with
// the outputs staged through the tile), on 16×16 threads 0.573; vec4
// columns on 8×32 threads 0.710, with 16-byte global accesses 0.449, with
// the three planes' tiles side by side 0.904 (0.677 with 16-byte
// accesses), on 16×16 threads 0.722. Each half is the fastest of its
// kind: 1.02 ms for the pair instead of 2.27.
//
// ZENMETRICS_BA_LF selects another pair for an A/B run:
//
//	old    the one-output-per-thread kernels the other blurs use,
//	       butteraugli_rows.wgsl (64×4 threads) and butteraugli_col_lf.wgsl
//	       (32×8, the three planes' tiles side by side), the loop of
//	       butteraugli_fir.wgsl reading the taps from the uniform with a
//	       computed index
//	r16g4  the default with the row kernel's planes bound as vec4 too
//	       (16-byte loads and stores where the width is a multiple of 4)
//
// Any other value means the default. Every version performs each output's
// float operations in butteraugli_fir.wgsl's order (pairs of taps into
// four partial sums, centre first in the final sum; the cut-off,
// renormalised sum near the borders), so where the driver's compiler
// keeps products and sums apart they give the same bits. Where it
// contracts a*b+c into one fused operation (NVIDIA's does) it does so
// differently in old's loop than in the written-out sums: the planes move
// by a few ulps of the summed terms, a score by about 1e-6 relative (on
// the H200 the vec4 pairs agree with each other bit for bit but not with
// old). TestButteraugliLFVariants holds every version to the exact sums
// within the rounding bounds of f32 evaluation, and to old's bits where
// the driver does not contract.
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

// The LF pair versions: the default and the two ZENMETRICS_BA_LF names.
const (
	bfLFDefault = "new"
	bfLFOld     = "old"
	bfLFR16G4   = "r16g4"
)

// Thread geometry of the vec4 kernels, 4 outputs per thread along x.
const (
	bfLFRowTX, bfLFRowTY = 16, 16
	bfLFColTX, bfLFColTY = 8, 32
)

// bfLFRowBytes and bfLFColBytes are the vec4 kernels' workgroup memory:
// a tile row of 4·TX outputs and the 16-sample halo either side in vec4
// words, RTY rows; a column tile of CTY rows and both halos, CTX words
// wide (6,144 and 8,192 bytes for the LF radius of 16). Both are within
// the 16,384 bytes every WebGPU device offers (and below the 15,360 of
// old's column tile), so no device needs a fallback.
func bfLFRowBytes(off int) int { return 16 * bfLFRowTY * (bfLFRowTX + off/2) }
func bfLFColBytes(off int) int { return 16 * bfLFColTX * (bfLFColTY + 2*off) }

// bfLFName is the version ZENMETRICS_BA_LF value v names.
func bfLFName(v string) string {
	if v == bfLFOld || v == bfLFR16G4 {
		return v
	}
	return bfLFDefault
}

// bfLFVariant is the version to compile: the forced or configured one.
func bfLFVariant() string {
	if bfLFForce != "" {
		return bfLFName(bfLFForce)
	}
	return bfLFName(bfLFEnv())
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
	off := bfKernLF.off
	if v == bfLFOld {
		lf := &bfLF{variant: v, rbx: bfRowTX, rby: bfRowTY, cbx: bfColTX, cby: bfColTY}
		return lf, []webgpu.Kernel{
			{File: "butteraugli_rows", Entry: "rows", Prefix: base + fir, Dst: &lf.rows,
				Constants: webgpu.Constants{"OFF": float64(off), "TX": bfRowTX, "TY": bfRowTY,
					"TILE_N": float64(bfRowTY * (bfRowTX + 2*off))}},
			{File: "butteraugli_col_lf", Entry: "cols", Prefix: base + fir, Dst: &lf.cols,
				Constants: webgpu.Constants{"OFF": float64(off), "TX": bfColTX, "TY": bfColTY,
					"TILE_N": float64(3 * bfColTX * (bfColTY + 2*off))}},
		}, nil
	}
	if off != 16 {
		// butteraugli_rows_lf4.wgsl passes lf_row4 its 9 words.
		return nil, nil, fmt.Errorf("butteraugli LF pair %q: written for a radius of 16, not %d", v, off)
	}
	lf := &bfLF{variant: v, rbx: 4 * bfLFRowTX, rby: bfLFRowTY, cbx: 4 * bfLFColTX, cby: bfLFColTY}
	geo := fmt.Sprintf("const LOFF: i32 = %d;\nconst RTX = %du;\nconst RTY = %du;\nconst RV = %du;\n"+
		"const CTX = %du;\nconst CTY = %du;\nconst CR = %du;\n",
		off, bfLFRowTX, bfLFRowTY, bfLFRowTX+off/2, bfLFColTX, bfLFColTY, bfLFColTY+2*off)
	io, err := webgpu.Sources("butteraugli_rows_lf4_s", "butteraugli_rows_lf4_v", "butteraugli_col_lf4_s", "butteraugli_col_lf4_v")
	if err != nil {
		return nil, nil, err
	}
	rowPre, colPre := base+geo+bfFIRRow4(bfKernLF), base+geo+bfFIRCol4(bfKernLF)
	ks := []webgpu.Kernel{
		{File: "butteraugli_rows_lf4", Entry: "rows", Prefix: rowPre + io[0], Dst: &lf.rows},
		{File: "butteraugli_col_lf4", Entry: "cols", Prefix: colPre + io[2], Dst: &lf.cols},
		{File: "butteraugli_col_lf4", Entry: "cols", Prefix: colPre + io[3], Dst: &lf.cols4},
	}
	if v == bfLFR16G4 {
		ks = append(ks, webgpu.Kernel{File: "butteraugli_rows_lf4", Entry: "rows", Prefix: rowPre + io[1], Dst: &lf.rows4})
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
