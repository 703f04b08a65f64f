// Package ssim2 is the CPU reference implementation of SSIMULACRA2, a
// port-by-understanding of libjxl v0.12.0's tools/ssimulacra2.cc and the
// parts of libjxl it calls, written to give the scores the `ssimulacra2`
// tool prints for the same PNG files.
//
// # Pipeline (as libjxl runs it)
//
//  1. Samples become floats as sample × (1/255) or × (1/65535) in float32.
//  2. Alpha: if the reference has an alpha channel, the score is the lower
//     of two runs in which every image with alpha is composited on a grey
//     background of 0.1 and of 0.9; if only the distorted image has alpha,
//     it is composited on 0.5. Compositing happens on the sRGB-encoded
//     values (a·c + (1−a)·bg), before linearisation.
//  3. sRGB → linear with libjxl's rational-polynomial transfer function
//     (not the textbook power law; it differs in the last bits).
//  4. Per scale (up to 6; scale k+1 exists only if scale k is at least
//     8×8 — so the last scale may be smaller than 8×8, as in libjxl):
//     linear → XYB (opsin absorbance, bias, libjxl's cube root) →
//     "positive XYB" (X·14+0.42, Y+0.01, B−Y+0.55); blurs of img1, img2,
//     img1², img2², img1·img2 with libjxl's recursive Gaussian (σ = 1.5);
//     the SSIM error map (without the luminance denominator) and the
//     edge-difference maps (ringing and blurring); 1-norms and 4-norms.
//     The next scale is the 2×2 box mean of the linear RGB image.
//  5. 108 weighted norms (weights consumed in order, so images with fewer
//     than 6 scales use the weights as libjxl does), a cubic, and
//     100 − 10·x^0.6276 (100 when x ≤ 0).
//
// # Precision
//
// Everything per pixel is float32, with fused multiply-adds exactly where
// libjxl's SIMD code has them, and float64 where libjxl uses double (the
// SSIM/edge terms from their float32 inputs, the sums, the final score).
// libjxl computes in float32 and the IIR blur and the cube-root iteration
// amplify representation differences, so float64 arithmetic would move the
// score away from the tool by more than float32 done libjxl's way (the
// scores here typically match the tool to about 1e-6). The only deliberate
// difference: libjxl adds up each plane's pixel terms in one sequential
// float64 sum, while this package sums each row and then adds the row sums
// in order, so that rows can be processed in parallel with bit-identical
// results for every thread count (the two orders differ by about 1e-13).
//
// # Fast path
//
// On amd64 CPUs with AVX2 and FMA3 the per-pixel work runs in package
// cpusimd's assembly kernels (the recursive Gaussian's two passes, the XYB
// conversion, the error terms), and the distorted image's blurs and error
// terms are streamed row by row (a channel per goroutine) instead of plane
// by plane.
// The kernels do the same float32 operations in the same order; their
// fused multiply-adds round once, as libjxl's FMA instructions do, where the
// reference code emulates them in float64 and can round twice (when the
// float64 sum lands exactly halfway between two float32 values), and the
// error terms of a row are added in four partial sums. On the test corpus
// and the synthetic cases the two paths give bit-identical scores (see
// simd_test.go for what is measured and the tolerances). Build with
// -tags noasm or set ZENMETRICS_NOSIMD=1 for the reference path only.
//
// # Input
//
// Any zenmetrics.Image format: 8- or 16-bit, grey or RGB, with or without
// alpha (an alpha channel that is fully opaque everywhere changes nothing,
// exactly as in libjxl, and is skipped). Grey images are three equal
// planes, as libjxl stores them. libjxl's PNG reader also takes the sample
// scale from a PNG sBIT chunk (1/(2^bits−1)); zenmetrics.Image carries no
// sBIT, so samples always scale by 1/255 or 1/65535 — the same for every
// PNG without sBIT. Images below 8×8 are refused with a
// *zenmetrics.TooSmallError, as the tool refuses them.
//
// # Reuse and memory
//
// Prepare keeps, per scale, the reference's XYB planes, their blur (mu1) and
// blurred square minus mu1² (sigma1²), so scoring a distorted image does only
// the distorted image's half of the work. A Reference is safe for concurrent
// Score calls; each call borrows pooled scratch buffers. The reference keeps
// 9 float32 planes per scale (about 48 bytes per pixel over all scales,
// twice that for a reference with real transparency, which needs both
// backgrounds); one scoring needs about 32 bytes per pixel of scratch. A 4 MP
// pair peaks near 320 MiB; EstimateBytes gives the exact figure.
// ScorePair scores a single pair without the reference's planes: on one
// thread on the fast path it streams both images through each scale in
// one pass (pair.go), a few MiB beside the images and the scale-1 planes.
package ssim2

import (
	"context"
	"fmt"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"
	"runtime"
	"sync"

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

// MinSize is the smallest width and height libjxl's ssimulacra2 accepts.
func MinSize() (w, h int) { return minSide, minSide }

// Reference is a prepared reference image.
type Reference struct {
	w, h    int
	threads int
	simd    bool     // blur with the cpusimd kernels (useSIMD when prepared)
	dims    [][2]int // per scale: width, height
	// refAlpha: the reference has an alpha channel, so scoring uses the two
	// backgrounds 0.1 and 0.9 (and the minimum); otherwise one run with the
	// distorted image composited on 0.5 if it has alpha.
	refAlpha bool
	views    []view

	mu       sync.RWMutex
	released bool
	pool     sync.Pool // *scratch
}

// view is one background: the reference pyramid composited on bg. Views of
// an opaque reference share one pyramid.
type view struct {
	bg  float32
	pyr []refScale
}

// refScale is what the reference contributes at one scale.
type refScale struct {
	w, h int
	img  [3][]float32 // positive XYB
	mu   [3][]float32 // blur(img)
	vr   [3][]float32 // blur(img²) − mu² (the reference's variance)
}

// scratch holds one scoring's (or one preparation's) working planes.
type scratch struct {
	// Linear RGB of scales 1 and up: lin[0] holds scale 1, lin[1] scale 2,
	// then they alternate (each is large enough for every later scale).
	// Scale 0 never exists as whole linear planes: it is converted row by
	// row straight to XYB and to scale 1.
	lin [2][3][]float32
	// img is the distorted image's positive XYB (imgPlanes): of scale 0,
	// or only of scale 1 and up where scale 0 is streamed (scoreFirst).
	img [3][]float32
	// stream is scoreFirst's rings and blur buffers.
	stream []float32
	// n is the pixel count of the largest scale. tmp (the horizontal blur
	// output) and mu2, s22, s12 are allocated on first use (tmpPlane,
	// statPlanes): the fused fast path never needs them, and planes that
	// are allocated but never written still cost page faults when the
	// allocator has to zero them.
	n             int
	tmp           []float32
	mu2, s22, s12 []float32
	rows          []float64   // per-row partial sums, 6 per row
	rowbuf        [][]float32 // per worker: six rows (linear pairs, products)
	// simd: blur with the cpusimd kernels; simdbuf is then each worker's
	// work buffer for them (simdWorkLen floats).
	simd    bool
	simdbuf [][]float32
	// fused: with simd, each worker's buffers for streamBlurs (fusedLen
	// floats); rows then has room for three channels.
	fused [][]float32
}

func scaleDims(w, h int) [][2]int {
	dims := [][2]int{{w, h}}
	for len(dims) < numScales {
		last := dims[len(dims)-1]
		if last[0] < minSide || last[1] < minSide {
			break
		}
		dims = append(dims, [2]int{(last[0] + 1) / 2, (last[1] + 1) / 2})
	}
	return dims
}

// linSizes are the pixel counts of the two linear buffers for a w×h image.
func linSizes(w, h int) (n1, n2 int) {
	w1, h1 := (w+1)/2, (h+1)/2
	return w1 * h1, ((w1 + 1) / 2) * ((h1 + 1) / 2)
}

func newScratch(w, h, threads int, simd bool) *scratch {
	n := w * h
	n1, n2 := linSizes(w, h)
	s := &scratch{n: n}
	big := make([]float32, 3*n1+3*n2)
	take := func(k int) []float32 {
		p := big[:k:k]
		big = big[k:]
		return p
	}
	for c := 0; c < 3; c++ {
		s.lin[0][c] = take(n1)
		s.lin[1][c] = take(n2)
	}
	rows := 6 * h
	if simd {
		rows *= 3
	}
	s.rows = make([]float64, rows)
	s.rowbuf = make([][]float32, threads)
	for i := range s.rowbuf {
		s.rowbuf[i] = make([]float32, 6*w)
	}
	if simd {
		s.simd = true
		s.simdbuf = make([][]float32, threads)
		for i := range s.simdbuf {
			s.simdbuf[i] = make([]float32, simdWorkLen(w))
		}
		s.fused = make([][]float32, threads)
		for i := range s.fused {
			s.fused[i] = make([]float32, fusedLen(w))
		}
	}
	return s
}

// imgPlanes are the distorted image's XYB planes, first k floats each;
// the first call sizes them (scale 0's, or scale 1's when scale 0 is
// streamed, and later scales are smaller).
func (s *scratch) imgPlanes(k int) [3][]float32 {
	if len(s.img[0]) < k {
		big := make([]float32, 3*k)
		s.img = [3][]float32{big[:k:k], big[k : 2*k : 2*k], big[2*k:]}
	}
	return [3][]float32{s.img[0][:k], s.img[1][:k], s.img[2][:k]}
}

// tmpPlane is the horizontal blur's output plane, first k floats.
func (s *scratch) tmpPlane(k int) []float32 {
	if s.tmp == nil {
		s.tmp = make([]float32, s.n)
	}
	return s.tmp[:k]
}

// statPlanes are the plane-by-plane path's blurred planes of the distorted
// image, first k floats each.
func (s *scratch) statPlanes(k int) (mu2, s22, s12 []float32) {
	if s.mu2 == nil {
		big := make([]float32, 3*s.n)
		s.mu2, s.s22, s.s12 = big[:s.n:s.n], big[s.n:2*s.n:2*s.n], big[2*s.n:]
	}
	return s.mu2[:k], s.s22[:k], s.s12[:k]
}

// EstimateBytes is the heap a prepared reference of an opaque w×h image plus
// one concurrent scoring uses (a reference with alpha keeps a second
// pyramid, which adds the reference part once more).
func EstimateBytes(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return 0
	}
	var ref int64
	for _, d := range scaleDims(w, h) {
		ref += 9 * 4 * int64(d[0]) * int64(d[1])
	}
	n := int64(w) * int64(h)
	n1, n2 := linSizes(w, h)
	threads := int64(runtime.GOMAXPROCS(0))
	work := 4*(3*int64(n1)+3*int64(n2)+3*n+4*n) + 8*6*int64(h) + 4*6*threads*int64(w)
	if useSIMD {
		work += 4*threads*int64(simdWorkLen(w)+fusedLen(w)) + 8*12*int64(h)
	}
	return ref + work
}

func checkImage(im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if im.Width < minSide || im.Height < minSide {
		return &zenmetrics.TooSmallError{Metric: zenmetrics.SSIMULACRA2, Width: im.Width, Height: im.Height,
			MinWidth: minSide, MinHeight: minSide}
	}
	return nil
}

// Prepare does the reference-only work: linearisation, the XYB pyramid and
// the reference's blurred statistics at every scale.
func Prepare(ref *zenmetrics.Image, cfg Config) (*Reference, error) {
	return PrepareContext(context.Background(), ref, cfg)
}

// PrepareContext is Prepare that gives up with ctx.Err() when ctx is done,
// checked between scales and channels.
func PrepareContext(ctx context.Context, ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r = &Reference{w: ref.Width, h: ref.Height, threads: cfg.threads(), simd: useSIMD, dims: scaleDims(ref.Width, ref.Height)}
	sc := newScratch(r.w, r.h, r.threads, r.simd)
	build := func(blend bool, bg float32) []refScale {
		if err != nil {
			return nil
		}
		var pyr []refScale
		pyr, err = r.buildPyramid(ctx, ref, blend, bg, sc)
		return pyr
	}
	if ref.Format.HasAlpha() {
		r.refAlpha = true
		if opaque(ref) {
			pyr := build(false, 0)
			r.views = []view{{bg: 0.1, pyr: pyr}, {bg: 0.9, pyr: pyr}}
		} else {
			r.views = []view{{bg: 0.1, pyr: build(true, 0.1)}, {bg: 0.9, pyr: build(true, 0.9)}}
		}
	} else {
		r.views = []view{{bg: 0.5, pyr: build(false, 0)}}
	}
	if err != nil {
		return nil, err
	}
	r.pool.Put(sc)
	return r, nil
}

// Release drops the prepared planes. Score afterwards returns
// zenmetrics.ErrReleased. It waits for running Score calls.
func (r *Reference) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	r.views = nil
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
// checked between scales and channels.
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
		sc = newScratch(r.w, r.h, r.threads, r.simd)
	}
	defer r.pool.Put(sc)

	blendDist := dist.Format.HasAlpha() && !opaque(dist)
	best := math.Inf(1)
	type key struct {
		pyr *refScale
		bg  float32
	}
	done := map[key]float64{}
	for _, v := range r.views {
		k := key{pyr: &v.pyr[0]}
		if blendDist {
			k.bg = v.bg
		}
		s, ok := done[k]
		if !ok {
			if s, err = r.scoreView(ctx, v, dist, blendDist, sc); err != nil {
				return 0, err
			}
			done[k] = s
		}
		best = min(best, s)
	}
	return best, nil
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

// firstScale converts im row by row to scale 0's positive XYB (into xyb)
// and to scale 1's linear planes (into sc.lin[0]), two input rows per
// output row of scale 1, without materialising scale 0's linear planes.
func (r *Reference) firstScale(im *zenmetrics.Image, blend bool, bg float32, xyb *[3][]float32, sc *scratch) {
	w, h := r.w, r.h
	w1, h1 := r.dims[1][0], r.dims[1][1]
	parallel.For(r.threads, h1, parallel.RowGrain(2*w), func(worker, lo, hi int) {
		buf := sc.rowbuf[worker][:6*w]
		a := [3][]float32{buf[0:w], buf[w : 2*w], buf[2*w : 3*w]}
		b := [3][]float32{buf[3*w : 4*w], buf[4*w : 5*w], buf[5*w : 6*w]}
		for oy := lo; oy < hi; oy++ {
			y0 := 2 * oy
			toLinearRow(im, y0, blend, bg, a[0], a[1], a[2])
			o := y0 * w
			xybRow(sc.simd, a[0], a[1], a[2], xyb[0][o:o+w], xyb[1][o:o+w], xyb[2][o:o+w])
			second := a
			if y1 := y0 + 1; y1 < h {
				toLinearRow(im, y1, blend, bg, b[0], b[1], b[2])
				o := y1 * w
				xybRow(sc.simd, b[0], b[1], b[2], xyb[0][o:o+w], xyb[1][o:o+w], xyb[2][o:o+w])
				second = b
			}
			for c := 0; c < 3; c++ {
				downsample2Row(a[c], second[c], sc.lin[0][c][oy*w1:(oy+1)*w1])
			}
		}
	})
}

// nextScale downsamples scale k-1's linear planes (in sc.lin[cur]) into
// the other buffer and returns its index; for k ≥ 2.
func (r *Reference) nextScale(k, cur int, sc *scratch) int {
	pw, ph := r.dims[k-1][0], r.dims[k-1][1]
	w := r.dims[k][0]
	src, dst := &sc.lin[cur], &sc.lin[1-cur]
	parallel.For(r.threads, r.dims[k][1], parallel.RowGrain(w), func(_, lo, hi int) {
		downsample2(src, dst, pw, ph, lo, hi)
	})
	return 1 - cur
}

func (r *Reference) xyb(lin, dst *[3][]float32, w, h int, simd bool) {
	parallel.For(r.threads, h, parallel.RowGrain(w), func(_, lo, hi int) {
		toXYB(lin, dst, w, lo, hi, simd)
	})
}

// blur writes the Gaussian blur of a (or of a·b when b is not nil) into
// dst, using sc.tmp between the horizontal and vertical passes.
func (r *Reference) blur(dst, a, b []float32, w, h int, sc *scratch) {
	if sc.simd {
		r.blurSIMD(dst, a, b, w, h, sc)
		return
	}
	g := blurSigma15
	tmp := sc.tmpPlane(w * h)
	r.hblur(tmp, a, b, w, h, sc)
	// Columns are independent, so narrower blocks (down to one cache line)
	// only change how the work is shared out, never the result.
	bw := colBlock
	for bw > 16 && (w+bw-1)/bw < 2*r.threads {
		bw /= 2
	}
	blocks := (w + bw - 1) / bw
	parallel.For(r.threads, blocks, max(1, 16384/(bw*max(h, 1))), func(_, lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			x0 := bk * bw
			g.blurCols(tmp, dst, w, h, x0, min(x0+bw, w))
		}
	})
}

// hblur is blur's horizontal pass (reference code): rows of a (times b)
// into tmp. Strips (strip.go) run it alone on a crop's rows.
func (r *Reference) hblur(tmp, a, b []float32, w, h int, sc *scratch) {
	if sc.simd {
		r.hblurSIMD(tmp, a, b, w, h, sc)
		return
	}
	g := blurSigma15
	parallel.For(r.threads, h, parallel.RowGrain(w), func(worker, lo, hi int) {
		for y := lo; y < hi; y++ {
			g.blurRowOf(a, b, tmp, w, y, sc.rowbuf[worker][:w])
		}
	})
}

// buildPyramid computes the reference's planes at every scale.
func (r *Reference) buildPyramid(ctx context.Context, ref *zenmetrics.Image, blend bool, bg float32, sc *scratch) ([]refScale, error) {
	pyr := make([]refScale, len(r.dims))
	cur := 0
	for k, d := range r.dims {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w, h := d[0], d[1]
		n := w * h
		if k >= 2 {
			cur = r.nextScale(k, cur, sc)
		}
		rs := &pyr[k]
		rs.w, rs.h = w, h
		big := make([]float32, 9*n)
		for c := 0; c < 3; c++ {
			rs.img[c] = big[(3*c+0)*n : (3*c+1)*n : (3*c+1)*n]
			rs.mu[c] = big[(3*c+1)*n : (3*c+2)*n : (3*c+2)*n]
			rs.vr[c] = big[(3*c+2)*n : (3*c+3)*n : (3*c+3)*n]
		}
		if k == 0 {
			r.firstScale(ref, blend, bg, &rs.img, sc)
		} else {
			lin := [3][]float32{sc.lin[cur][0][:n], sc.lin[cur][1][:n], sc.lin[cur][2][:n]}
			r.xyb(&lin, &rs.img, w, h, sc.simd)
		}
		if sc.fused != nil && fuseSIMD && r.threads <= 3 {
			// Streamed, a channel per goroutine (so not with more
			// threads: the plane-by-plane blurs below share out rows).
			parallel.For(r.threads, 3, 1, func(worker, lo, hi int) {
				for c := lo; c < hi; c++ {
					r.fusedStats(rs.img[c], rs.mu[c], rs.vr[c], w, h, sc, worker)
				}
			})
			continue
		}
		for c := 0; c < 3; c++ {
			r.blur(rs.mu[c], rs.img[c], nil, w, h, sc)
			r.blur(rs.vr[c], rs.img[c], rs.img[c], w, h, sc)
			mu, vr := rs.mu[c], rs.vr[c]
			parallel.For(r.threads, h, parallel.RowGrain(w), func(_, lo, hi int) {
				for i := lo * w; i < hi*w; i++ {
					vr[i] = vr[i] - float32(mu[i]*mu[i])
				}
			})
		}
	}
	return pyr, nil
}

// scoreView runs the distorted image's half against one reference view.
func (r *Reference) scoreView(ctx context.Context, v view, dist *zenmetrics.Image, blend bool, sc *scratch) (float64, error) {
	var norms [numScales][3][6]float64
	cur := 0
	for k, d := range r.dims {
		w, h := d[0], d[1]
		n := w * h
		if k >= 2 {
			cur = r.nextScale(k, cur, sc)
		}
		rs := &v.pyr[k]
		if k == 0 && r.streamFirst(sc) {
			if err := r.scoreFirst(ctx, rs, dist, blend, v.bg, sc); err != nil {
				return 0, err
			}
			for c := 0; c < 3; c++ {
				norms[k][c] = planeNorms(sc.rows[6*h*c:6*h*(c+1)], h, n)
			}
			continue
		}
		img2 := sc.imgPlanes(n)
		if k == 0 {
			r.firstScale(dist, blend, v.bg, &img2, sc)
		} else {
			lin := [3][]float32{sc.lin[cur][0][:n], sc.lin[cur][1][:n], sc.lin[cur][2][:n]}
			r.xyb(&lin, &img2, w, h, sc.simd)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if sc.fused != nil && fuseSIMD {
			// The channels are independent: on several goroutines they
			// are streamed side by side, each into its own row sums.
			parallel.For(r.threads, 3, 1, func(worker, lo, hi int) {
				for c := lo; c < hi; c++ {
					if ctx.Err() != nil {
						return
					}
					r.fusedTerms(sc.rows[6*h*c:6*h*(c+1)], rs.img[c], rs.mu[c], rs.vr[c], img2[c], w, h, sc, worker)
				}
			})
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			for c := 0; c < 3; c++ {
				norms[k][c] = planeNorms(sc.rows[6*h*c:6*h*(c+1)], h, n)
			}
			continue
		}
		for c := 0; c < 3; c++ {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			rows := sc.rows[:6*h]
			img1, mu1, vr1, im2 := rs.img[c], rs.mu[c], rs.vr[c], img2[c]
			mu2, s22, s12 := sc.statPlanes(n)
			r.blur(mu2, im2, nil, w, h, sc)
			r.blur(s22, im2, im2, w, h, sc)
			r.blur(s12, img1, im2, w, h, sc)
			terms := rowTerms
			if sc.simd {
				terms = simdTerms.Row
			}
			parallel.For(r.threads, h, parallel.RowGrain(w), func(_, lo, hi int) {
				for y := lo; y < hi; y++ {
					o := y * w
					terms(rows[6*y:6*y+6], img1[o:o+w], mu1[o:o+w], vr1[o:o+w],
						im2[o:o+w], mu2[o:o+w], s22[o:o+w], s12[o:o+w])
				}
			})
			norms[k][c] = planeNorms(rows, h, n)
		}
	}
	return finalScore(norms[:len(r.dims)]), nil
}

// planeNorms adds up a plane's row sums (6 per row, in row order) and
// turns them into the 1-norms and 4-norms of its three maps (n pixels).
func planeNorms(rows []float64, h, n int) [6]float64 {
	var tot [6]float64
	addRowSums(&tot, rows, h)
	return sumNorms(&tot, n)
}

// addRowSums adds h rows' sums (6 per row) to tot in row order; strips
// continue the same running sums from strip to strip.
func addRowSums(tot *[6]float64, rows []float64, h int) {
	for y := 0; y < h; y++ {
		for i := range tot {
			tot[i] += rows[6*y+i]
		}
	}
}

// sumNorms turns a plane's totals into its 1-norms and 4-norms.
func sumNorms(tot *[6]float64, n int) [6]float64 {
	onePerPixels := 1.0 / float64(n)
	return [6]float64{
		onePerPixels * tot[0],
		math.Sqrt(math.Sqrt(onePerPixels * tot[1])),
		onePerPixels * tot[2],
		math.Sqrt(math.Sqrt(onePerPixels * tot[3])),
		onePerPixels * tot[4],
		math.Sqrt(math.Sqrt(onePerPixels * tot[5])),
	}
}

// quartic is x⁴ with both products rounded: the conversion stops Go from
// fusing the last product into the caller's sum (ssim4 += x⁴ became an
// FMADD on arm64, which the spec allows), so arm64 scores equal amd64's.
func quartic(x float64) float64 {
	x *= x
	return float64(x * x)
}

// rowTerms adds up one row's SSIM error (d and d⁴) and edge differences
// (artifact, artifact⁴, detail lost, detail lost⁴) into out, with libjxl's
// mix of float32 and float64 arithmetic.
func rowTerms(out []float64, img1, mu1, vr1, img2, mu2, s22, s12 []float32) {
	var ssim, ssim4, art, art4, det, det4 float64
	n := len(img1)
	mu1, vr1, img2, mu2, s22, s12 = mu1[:n], vr1[:n], img2[:n], mu2[:n], s22[:n], s12[:n]
	for x := 0; x < n; x++ {
		m1, m2 := mu1[x], mu2[x]
		diff := m1 - m2
		numM := float32(1.0 - float64(float32(diff*diff)))
		numS := float32(2*float32(s12[x]-float32(m1*m2))) + ssimC2
		denS := float32(vr1[x]+float32(s22[x]-float32(m2*m2))) + ssimC2
		d := 1.0 - float64(float32(float32(numM*numS)/denS))
		d = max(d, 0)
		ssim += d
		ssim4 += quartic(d)

		e2 := float64(abs32(img2[x] - m2))
		e1 := float64(abs32(img1[x] - m1))
		d1 := (1.0+e2)/(1.0+e1) - 1.0
		a := max(d1, 0)
		l := max(-d1, 0)
		art += a
		art4 += quartic(a)
		det += l
		det4 += quartic(l)
	}
	out[0], out[1], out[2], out[3], out[4], out[5] = ssim, ssim4, art, art4, det, det4
}

func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// finalScore pools the norms with the 108 weights and maps the result to
// the SSIMULACRA2 scale. Weights are taken in sequence, as libjxl does, so
// with fewer than six scales later channels use earlier weights.
func finalScore(norms [][3][6]float64) float64 {
	ssim := 0.0
	i := 0
	for c := 0; c < 3; c++ {
		for k := range norms {
			t := &norms[k][c]
			for n := 0; n < 2; n++ {
				ssim += float64(weights[i] * math.Abs(t[n]))
				i++
				ssim += float64(weights[i] * math.Abs(t[2+n]))
				i++
				ssim += float64(weights[i] * math.Abs(t[4+n]))
				i++
			}
		}
	}
	ssim *= finalScale
	ssim = float64(float64(polyA*ssim)-float64(float64(polyB*ssim)*ssim)) +
		float64(float64(float64(polyC*ssim)*ssim)*ssim)
	if ssim > 0 {
		return 100.0 - float64(10.0*math.Pow(ssim, finalPow))
	}
	return 100.0
}
