package iwssim

import (
	"fmt"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/zenmetrics-go/zenmetrics"
)

// The reference's part of piq's _information_content, for one scale.
//
// Every 3×3 block of the reference band y (centre (r, c), 1 ≤ r ≤ h−2,
// 1 ≤ c ≤ w−2) gives a neighbourhood vector: its nine samples, in piq's
// order (n = 3·(ny+1) + (nx+1) holds y[r−ny][c−nx] for ny, nx ∈ {−1, 0, 1}),
// and with a parent band a tenth value, the parent enlarged to the band's
// size at (r, c). piq models these vectors as a Gaussian scale mixture with
// covariance C = E[v vᵀ] (not mean-removed), estimated over all blocks. It
// takes C's eigenvalues, clamps the negative ones to zero and rescales the
// rest so that their sum is unchanged (L), rebuilds C from them and inverts
// it; ss = vᵀC⁻¹v/N at each block and L's diagonal then enter the weights.
// All of it depends on the reference only, so Prepare computes it once.

// nPairs is the number of distinct entries of a symmetric N×N matrix.
func nPairs(n int) int { return n * (n + 1) / 2 }

// neighbourhoodRows returns, for the block row centred on band row r, the
// N vectors' components as slices over n consecutive centres starting at
// column c0: comp[k][j] is component k of the block centred at (r, c0+j).
// Component k of the block at (r, c) is y[r−ny][c−nx] for k = 3·(ny+1) +
// (nx+1), ny, nx ∈ {−1, 0, 1}, piq's order; with a parent, component 9 is
// the enlarged parent's row r at c (prow).
func neighbourhoodRows(comp *[nNeigh][]float64, y []float64, w, r, c0, n int, prow []float64) {
	for k := 0; k < 9; k++ {
		o := (r+1-k/3)*w + c0 + 1 - k%3
		comp[k] = y[o : o+n : o+n]
	}
	if prow != nil {
		comp[9] = prow[c0 : c0+n : c0+n]
	}
}

// dot is Σ a[i]·b[i] in four interleaved partial sums (added pairwise at
// the end), a fixed order.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i] * b[i])
		s1 += float64(a[i+1] * b[i+1])
		s2 += float64(a[i+2] * b[i+2])
		s3 += float64(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// covariance returns C = Σ v vᵀ / nexp over all blocks, as a gonum SymDense.
// rowSums needs nPairs(N)·(h−2) values: each block row's sums are kept apart
// and added in row order, so the result does not depend on threads.
func covariance(y []float64, w, h int, parent []float64, en *enlarger, threads int, rowSums []float64, work [][]float64) *mat.SymDense {
	nn := 9
	if parent != nil {
		nn = nNeigh
	}
	np := nPairs(nn)
	nbr := h - 2
	parallel.Chunks(threads, nbr, max(1, 16384/w), func(worker, i0, i1 int) {
		prow := work[worker][:w]
		var comp [nNeigh][]float64
		for i := i0; i < i1; i++ {
			r := i + 1
			var pr []float64
			if parent != nil {
				en.row(parent, r, prow)
				pr = prow
			}
			neighbourhoodRows(&comp, y, w, r, 1, w-2, pr)
			acc := rowSums[i*np : i*np+np]
			k := 0
			for a := 0; a < nn; a++ {
				for b := a; b < nn; b++ {
					acc[k] = dot(comp[a], comp[b])
					k++
				}
			}
		}
	})
	tot := make([]float64, np)
	for i := 0; i < nbr; i++ {
		for k, s := range rowSums[i*np : i*np+np] {
			tot[k] += s
		}
	}
	nexp := float64(nbr) * float64(w-2)
	cm := mat.NewSymDense(nn, nil)
	k := 0
	for a := 0; a < nn; a++ {
		for b := a; b < nn; b++ {
			cm.SetSym(a, b, tot[k]/nexp)
			k++
		}
	}
	return cm
}

// inverseModel does piq's eigenvalue step on C: it returns L's diagonal
// (the eigenvalues, negative ones clamped to 0, scaled by Σλ / Σλ⁺) and the
// inverse of V·L·Vᵀ as the upper triangle of a symmetric matrix, packed
// with the off-diagonal entries doubled (the quadratic form's coefficients).
//
// When every eigenvalue is positive (C is a Gram matrix of many vectors, so
// this is the case for any reference with content), V·diag(1/L)·Vᵀ is the
// inverse piq computes with torch.inverse. When some are clamped to zero,
// V·L·Vᵀ is singular and piq's inverse is numerically meaningless; this uses
// the pseudo-inverse (the zero eigenvalues' directions dropped), which is
// what a flat or otherwise degenerate reference converges to.
//
// "Zero" is decided at rounding level, not by the sign of a computed
// eigenvalue: an eigenvalue that is exactly zero in exact arithmetic comes
// out of the decomposition as ±(a few ulps of the largest one), and its
// sign and size depend on the order of the decomposition's sums, which
// differ between gonum's assembly (amd64) and Go (arm64, -tags noasm)
// kernels. Kept as positive, such a value enters the pseudo-inverse as
// 1/(rounding noise) and turns ss, and every weight, into noise of any
// size. So an eigenvalue at or below relTol × the largest is treated as
// the zero it is (numerical rank, as numpy's matrix_rank does with its
// N·ε tolerance), and when the band itself is flat (flat is set: every
// sample within rounding noise of zero, see isFlatBand) the whole model is
// zero, as piq's exact arithmetic would make it for a band of zeros.
func inverseModel(cm *mat.SymDense, scale int, flat bool) (lam, quad []float64, err error) {
	n := cm.SymmetricDim()
	lam = make([]float64, n)
	quad = make([]float64, nPairs(n))
	if flat {
		// C = 0: L = 0 and its pseudo-inverse 0, so ss = 0 at every block.
		return lam, quad, nil
	}
	var es mat.EigenSym
	if !es.Factorize(cm, true) {
		return nil, nil, fmt.Errorf("%w: iwssim: eigen-decomposition of the scale-%d covariance did not converge", zenmetrics.ErrBadInput, scale)
	}
	vals := es.Values(nil)
	var vec mat.Dense
	es.VectorsTo(&vec)
	var sum, top float64
	for _, v := range vals {
		sum += v
		top = max(top, v)
	}
	tol := top * relTol
	var sumPos float64
	for _, v := range vals {
		if v > tol {
			sumPos += v
		}
	}
	den := sumPos
	if sumPos == 0 {
		den = 1
	}
	inv := make([]float64, n)
	for i, v := range vals {
		if v > tol {
			lam[i] = v * sum / den
		}
		if lam[i] > 0 {
			inv[i] = 1 / lam[i]
		}
	}
	var t, a mat.Dense
	t.Mul(&vec, mat.NewDiagDense(n, inv))
	a.Mul(&t, vec.T())
	k := 0
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			if i == j {
				quad[k] = a.At(i, i)
			} else {
				// vᵢvⱼ appears twice in vᵀAv: add the two mirrored
				// entries (equal up to rounding).
				quad[k] = a.At(i, j) + a.At(j, i)
			}
			k++
		}
	}
	return lam, quad, nil
}

// mahalanobis writes ss = vᵀ C⁻¹ v / N at every region centre.
func mahalanobis(ss, y []float64, w, h int, parent []float64, en *enlarger, quad []float64, threads int, work [][]float64) {
	nn := 9
	if parent != nil {
		nn = nNeigh
	}
	rw, rh := w-2*gaussRad, h-2*gaussRad
	fn := float64(nn)
	parallel.Chunks(threads, rh, max(1, 16384/w), func(worker, i0, i1 int) {
		buf := work[worker]
		prow, acc := buf[:w], buf[w:w+rw]
		var comp [nNeigh][]float64
		for i := i0; i < i1; i++ {
			r := i + gaussRad
			var pr []float64
			if parent != nil {
				en.row(parent, r, prow)
				pr = prow
			}
			neighbourhoodRows(&comp, y, w, r, gaussRad, rw, pr)
			// Per centre: q = Σ_a v_a · (Σ_{b≥a} quad_ab · v_b), a row at a time.
			out := ss[i*rw : i*rw+rw]
			clear(out)
			k := 0
			for a := 0; a < nn; a++ {
				va := comp[a]
				qa := quad[k]
				for j, v := range va {
					acc[j] = qa * v
				}
				k++
				for b := a + 1; b < nn; b++ {
					qb := quad[k]
					vb := comp[b][:rw]
					for j := range acc {
						acc[j] += float64(qb * vb[j])
					}
					k++
				}
				for j, v := range va {
					out[j] += float64(acc[j] * v)
				}
			}
			for j := range out {
				out[j] /= fn
			}
		}
	})
}

// relTol is the largest eigenvalue of a neighbourhood covariance, relative
// to the largest, that is treated as zero: 2⁻³⁶ ≈ 1.5e-11. The rounding
// error of a computed eigenvalue is a small multiple of N·ε·λmax ≈ 2e-15·λmax
// (N = 10), and the rounding of the covariance's sums adds at most about
// w·ε·λmax; a true eigenvalue this small relative to the largest would need
// a band whose weakest neighbourhood pattern is 10⁵ times weaker in
// amplitude than its strongest one, far below the quantisation noise of an
// 8- or 16-bit image at that contrast. The corpus and golden references sit
// at 1e-4 or more (TestEigenMargins).
var relTol = 0x1p-36

// flatTol is the largest sample magnitude of a band, relative to the
// largest value its low-pass level can hold (255·2^k at scale k: the
// luminance is 0..255 and every pyramid step has gain 2), that is rounding
// noise. A band is the difference of a low-pass level and its own blurred
// and re-expanded copy, both sums of a few dozen products of values up to
// that bound, so a band that is zero in exact arithmetic (a flat image, at
// every scale) comes out with samples of at most ~100·ε·255·2^k ≈ 6e-12·2^k.
// One 16-bit code step of one colour channel already gives band samples
// above 4e-5 (0.114·255/65535, times a filter response of 0.1 or more).
// 2⁻³⁰·255·2^k ≈ 2.4e-7·2^k sits between the two with a margin of over a
// hundred on either side.
var flatTol = 0x1p-30

// isFlatBand reports whether every sample of band y (scale k) lies within
// rounding noise of zero (flatTol).
func isFlatBand(y []float64, k int) bool {
	lim := FlatBandLimit(k)
	for _, v := range y {
		if math.Abs(v) > lim {
			return false
		}
	}
	return true
}
