package iwssim

import (
	"errors"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// InverseModel turns covariance sums into λ/σ² and the quadratic form's
// coefficients: for sums of nexp·diag(1, 2, 4) the eigenvalues are 1, 2,
// 4 (over sigma_nsq² = 0.16) and the form is diag(1, 1/2, 1/4) with zero
// cross terms, to a few ulps (the eigenvectors come out of gonum's
// iteration, exact here up to sign); sums of the wrong length are
// refused.
func TestInverseModel(t *testing.T) {
	const nexp = 1000
	tot := []float64{1 * nexp, 0, 0, 2 * nexp, 0, 4 * nexp} // upper triangle, row by row
	lam, quad, err := InverseModel(tot, 3, nexp, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-14*math.Max(1, math.Abs(b)) }
	for i, want := range []float64{1, 2, 4} {
		if !near(lam[i], want/(sigmaNsq*sigmaNsq)) {
			t.Errorf("λ[%d]/σ² = %v, want %v", i, lam[i], want/(sigmaNsq*sigmaNsq))
		}
	}
	for i, want := range []float64{1, 0, 0, 0.5, 0, 0.25} {
		if !near(quad[i], want) {
			t.Errorf("quad[%d] = %v, want %v", i, quad[i], want)
		}
	}
	if _, _, err := InverseModel(tot[:5], 3, nexp, 0, false); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("5 sums for 3 components: %v", err)
	}
	if w, r := LumaConstants(); w != lumaWeights || r != 255 {
		t.Errorf("LumaConstants = %v, %v", w, r)
	}
}
