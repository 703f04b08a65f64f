// Package iwssim is the CPU reference implementation of information-content
// weighted SSIM (IW-SSIM, Wang & Li 2011) in float64, written to give the
// scores of piq 0.8.0's information_weighted_ssim with its default arguments
// (which reproduce the authors' MATLAB iwssim to 1e-15), read from piq's
// source for the algorithm and constants (see params.go).
//
// # Pipeline (as piq runs it)
//
//  1. Samples are rescaled to 0..255 (v / max · 255); colour images keep only
//     Y = 0.299 R + 0.587 G + 0.114 B of the sRGB-encoded values.
//  2. A Laplacian pyramid of each image: four steps of a 5-tap binomial
//     filter ×√2 with reflect padding, decimation by 2 and the matching
//     zero-stuffed upsampling; scales 0–3 are the band-pass differences,
//     scale 4 the last low-pass image.
//  3. Per scale, the 11×11 Gaussian (σ 1.5) SSIM terms on the valid region
//     (no padding): the contrast-structure map cs at scales 0–3, the full
//     SSIM map at scale 4 (c1 = (0.01·255)², c2 = (0.03·255)²).
//  4. At scales 0–3, information-content weights from a Gaussian scale
//     mixture model of the reference's 3×3 neighbourhoods (with the
//     upsampled coarser band as a tenth "parent" value at scales 0–2): the
//     neighbourhood covariance, its eigen-decomposition (gonum's
//     mat.EigenSym), vᵀC⁻¹v per block, and the 3×3 gain/noise statistics of
//     the distorted band against the reference band (sigma_nsq = 0.4).
//  5. Per scale the cs map is averaged with those weights (the last scale
//     plainly), and the score is Π |mean_k|^w_k with piq's weights
//     0.0448, 0.2856, 0.3001, 0.2363, 0.1333 divided by their sum.
//
// Argument order matters: piq models the first argument x as g·y + noise,
// y being the reference. Score(dist) against a reference prepared from ref
// computes information_weighted_ssim(x=dist, y=ref), the call the shared
// corpus scores were made with.
//
// # Precision
//
// Everything is float64, as piq in float64. The arithmetic is piq's, in its
// order where it matters; the deliberate differences change results by a few
// units in the last place (about 1e-15 relative in the terms, ~1e-12 in a
// score): the Gaussian is applied separably, box filters add before they
// multiply by 1/9, the inverse covariance is V·diag(1/λ)·Vᵀ rather than an LU
// inverse of V·diag(λ)·Vᵀ, the N logarithms of the weight are one logarithm of
// their product, and sums are taken per row and then in row order (so they do
// not depend on the thread count).
//
// # Flat and degenerate images
//
// A flat image's bands are zero in exact arithmetic and rounding noise
// (about 1e-14) as computed, in a pattern that depends on the order of the
// sums; the neighbourhood model built on such noise, or on the noise
// eigenvalues of a rank-deficient covariance (a horizontal gradient's
// neighbourhoods span four dimensions of ten), would turn it into weights
// of any size, different between gonum's amd64 assembly and its Go kernels
// (arm64, -tags noasm), and in piq different again. Both are decided at
// rounding level instead (isFlatBand, relTol in info.go), as the exact
// arithmetic piq's formulas describe would have them: a band within
// 2⁻³⁰·255·2^k of zero gives a zero model (no information content), an
// eigenvalue within 2⁻³⁶ of the largest is zero. So on every architecture
// a flat reference against a textured image is scored (the weights then
// come from the distorted image's own variance), and two images that are
// both flat at some weighted scale, which gives every weight there zero,
// are refused with ErrBadInput: IW-SSIM is 0/0 there (piq returns NaN, or
// raises on the zero covariance of a black image). Images with content sit
// at least 10⁶ times above both thresholds (TestModelMargins), whose
// scores are unchanged to the bit.
//
// # Input, reuse and memory
//
// Any zenmetrics.Image format; alpha is ignored (see luminance). Both sides
// must be at least 161×161, piq's minimum for five scales; smaller images are
// refused with a *zenmetrics.TooSmallError. Prepare keeps the reference's
// pyramid and, per scale, its Gaussian and 3×3 statistics and vᵀC⁻¹v/N on the
// region (about 63 bytes a pixel of the image); one scoring needs about 15
// bytes a pixel plus a few MiB per thread. EstimateBytes gives the exact
// figure. A Reference is safe for concurrent Score calls; each call borrows
// pooled scratch buffers.
package iwssim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/zenmetrics-go/zenmetrics"
)

// Config tunes the CPU implementation.
type Config struct {
	// Threads is the number of goroutines used per call; 0 means
	// runtime.GOMAXPROCS(0), 1 runs everything on the calling goroutine.
	// Scores are bit-identical for every value.
	Threads int
}

func (c Config) threads() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// MinSize is the smallest width and height piq accepts with five scales.
func MinSize() (w, h int) { return minSide, minSide }

// Reference is a prepared reference image.
type Reference struct {
	w, h    int
	threads int
	scales  [numScales]scaleRef

	mu       sync.RWMutex
	released bool
	pool     sync.Pool // *scratch
}

// scaleRef is what the reference contributes at one scale.
type scaleRef struct {
	w, h   int // band size
	rw, rh int // region size: (w−10)×(h−10)
	y      []float64
	mu, vr []float64 // Gaussian mean and variance of y on the region
	// Scales 0–3 only (nil at the last scale): the 3×3 mean and variance of
	// y and vᵀC⁻¹v/N on the region, and λ_k/σ² (L's diagonal over
	// sigma_nsq²).
	bm, bv, ss []float64
	lamScaled  []float64
	flat       bool // the band is rounding noise: a zero model (isFlatBand)
}

// dims returns the band sizes of the five scales.
func dims(w, h int) (d [numScales][2]int) {
	d[0] = [2]int{w, h}
	for k := 1; k < numScales; k++ {
		d[k] = [2]int{half(d[k-1][0]), half(d[k-1][1])}
	}
	return d
}

// scratch holds one scoring's (or one preparation's) working memory.
type scratch struct {
	x        [numScales][]float64 // the distorted pyramid
	tmp      []float64            // pyramid passes
	work     [][]float64          // per worker: chunk buffers
	num, den []float64            // per region row sums
	rowSums  []float64            // covariance sums per block row
}

// scratchLen is the number of float64 values of a scratch.
func scratchLen(w, h, threads int) (planes, tmp, work, sums int) {
	d := dims(w, h)
	for _, s := range d {
		planes += s[0] * s[1]
	}
	tmp = max(h*half(w), half(h)*w)
	work = threads * chunkLen(w, w-2*gaussRad)
	sums = 2*(h-2*gaussRad) + nPairs(nNeigh)*(h-2)
	return
}

func newScratch(w, h, threads int) *scratch {
	planes, tmp, work, sums := scratchLen(w, h, threads)
	big := make([]float64, planes+tmp+work+sums)
	take := func(n int) []float64 {
		p := big[:n:n]
		big = big[n:]
		return p
	}
	s := &scratch{}
	for k, d := range dims(w, h) {
		s.x[k] = take(d[0] * d[1])
	}
	s.tmp = take(tmp)
	per := work / threads
	s.work = make([][]float64, threads)
	for i := range s.work {
		s.work[i] = take(per)
	}
	s.num, s.den = take(h-2*gaussRad), take(h-2*gaussRad)
	s.rowSums = take(nPairs(nNeigh) * (h - 2))
	return s
}

// refLen is the number of float64 values a prepared reference keeps.
func refLen(w, h int) int64 {
	var n int64
	for k, d := range dims(w, h) {
		n += int64(d[0]) * int64(d[1])
		r := int64(d[0]-2*gaussRad) * int64(d[1]-2*gaussRad)
		if k < numScales-1 {
			n += 5 * r
		} else {
			n += 2 * r
		}
	}
	return n
}

// EstimateBytes is the heap a prepared reference of a w×h image plus one
// concurrent scoring uses (runtime.GOMAXPROCS(0) threads).
func EstimateBytes(w, h int) int64 {
	if w < minSide || h < minSide {
		return 0
	}
	planes, tmp, work, sums := scratchLen(w, h, runtime.GOMAXPROCS(0))
	// The parent interpolation tables (four values per child row and
	// column at scales 0–2) and an allowance for the small allocations
	// (goroutines, the eigen-decompositions, headers).
	var tables int64
	d := dims(w, h)
	for k := 0; k < numScales-2; k++ {
		tables += 4 * int64(d[k][0]+d[k][1])
	}
	const small = 256 << 10
	return 8*(refLen(w, h)+int64(planes+tmp+work+sums)+tables) + small
}

func checkImage(im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if im.Width < minSide || im.Height < minSide {
		return &zenmetrics.TooSmallError{Metric: zenmetrics.IWSSIM, Width: im.Width, Height: im.Height,
			MinWidth: minSide, MinHeight: minSide}
	}
	return nil
}

// Prepare does the reference-only work: the reference's pyramid, its local
// statistics, the neighbourhood model and vᵀC⁻¹v at every scale.
func Prepare(ref *zenmetrics.Image, cfg Config) (*Reference, error) {
	return PrepareContext(context.Background(), ref, cfg)
}

// PrepareContext is Prepare that gives up with ctx.Err() when ctx is done,
// checked between scales.
func PrepareContext(ctx context.Context, ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, h, th := ref.Width, ref.Height, cfg.threads()
	r = &Reference{w: w, h: h, threads: th}
	sc := newScratch(w, h, th)
	d := dims(w, h)
	for k := range r.scales {
		s := &r.scales[k]
		s.w, s.h = d[k][0], d[k][1]
		s.rw, s.rh = s.w-2*gaussRad, s.h-2*gaussRad
		s.y = make([]float64, s.w*s.h)
	}
	luminance(ref, r.scales[0].y, th)
	for k := 0; k < numScales-1; k++ {
		s := &r.scales[k]
		pyrStep(s.y, s.w, s.h, r.scales[k+1].y, sc.tmp, th)
	}
	for k := range r.scales {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.prepareScale(k, sc); err != nil {
			return nil, err
		}
	}
	r.pool.Put(sc)
	return r, nil
}

// prepareScale computes scale k's statistics and, below the last scale, the
// neighbourhood model (with a parent at scales 0–2, as piq with parent=True).
func (r *Reference) prepareScale(k int, sc *scratch) error {
	s := &r.scales[k]
	n := s.rw * s.rh
	last := k == numScales-1
	s.mu, s.vr = make([]float64, n), make([]float64, n)
	if !last {
		s.bm, s.bv, s.ss = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	refStats(s.y, s.w, s.h, s.mu, s.vr, s.bm, s.bv, !last, r.threads, sc.work)
	if last {
		return nil
	}
	var parent []float64
	var en *enlarger
	if k < numScales-2 {
		p := &r.scales[k+1]
		parent = p.y
		en = newEnlarger(s.w, s.h, p.w, p.h)
	}
	cm := covariance(s.y, s.w, s.h, parent, en, r.threads, sc.rowSums, sc.work)
	if perturbCovariance != nil {
		perturbCovariance(cm)
	}
	s.flat = isFlatBand(s.y, k)
	lam, quad, err := inverseModel(cm, k, s.flat)
	if err != nil {
		return err
	}
	s.lamScaled = make([]float64, len(lam))
	for i, l := range lam {
		s.lamScaled[i] = l / cst.nsq2
	}
	mahalanobis(s.ss, s.y, s.w, s.h, parent, en, quad, r.threads, sc.work)
	return nil
}

// perturbCovariance, when set (by tests only), changes every neighbourhood
// covariance before its decomposition: TestRoundingInsensitive moves its
// entries by a few ulps, as another order of the same sums would, to show
// that scores do not depend on rounding there.
var perturbCovariance func(cm *mat.SymDense)

// Release drops the prepared planes. Score afterwards returns
// zenmetrics.ErrReleased. It waits for running Score calls.
func (r *Reference) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	r.scales = [numScales]scaleRef{}
	r.pool = sync.Pool{}
}

// Width and Height report the reference's size.
func (r *Reference) Width() int  { return r.w }
func (r *Reference) Height() int { return r.h }

// Score compares dist with the prepared reference. It is safe for
// concurrent use.
func (r *Reference) Score(dist *zenmetrics.Image) (float64, error) {
	return r.ScoreContext(context.Background(), dist)
}

// ScoreContext is Score that gives up with ctx.Err() when ctx is done,
// checked between scales.
func (r *Reference) ScoreContext(ctx context.Context, dist *zenmetrics.Image) (score float64, err error) {
	defer zenmetrics.Recover(&err)
	if r == nil {
		return 0, fmt.Errorf("%w: nil reference", zenmetrics.ErrBadInput)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return 0, zenmetrics.ErrReleased
	}
	if err := dist.Validate(); err != nil {
		return 0, err
	}
	if dist.Width != r.w || dist.Height != r.h {
		return 0, &zenmetrics.SizeMismatchError{RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	sc, _ := r.pool.Get().(*scratch)
	if sc == nil {
		sc = newScratch(r.w, r.h, r.threads)
	}
	defer r.pool.Put(sc)

	luminance(dist, sc.x[0], r.threads)
	for k := 0; k < numScales-1; k++ {
		s := &r.scales[k]
		pyrStep(sc.x[k], s.w, s.h, sc.x[k+1], sc.tmp, r.threads)
	}
	score = 1
	for k := range r.scales {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		s := &r.scales[k]
		num, den := sc.num[:s.rh], sc.den[:s.rh]
		scoreScale(s, sc.x[k], num, den, r.threads, sc.work)
		var sn, sd float64
		for i := range num {
			sn += num[i]
		}
		if s.ss != nil {
			for i := range den {
				sd += den[i]
			}
		} else {
			sd = float64(s.rw) * float64(s.rh)
		}
		if sd == 0 {
			// Every weight is zero: both images are flat at this scale
			// (their bands zero, or rounding noise treated as zero, see
			// isFlatBand), as two flat images are at every scale. piq
			// divides 0 by 0 (NaN), or raises on the zero covariance.
			return 0, ZeroWeightsError(k)
		}
		score *= math.Pow(math.Abs(sn/sd), cst.weights[k])
	}
	return score, nil
}

// ZeroWeightsError is the error of a scoring whose information-content
// weights are all zero at scale k (both images flat there), shared with
// gpu/webgpu/iwssim and gpu/cuda/iwssim so that every backend says the
// same.
func ZeroWeightsError(k int) error {
	return fmt.Errorf("%w: IW-SSIM is undefined: every information-content weight is zero at scale %d (both images are flat there; piq returns NaN)", zenmetrics.ErrBadInput, k)
}

// Score prepares ref, scores dist against it and releases it.
func Score(ref, dist *zenmetrics.Image, cfg Config) (score float64, err error) {
	defer zenmetrics.Recover(&err)
	if err := ref.Validate(); err != nil {
		return 0, err
	}
	if err := dist.Validate(); err != nil {
		return 0, err
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return 0, err
	}
	r, err := Prepare(ref, cfg)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	return r.Score(dist)
}
