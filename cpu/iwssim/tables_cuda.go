package iwssim

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/zenmetrics-go/zenmetrics"
)

// LumaConstants are the constants of luminance, for backends that convert
// the distorted image themselves (gpu/cuda/iwssim emits them into its
// kernels' header): rgb2yiq's Y row (0.299, 0.587, 0.114) and the range
// samples are rescaled to (255). They are the variables luminance reads,
// so a backend that uses them does the same operations on the same
// numbers.
func LumaConstants() (weights [3]float64, rangeMax float64) {
	return lumaWeights, dataRange
}

// InverseModel is the reference's eigenvalue step of one scale from the
// covariance sums tot (the nPairs(n) distinct entries of Σ v vᵀ, row by
// row of the upper triangle, summed over the nexp blocks as covariance
// adds them): the covariance tot/nexp, then inverseModel. It returns
// λ_k/sigma_nsq² (what Scales reports as LamScaled) and the quadratic
// form's coefficients (the upper triangle of the inverse, off-diagonal
// entries doubled), with which vᵀC⁻¹v/N is Σ_a v_a·(Σ_{b≥a} quad_ab·v_b)
// / n, summed in that order. flat says the scale's band is rounding noise
// (FlatBandLimit): the model is then zero, as the CPU's is.
func InverseModel(tot []float64, n int, nexp float64, scale int, flat bool) (lamScaled, quad []float64, err error) {
	if n < 1 || len(tot) != nPairs(n) {
		return nil, nil, fmt.Errorf("%w: iwssim: %d covariance sums for %d components", zenmetrics.ErrBadInput, len(tot), n)
	}
	cm := mat.NewSymDense(n, nil)
	k := 0
	for a := 0; a < n; a++ {
		for b := a; b < n; b++ {
			cm.SetSym(a, b, tot[k]/nexp)
			k++
		}
	}
	lam, quad, err := inverseModel(cm, scale, flat)
	if err != nil {
		return nil, nil, err
	}
	lamScaled = make([]float64, len(lam))
	for i, l := range lam {
		lamScaled[i] = l / cst.nsq2
	}
	return lamScaled, quad, nil
}

// FlatBandLimit is the largest |sample| of scale k's band that is rounding
// noise: a band whose every sample is within it is flat, and its model
// zero (isFlatBand). A backend computing bands itself compares its own
// band's largest magnitude with this.
func FlatBandLimit(k int) float64 { return flatTol * dataRange * float64(int(1)<<k) }
