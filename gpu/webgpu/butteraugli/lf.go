package butteraugli

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// The LF blur pair (33 taps: rowsLF three times, then colLF), the two
// heaviest dispatches of a score (issue #23: 1.00 + 1.24 ms at 16 MP on
// the H200 with the one-output-per-thread kernels, CUDA's port of the
// same blurs 0.53 + 0.62 ms).
//
// By default the pair is the vec4 kernels of blur.go, written for it
// first: butteraugli_rows4.wgsl on 16×16 threads, 4 outputs each
// (64-column tiles; a thread reads the 9 vec4 words around its outputs
// and sums from registers, fir_row4), and butteraugli_col_lf4.wgsl
// (butteraugli_col4.wgsl) on 8×32 threads, 4 columns each, one plane's
// 64-row tile at a time (each tap one vec4 load, fir_col4), both with
// their planes bound as arrays of vec4 where the width is a multiple of 4
// so that every global load and store is 16 bytes. Timed on an H200 at 16 MP
// (2026-11-28, ms of GPU time, rowsLF / colLF) against the other layouts
// tried: one output per thread 1.001 / 1.271; the same with the sums
// written out 0.693 / 1.016; vec4 rows on 64×4 threads 0.836 (0.867 with
// the outputs staged through the tile), on 16×16 threads 0.573; vec4
// columns on 8×32 threads 0.710, with 16-byte global accesses 0.449, with
// the three planes' tiles side by side 0.904 (0.677 with 16-byte
// accesses), on 16×16 threads 0.722; the 16×16 rows with 16-byte global
// accesses 0.546. Each half is the fastest of its kind: 1.0 ms for the
// pair instead of 2.27.
//
// ZENMETRICS_BA_LF=old selects the one-output-per-thread kernels (the
// version ZENMETRICS_BA_BLUR=old names for the other blurs, blur.go),
// butteraugli_rows.wgsl (64×4
// threads) and butteraugli_col_lf.wgsl (32×8, the three planes' tiles side
// by side), for an A/B run; any other value means the default. Every version performs each
// output's float operations in butteraugli_fir.wgsl's order (pairs of
// taps into four partial sums, centre first in the final sum; the cut-off,
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
var bfLFKnob = newBFKnob("ZENMETRICS_BA_LF")

// bfLF is a compiled LF pair (blur.go) and the version it is.
type bfLF struct {
	variant string
	bfBlur
}

// lfKernels returns version v (bfKnob.variant's form) of the LF pair and
// the kernels that fill it in (compiled with the others, side by side);
// base is the prelude and the common declarations, fir
// butteraugli_fir.wgsl.
func lfKernels(v, base, fir string) (*bfLF, []webgpu.Kernel, error) {
	lf := &bfLF{variant: v}
	ks, err := blurKernels(&lf.bfBlur, bfStageLF, v == bfVersionOld, base, fir)
	if err != nil {
		return nil, nil, err
	}
	return lf, ks, nil
}
