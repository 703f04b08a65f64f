package iwssim

import "math"

// The defaults of piq 0.8.0's information_weighted_ssim and the filters it
// builds. Source: photosynthesis-team/piq, tag v0.8.0 (commit 9948a52f),
// piq/iw_ssim.py, piq/functional/filters.py (gaussian_filter,
// binomial_filter1d, average_filter2d) and
// piq/functional/colour_conversion.py (rgb2yiq); Apache-2.0. The numbers
// are transcribed; the code is not.
const (
	numScales = 5   // len(scale_weights)
	gaussSize = 11  // kernel_size
	gaussRad  = 5   // (kernel_size − 1) / 2: the SSIM maps lose 5 pixels per side
	sigma     = 1.5 // kernel_sigma
	blkRad    = 1   // (blk_size − 1) / 2, blk_size = 3
	// iwCrop is piq's iw_pad = ceil((kernel_size−1)/2) − floor((blk_size−1)/2):
	// the information-content map is cropped by it so that it lines up with
	// the SSIM maps.
	iwCrop = gaussRad - blkRad
	// minSide is piq's smallest accepted side: (kernel_size − 1)·2^(levels−1) + 1,
	// so that the fifth level still has one SSIM value.
	minSide = (gaussSize-1)<<(numScales-1) + 1 // 161
	// nNeigh is the length of one neighbourhood vector: the 3×3 block of a
	// band plus, with parent=True, the co-located value of the next coarser
	// band (upsampled).
	nNeigh = 3*3 + 1
)

// Constants used at run time. They are variables on purpose: piq computes
// them in float64 arithmetic (one rounding per operation), while Go would
// evaluate the same expressions written as constants exactly and round only
// once, which can differ in the last bit.
var (
	k1       = 0.01 // k1
	k2       = 0.03 // k2
	sigmaNsq = 0.4  // sigma_nsq
	// dataRange is the range piq's SSIM terms use (it rescales the input to
	// 0..255 first and then calls _ssim_per_channel with data_range=255).
	dataRange = 255.0
	// scaleWeights are piq's default scale_weights (the MATLAB iwssim ones);
	// piq divides them by their sum (1.0001) before use.
	scaleWeights = [numScales]float64{0.0448, 0.2856, 0.3001, 0.2363, 0.1333}
	// lumaWeights is the first row of rgb2yiq: Y = 0.299 R + 0.587 G + 0.114 B
	// on the sRGB-encoded values (no linearisation).
	lumaWeights = [3]float64{0.299, 0.587, 0.114}
	// binomial5 is binomial_filter1d(5): the coefficients of (0.5 + 0.5 z)^4.
	binomial5 = [5]float64{0.0625, 0.25, 0.375, 0.25, 0.0625}
	// eps is torch.finfo(float64).eps, the threshold of piq's masks.
	eps = math.Nextafter(1, 2) - 1
)

// consts are the derived constants, computed once in piq's order.
type consts struct {
	c1, c2  float64     // (k1·255)², (k2·255)²
	pyr     [5]float64  // binomial5 × √2 (2**0.5)
	gauss   [11]float64 // 1-D factor of the normalised 11×11 Gaussian
	box     float64     // (1/3)·(1/3): one weight of average_filter2d(3)
	weights [numScales]float64
	nsq2    float64 // sigma_nsq · sigma_nsq
}

var cst = newConsts()

func newConsts() consts {
	var c consts
	a, b := k1*dataRange, k2*dataRange
	c.c1, c.c2 = a*a, b*b
	sqrt2 := math.Sqrt(2)
	for i, v := range binomial5 {
		c.pyr[i] = v * sqrt2
	}
	// piq's 2-D kernel is exp(−(i² + j²)/(2σ²)) / Σ, coordinates −5..5. It
	// is the outer product of the 1-D kernel exp(−i²/(2σ²)) / Σ₁ with
	// itself (Σ = Σ₁²); applied separably it gives the same values to the
	// last bits, at 22 instead of 121 multiplications a pixel.
	den := 2 * (sigma * sigma)
	var sum float64
	for i := range c.gauss {
		x := float64(i - gaussRad)
		c.gauss[i] = math.Exp(-(x * x) / den)
		sum += c.gauss[i]
	}
	for i := range c.gauss {
		c.gauss[i] /= sum
	}
	third := 1 / 3.0
	c.box = third * third
	var ws float64
	for _, w := range scaleWeights {
		ws += w
	}
	for i, w := range scaleWeights {
		c.weights[i] = w / ws
	}
	c.nsq2 = sigmaNsq * sigmaNsq
	return c
}
