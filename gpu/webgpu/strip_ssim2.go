package webgpu

import (
	"context"
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// SSIMULACRA2 strips: the halo.
//
// libjxl's blur is Charalampidis' recursive Gaussian (sigma 1.5, N = 5):
// per row or column, three second-order recursions
//
//	y_i[n] = n2_i·(x[n−N−1] + x[n+N−1]) − d1_i·y_i[n−1] − y_i[n−2]
//
// summed. Their poles lie on the unit circle, so the response to an impulse
// does not decay by itself: the second injection of the impulse (N+1 after,
// as the "left" term) cancels the oscillation the first one (N−1 before, as
// the "right" term) started. In exact arithmetic the blur is therefore an
// FIR of support [−(N−1), N]; with the float32 coefficients the cancellation
// leaves a residue that rings on undamped. ssim2BlurTail runs the
// recursion on an impulse in float64 with the float32 coefficients the
// kernels use and reports the largest |response| at each distance, so the
// halo is derived from the filter actually run, not from the formula.
//
// Measured (TestSSIM2BlurTail): |h[d]| = 0.265, 0.213, 0.109, 0.036,
// 0.0094 for d = 0..4, then at most 1.45e-7 for every d ≥ 5: the ring,
// periodic (period 10), never decaying. So there is no geometric tail to
// integrate: H = 5 rows make the FIR part exact, and no H removes the ring.
// Outside the image (and so outside a crop) the blur reads zeros, so a row
// ≥ H inside a crop differs from the full image's only by the ring of the
// rows the crop lacks: ≤ 1.45e-7 of each such row's value, with signs that
// alternate over the 10-row period (a smooth signal's contributions
// cancel). ssim2HaloRows picks the smallest H whose pointwise tail is below
// tol = 1e-6 of the kernel's total weight (H = 5); the strip-vs-full tests
// measure what the ring leaves in the score.
//
// Pyramid: scale s is the 2×2 box downsample of scale s−1, and its blur
// needs H rows of scale s on each side, i.e. H·2^s full-resolution rows;
// the deepest of the 6 scales (s = 5) dominates, so the halo is H·32 full
// rows. Band boundaries and crop starts are multiples of 32 so each
// scale's rows are the same 2^s-row blocks as in the full image; a crop end
// that is not a multiple of 2^s makes a partial last row at that scale,
// which lies in the halo (≥ H rows below the interior) and is never summed.
// The per-scale sums are taken over each strip's interior window at that
// scale (strip.WindowAt), so the strips' partial sums add up to the full
// image's, and the score is the same final formula on them.

// ssim2BlurTail returns |h[d]| for d = 0..maxD: the largest magnitude of
// the blur's response at distance d (either side) from a unit impulse,
// computed with libjxl's recursion in float64 from the float32 coefficients
// of ssim2IIRCoef.
func ssim2BlurTail(maxD int) []float64 {
	c := ssim2IIRCoef()
	const n = 5 // libjxl's N for sigma 1.5
	size := 4*maxD + 4*n + 8
	k := size / 2 // the impulse
	in := func(i int) float64 {
		if i == k {
			return 1
		}
		return 0
	}
	out := make([]float64, size)
	var y1, y2 [3]float64
	for i := -n + 1; i < size; i++ {
		sum := in(i-n-1) + in(i+n-1)
		var o float64
		for j := 0; j < 3; j++ {
			y := float64(c.N2[j])*sum - float64(c.D1[j])*y1[j] - y2[j]
			y2[j], y1[j] = y1[j], y
			o += y
		}
		if i >= 0 {
			out[i] = o
		}
	}
	tail := make([]float64, maxD+1)
	for d := 0; d <= maxD; d++ {
		tail[d] = math.Max(math.Abs(out[k+d]), math.Abs(out[k-d]))
	}
	return tail
}

// ssim2HaloRows is the smallest number of rows H of context one scale
// needs so that the response at every distance ≥ H (up to span) is at most
// tol of the kernel's total weight.
func ssim2HaloRows(tol float64, span int) int {
	tail := ssim2BlurTail(span)
	total := tail[0]
	for d := 1; d <= span; d++ {
		total += 2 * tail[d]
	}
	h := span + 1
	for d := span; d >= 1 && tail[d] <= tol*total; d-- {
		h = d
	}
	return h
}

// ssim2StripTol is the truncation bound of a blurred value (relative to the
// signal) that the SSIMULACRA2 halo is sized for.
const ssim2StripTol = 1e-6

// ssim2StripSpec is the strip geometry for SSIMULACRA2: halo H·2^5 rows
// rounded up to the 32-row alignment, crops at least 8 rows at the
// coarsest scale (so a crop keeps all the scales the full image has).
func ssim2StripSpec() stripSpec {
	const align = 1 << (ssim2Scales - 1)
	// 256 rows: far past the FIR part, over many periods of the ring.
	h := ssim2HaloRows(ssim2StripTol, 256)
	halo := (h*align + align - 1) / align * align
	return stripSpec{Halo: halo, Align: align, MinCrop: ssim2MinSide * align}
}

// estimateSSIM2Strip is Estimate(SSIMULACRA2, ModeStrip): not yet (the
// SSIMULACRA2 kernels are being reworked; strips follow them).
func (b *Backend) estimateSSIM2Strip(w, h int) (int64, bool) { return 0, false }

// prepareSSIM2Strip is Prepare(SSIMULACRA2, ModeStrip): not yet.
func (b *Backend) prepareSSIM2Strip(ctx context.Context, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	return nil, fmt.Errorf("%w: SSIMULACRA2 strips on %s (not yet)", zenmetrics.ErrUnsupported, b.Name())
}
