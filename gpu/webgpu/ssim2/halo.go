package ssim2

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// SSIMULACRA2 strips: the halo, and why a halo alone is not enough.
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
// kernels use and reports the largest |response| at each distance.
//
// Measured (TestSSIM2BlurTail): |h[d]| = 0.265, 0.213, 0.109, 0.036,
// 0.0094 for d = 0..4, then at most 1.45e-7 for every d ≥ 5: the ring,
// periodic (period 10), never decaying. The kernels' float32 rounding
// behaves the same way: every step's rounding error starts an oscillation
// that nothing damps, so a vertically blurred value carries the rounding
// of the whole column above it. SSIMULACRA2 reads the blurs through
// sigma − mu², a difference of nearly equal numbers compared with
// C2 = 0.0009, so that noise matters: crops that restarted the recursion
// 5 coarse rows above their interior (a 160-row halo) scored 2e-3 to 0.11
// away from the full image (the last for flat 16-bit gray, whose X channel
// is all noise). No halo removes it.
//
// So the vertical recursion is not restarted: vmaps carries its state from
// strip to strip (ssim2_vmaps.wgsl), and each strip resumes at its first
// interior row with exactly the state the full image has there. A halo is
// still needed for the recursion's inputs: resuming at row n reads row
// n − N − 1, and the last interior row reads row n + N − 1, so N + 1 = 6
// rows of each scale above the interior and N − 1 below must be the full
// image's, bit for bit. Scale s is the 2×2 box downsample of scale s − 1,
// so with crop starts on multiples of 2^5 = 32 every row of every scale is
// the same 2^s-row block as in the full image, except a partial last row
// where a crop ends short of the image, which lies below the rows read.
// The deepest of the 6 scales dominates: the halo is 6·32 = 192 full rows.
// Horizontal blurs, colour conversion and downsampling are per row or per
// pixel, so with the state carried every interior value equals the full
// image's bit for bit, and the per-scale sums over the strips' interior
// windows (strip.WindowAt) differ from the full image's only by summation
// order.

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

// ssim2StripSpec is the strip geometry for SSIMULACRA2: a halo of N + 1
// rows at the coarsest scale (192 full rows), aligned to 32, crops at
// least 8 rows at the coarsest scale (so a crop keeps all the scales the
// full image has).
func ssim2StripSpec() webgpu.StripSpec {
	const align = 1 << (ssim2Scales - 1)
	const iirN = 5 // libjxl's N for sigma 1.5 (IIR_N in ssim2_iir.wgsl)
	return webgpu.StripSpec{Halo: (iirN + 1) * align, Align: align, MinCrop: ssim2MinSide * align}
}
