package ssim2

import (
	"context"
	"fmt"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/zenmetrics-go/zenmetrics"
)

// SSIMULACRA2 in horizontal strips, for pairs whose working set does not
// fit the memory budget at once (the CPU backend's fallback; the GPU has
// its own in gpu/webgpu/ssim2, whose analysis this follows).
//
// Why a halo alone is not enough: libjxl's recursive Gaussian runs three
// second-order recursions whose poles lie on the unit circle; with float32
// coefficients and float32 rounding nothing damps what a row leaves in the
// state, so a vertically blurred value depends (by ~1e-7 of its size per
// row) on every row above it, and sigma − mu² amplifies that against
// C2 = 0.0009. The GPU measured restarted crops with a 160-row halo 2e-3
// to 0.11 away from the full score (gpu/webgpu/ssim2/halo.go). So, as the
// GPU does, the vertical recursion is not restarted: each plane's filter
// states (per scale, channel and blur) are carried from strip to strip, and
// strips run top to bottom. Each strip resumes at its first interior row
// with exactly the state the full image has there.
//
// The halo then only has to give the recursion its inputs bit for bit:
// output row n reads the horizontal pass's rows n − N − 1 and n + N − 1
// (N = 5 for sigma 1.5), so at every scale N + 1 = 6 rows above the
// interior and N − 1 = 4 below must be the full image's. Scale k is the
// 2×2 box mean of scale k − 1, so with band edges and crop edges on
// multiples of 2^5 = 32 rows every row of every scale is the same block of
// full rows as in the full image (a crop ending at the image's last row is
// the full image's end). The deepest scale sets the halo: 6·32 = 192 rows
// above, 4·32 = 128 below. Horizontal blurs, colour conversion and
// downsampling are per row, so every interior value of every plane equals
// the full image's bit for bit, and the error terms' row sums, added in
// row order across strips into one running total per plane, are the full
// image's sums in the full image's order: strip scores equal whole-image
// scores exactly, on the reference and on the fast path (strip_test.go
// checks it, with 1e-6, the GPU strips' contract, as the allowance).
//
// StripReference holds only the image: each Score computes both images'
// crops strip by strip, so one strip's working set (StripBytes) is live
// beside the two images. The halo rows are computed twice and the fast
// path's vertical pass runs row by row over whole planes (not fused with
// the error terms), so a Score costs more than preparing and scoring the
// whole image: measured on a 1024×2048 pair (2 cores, best of 3) 1.05×
// (reference path) and 1.5× (fast path) with 1024-row bands, 1.6× with
// 256-row bands, 3.4–4.1× with 64-row bands, for 68, 29 and 20 MiB of
// scratch instead of 159 MiB. The planner picks the widest band that fits.

// stripAlign is the row alignment of band and crop edges: one row of the
// coarsest scale.
const stripAlign = 1 << (numScales - 1)

// stripRadius is the blur's N for sigma 1.5 (checked against the filter in
// the tests).
const stripRadius = 5

// The halo above and below a strip's interior, in full rows.
const (
	stripHaloAbove = (stripRadius + 1) * stripAlign
	stripHaloBelow = (stripRadius - 1) * stripAlign
)

// StripAlign is the granularity of strip bands: a band is a positive
// multiple of it.
func StripAlign() int { return stripAlign }

// stripGeom is one strip: interior rows [y0, y1) and crop rows [c0, c1)
// of the full image.
type stripGeom struct{ y0, y1, c0, c1 int }

func stripAt(h, band, y0 int) stripGeom {
	y1 := min(y0+band, h)
	return stripGeom{y0: y0, y1: y1, c0: max(0, y0-stripHaloAbove), c1: min(h, y1+stripHaloBelow)}
}

// rowsAt is the row range at scale k (of height hk) of full rows [a, b):
// a is a multiple of 32, b one too or the image's last row.
func rowsAt(a, b, h, hk, k int) (lo, hi int) {
	lo = a >> k
	if b == h {
		return lo, hk
	}
	return lo, b >> k
}

// stripLayout is the largest crop and interior, per scale, over a w×h
// image's strips of band rows: what the scratch is sized for.
// Its tables are arrays so that StripBytes, which the memory planner calls
// for many bands before refusing a pair, allocates nothing.
type stripLayout struct {
	dims          [numScales][2]int
	K             int            // the number of scales
	crop, inner   [numScales]int // rows per scale
	threads, band int
	simd          bool
}

func newStripLayout(w, h, band, threads int, simd bool) stripLayout {
	l := stripLayout{threads: threads, band: band, simd: simd}
	// scaleDims, without its slice.
	l.dims[0], l.K = [2]int{w, h}, 1
	for l.K < numScales {
		last := l.dims[l.K-1]
		if last[0] < minSide || last[1] < minSide {
			break
		}
		l.dims[l.K] = [2]int{(last[0] + 1) / 2, (last[1] + 1) / 2}
		l.K++
	}
	for y0 := 0; y0 < h; y0 += band {
		g := stripAt(h, band, y0)
		for k, d := range l.dims[:l.K] {
			c0, c1 := rowsAt(g.c0, g.c1, h, d[1], k)
			i0, i1 := rowsAt(g.y0, g.y1, h, d[1], k)
			if g.y0 == 0 {
				i0 = 1 - stripRadius // the warm-up rows above the image
			}
			l.crop[k] = max(l.crop[k], c1-c0)
			l.inner[k] = max(l.inner[k], i1-i0)
		}
	}
	return l
}

// stripScratch is one strip's working set, reused by every strip.
type stripScratch struct {
	sc     scratch                    // lin, rowbuf, simdbuf: as for a full image
	x1, x2 [numScales][3][]float32    // per scale: the crops' positive XYB
	tmp    []float32                  // horizontal pass over a crop (+ padding)
	out    [5][]float32               // vertical pass over an interior, rows of w8
	junk   []float32                  // the warm-up rows' outputs (w8)
	rows   []float64                  // error-term sums, 6 per interior row
	st     [numScales][3][5][]float32 // filter states per scale, channel, blur
	refIm  zenmetrics.Image           // crop views, reused
	distIm zenmetrics.Image
	crop   Reference // a Reference of the crop's size, for the per-row code
}

// alloc hands out the scratch's slices, or (with count set) only adds up
// their bytes: StripBytes and the allocation share one description.
type alloc struct {
	count bool
	bytes int64
}

func (a *alloc) f32(n int) []float32 {
	a.bytes += heapSize(4 * int64(n))
	if a.count {
		return nil
	}
	return make([]float32, n)
}

func (a *alloc) f64(n int) []float64 {
	a.bytes += heapSize(8 * int64(n))
	if a.count {
		return nil
	}
	return make([]float64, n)
}

// heapSize bounds what the Go heap takes for an n-byte object: small
// objects are rounded up to a size class (at most 1/8 more, plus a
// little for the smallest), large ones to whole 8 KiB pages.
func heapSize(n int64) int64 {
	if n <= 32<<10 {
		return n + n/8 + 16
	}
	return (n + 8<<10 - 1) &^ (8<<10 - 1)
}

// stripFixedBytes covers the small allocations besides the planes (slice
// headers of the per-scale tables, the crop Reference and image views,
// parallelFor's goroutines and closures, the views' map).
const stripFixedBytes = 128 << 10

// fill gives s its slices from a (with a.count, nil ones: only the bytes
// are added up, and nothing is allocated).
func (l *stripLayout) fill(w int, a *alloc, s *stripScratch) {
	n1, n2 := linSizes(w, l.crop[0])
	for c := 0; c < 3; c++ {
		s.sc.lin[0][c] = a.f32(n1)
		s.sc.lin[1][c] = a.f32(n2)
	}
	s.sc.simd = l.simd
	a.bytes += 2 * heapSize(24*int64(l.threads)) // the per-worker tables
	if !a.count {
		s.sc.rowbuf = make([][]float32, l.threads)
		s.sc.simdbuf = make([][]float32, l.threads)
	}
	for i := 0; i < l.threads; i++ {
		rb := a.f32(6 * w)
		var sb []float32
		if l.simd {
			sb = a.f32(simdWorkLen(w))
		}
		if !a.count {
			s.sc.rowbuf[i], s.sc.simdbuf[i] = rb, sb
		}
	}
	for k, d := range l.dims[:l.K] {
		w8 := (d[0] + 7) &^ 7
		for c := 0; c < 3; c++ {
			s.x1[k][c] = a.f32(d[0] * l.crop[k])
			s.x2[k][c] = a.f32(d[0] * l.crop[k])
			for b := range s.st[k][c] {
				s.st[k][c][b] = a.f32(6 * w8)
			}
		}
	}
	w8 := (w + 7) &^ 7
	s.tmp = a.f32(w*l.crop[0] + w8)
	for b := range s.out {
		s.out[b] = a.f32(w8 * l.inner[0])
	}
	s.junk = a.f32(w8)
	s.rows = a.f64(6 * l.inner[0])
	a.bytes += stripFixedBytes
}

// StripBytes is the heap one Score of a StripReference of a w×h image in
// strips of band rows allocates (the images themselves not counted), on
// GOMAXPROCS threads as EstimateBytes assumes.
func StripBytes(w, h, band int) int64 {
	if w <= 0 || h <= 0 || band <= 0 {
		return 0
	}
	l := newStripLayout(w, h, band, runtime.GOMAXPROCS(0), useSIMD)
	a := alloc{count: true}
	var s stripScratch
	l.fill(w, &a, &s)
	return a.bytes + 2*l.stripGarbage(h)
}

// stripGarbage is what one view's pass over the strips allocates besides
// the scratch: per strip, 37·K − 4 parallelFor calls (conversion and
// downsampling of both crops, then per scale and channel five horizontal
// and five vertical passes and the error terms), each leaving its
// closures, WaitGroup and goroutines (measured 32 B on 1 goroutine, 184 on
// 2, 293 on 4, 474 on 8, 884 on 16; counted as 112 + 56 per goroutine),
// and some small values (the crops' plane tables; 8 KiB counted, about
// three times what was measured). It is garbage, not live memory,
// but it is counted so that StripBytes bounds what a Score allocates; a
// reference with alpha has two views, so StripBytes counts two.
func (l *stripLayout) stripGarbage(h int) int64 {
	strips := int64((h + l.band - 1) / l.band)
	calls := int64(37*l.K - 4)
	return strips * (calls*(112+56*int64(l.threads)) + 8<<10)
}

// StripBand is the largest band (a multiple of StripAlign, at most the
// image's height rounded up) whose StripBytes fits in budget, or 0 when
// none does. StripBytes is not monotonic in the band (narrower bands mean
// smaller planes but more strips, each leaving some garbage), so every
// band is tried from the widest down; h/32 layouts of h/band strips each
// cost microseconds.
func StripBand(w, h int, budget int64) int {
	if w <= 0 || h <= 0 {
		return 0
	}
	for band := (h + stripAlign - 1) &^ (stripAlign - 1); band >= stripAlign; band -= stripAlign {
		if StripBytes(w, h, band) <= budget {
			return band
		}
	}
	return 0
}

// MinStripBytes is the least StripBytes over every band: below it (plus
// the images) a w×h pair cannot be scored on the CPU at all.
func MinStripBytes(w, h int) int64 {
	least := int64(math.MaxInt64)
	for band := stripAlign; band < h+stripAlign; band += stripAlign {
		least = min(least, StripBytes(w, h, band))
	}
	return least
}

// StripReference is a reference scored in strips: it holds the image only
// (both images' crops are computed afresh by every Score, see above).
type StripReference struct {
	ref     atomic.Pointer[zenmetrics.Image] // nil once released
	threads int
	band    int
	simd    bool
}

// PrepareStrips returns a reference that scores in strips of band rows (a
// positive multiple of StripAlign); it copies nothing (ref must stay
// unchanged while it is used).
func PrepareStrips(ref *zenmetrics.Image, cfg Config, band int) (*StripReference, error) {
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	if band <= 0 || band%stripAlign != 0 {
		return nil, fmt.Errorf("%w: ssim2: strip band %d is not a positive multiple of %d rows", zenmetrics.ErrBadInput, band, stripAlign)
	}
	s := &StripReference{threads: cfg.threads(), band: band, simd: useSIMD}
	s.ref.Store(ref)
	return s, nil
}

// Band is the interior rows of each strip.
func (s *StripReference) Band() int { return s.band }

// Release drops the reference image.
func (s *StripReference) Release() { s.ref.Store(nil) }

// Score compares dist with the reference strip by strip.
func (s *StripReference) Score(ctx context.Context, dist *zenmetrics.Image) (score float64, err error) {
	defer zenmetrics.Recover(&err)
	ref := s.ref.Load()
	if ref == nil {
		return 0, zenmetrics.ErrReleased
	}
	if err := dist.Validate(); err != nil {
		return 0, err
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	w, h := ref.Width, ref.Height
	l := newStripLayout(w, h, s.band, s.threads, s.simd)
	sc := new(stripScratch)
	l.fill(w, &alloc{}, sc)
	// The views as Reference.ScoreContext forms them: a reference with
	// alpha is scored on backgrounds 0.1 and 0.9 (its pyramid shared when
	// it is opaque), one without on 0.5; a distorted image with real
	// transparency is composited on the view's background.
	bgs := []float32{0.5}
	refBlend := false
	if ref.Format.HasAlpha() {
		bgs = []float32{0.1, 0.9}
		refBlend = !opaque(ref)
	}
	distBlend := dist.Format.HasAlpha() && !opaque(dist)
	best := math.Inf(1)
	var prev float64
	for i, bg := range bgs {
		if i > 0 && !refBlend && !distBlend {
			best = min(best, prev) // the same computation again
			continue
		}
		v, err := s.scoreStrips(ctx, &l, sc, ref, dist, refBlend, distBlend, bg)
		if err != nil {
			return 0, err
		}
		prev = v
		best = min(best, v)
	}
	return best, nil
}

// blurInputs are the five blurs per channel: mu1, img1², mu2, img2²,
// img1·img2 (0 and 1 form the reference's variance).
const (
	bMu1 = iota
	bS11
	bMu2
	bS22
	bS12
)

// scoreStrips is one view's score, strip by strip from the top.
func (s *StripReference) scoreStrips(ctx context.Context, l *stripLayout, sc *stripScratch, ref, dist *zenmetrics.Image,
	refBlend, distBlend bool, bg float32) (float64, error) {
	w, h := ref.Width, ref.Height
	K := l.K
	tot := make([][3][6]float64, K)
	sets := make([]int, K)
	for k := range sc.st {
		for c := range sc.st[k] {
			for b := range sc.st[k][c] {
				clear(sc.st[k][c][b])
			}
		}
	}
	cr := &sc.crop
	cr.w, cr.threads, cr.simd = w, s.threads, s.simd
	cr.dims = make([][2]int, K)
	for y0 := 0; y0 < h; y0 += s.band {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		g := stripAt(h, s.band, y0)
		cropRows(&sc.refIm, ref, g.c0, g.c1)
		cropRows(&sc.distIm, dist, g.c0, g.c1)
		cr.h = g.c1 - g.c0
		for k, d := range l.dims[:K] {
			c0, c1 := rowsAt(g.c0, g.c1, h, d[1], k)
			cr.dims[k] = [2]int{d[0], c1 - c0}
		}
		s.cropPyramid(cr, &sc.refIm, refBlend, bg, &sc.x1, sc)
		s.cropPyramid(cr, &sc.distIm, distBlend, bg, &sc.x2, sc)
		for k, d := range l.dims[:K] {
			wk, hk := d[0], d[1]
			c0, _ := rowsAt(g.c0, g.c1, h, hk, k)
			i0, i1 := rowsAt(g.y0, g.y1, h, hk, k)
			start := i0
			if g.y0 == 0 {
				start = 1 - stripRadius
			}
			for c := 0; c < 3; c++ {
				if err := ctx.Err(); err != nil {
					return 0, err
				}
				x1, x2 := sc.x1[k][c], sc.x2[k][c]
				in := [5][2][]float32{{x1, nil}, {x1, x1}, {x2, nil}, {x2, x2}, {x1, x2}}
				for b, p := range in {
					cr.hblur(sc.tmp, p[0], p[1], wk, cr.dims[k][1], &sc.sc)
					cr.vblur(sc.tmp, sc.out[b], sc.junk, sc.st[k][c][b], sets[k], wk, hk, c0, start, i1)
				}
				s.stripTerms(cr, &tot[k][c], sc, k, c, wk, c0, i0, i1)
			}
			sets[k] ^= (i1 - start) & 1
		}
	}
	norms := make([][3][6]float64, K)
	for k, d := range l.dims[:K] {
		for c := 0; c < 3; c++ {
			norms[k][c] = sumNorms(&tot[k][c], d[0]*d[1])
		}
	}
	return finalScore(norms), nil
}

// cropRows points dst at rows [c0, c1) of im, sharing its pixels.
func cropRows(dst, im *zenmetrics.Image, c0, c1 int) {
	bpp := im.Format.BytesPerPixel()
	*dst = zenmetrics.Image{Width: im.Width, Height: c1 - c0, Format: im.Format, Stride: im.Stride,
		Pix: im.Pix[c0*im.Stride : (c1-1)*im.Stride+im.Width*bpp]}
}

// cropPyramid is buildPyramid's first half for a crop (whose Reference cr
// has the crop's per-scale sizes): its positive XYB at every scale.
func (s *StripReference) cropPyramid(cr *Reference, im *zenmetrics.Image, blend bool, bg float32, xyb *[numScales][3][]float32, sc *stripScratch) {
	cur := 0
	for k, d := range cr.dims {
		n := d[0] * d[1]
		if k >= 2 {
			cur = cr.nextScale(k, cur, &sc.sc)
		}
		dst := [3][]float32{xyb[k][0][:n], xyb[k][1][:n], xyb[k][2][:n]}
		if k == 0 {
			cr.firstScale(im, blend, bg, &dst, &sc.sc)
		} else {
			lin := [3][]float32{sc.sc.lin[cur][0][:n], sc.sc.lin[cur][1][:n], sc.sc.lin[cur][2][:n]}
			cr.xyb(&lin, &dst, d[0], d[1], sc.sc.simd)
		}
	}
}

// vblur is the vertical pass for output rows [start, end) of a plane of
// height hk (full-image row numbers) whose horizontal pass is in tmp from
// row c0 on (stride w), resuming from the filter states st (VRow's layout,
// set as VRow's) and writing rows from max(start, 0) on into out (stride
// w8, the first interior row at out's start; the rows above the image,
// which only warm the states up, into junk). The arithmetic is blurCols's
// on the reference path and the cpusimd kernels' on the fast path, so the
// values are the full image's bit for bit.
func (r *Reference) vblur(tmp, out, junk, st []float32, set, w, hk, c0, start, end int) {
	N := stripRadius
	w8 := (w + 7) &^ 7
	groups := w8 / 8
	o0 := max(start, 0)
	gb := colBlock / 8
	for gb > 2 && (groups+gb-1)/gb < 2*r.threads {
		gb /= 2
	}
	blocks := (groups + gb - 1) / gb
	parallel.For(r.threads, blocks, max(1, 2048/(gb*8*max(end-start, 1))), func(_, lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			g0, g1 := bk*gb, min((bk+1)*gb, groups)
			x0, nx := 8*g0, 8*(g1-g0)
			stb := st[48*g0 : 48*g1]
			set := set
			for n := start; n < end; n++ {
				var top, bot []float32
				if t := n - N - 1; t >= 0 {
					top = tmp[(t-c0)*w+x0:]
				}
				if t := n + N - 1; t < hk {
					bot = tmp[(t-c0)*w+x0:]
				}
				o := junk[x0 : x0+nx]
				if n >= 0 {
					o = out[(n-o0)*w8+x0 : (n-o0)*w8+x0+nx]
				}
				if r.simd {
					simdBlur.VRow(top, bot, o, stb, nx, set)
				} else {
					vrowRef(top, bot, o, stb, min(nx, w-x0), set)
				}
				set ^= 1
			}
		}
	})
}

// vrowRef is one row of blurCols's recursion for the first n columns, on
// states in cpusimd.VRow's layout (columns 8g…8g+7 at st[48g:], filter k
// of set s at st[48g+8(3s+k):]; set s holds y[n−1], the other y[n−2]).
func vrowRef(top, bot, out, st []float32, n, set int) {
	c := blurSigma15Wide
	for x := 0; x < n; x++ {
		var sv float64
		switch {
		case top != nil && bot != nil:
			sv = float64(top[x] + bot[x])
		case bot != nil:
			sv = float64(bot[x])
		case top != nil:
			sv = float64(top[x])
		}
		g := 48*(x/8) + x%8
		var y [3]float32
		for k := 0; k < 3; k++ {
			cur := &st[g+8*(3*set+k)]
			old := &st[g+8*(3*(1-set)+k)]
			y[k] = float32(c.n2[k]*sv - r32(c.d1[k]*float64(*cur)+float64(*old)))
			*old = y[k]
		}
		out[x] = y[0] + (y[1] + y[2])
	}
}

// stripTerms adds the error terms of interior rows [i0, i1) of channel c
// at scale k to tot, in row order.
func (s *StripReference) stripTerms(cr *Reference, tot *[6]float64, sc *stripScratch, k, c, w, c0, i0, i1 int) {
	w8 := (w + 7) &^ 7
	m := i1 - i0
	img1, img2 := sc.x1[k][c], sc.x2[k][c]
	mu1, vr1, mu2, s22, s12 := sc.out[bMu1], sc.out[bS11], sc.out[bMu2], sc.out[bS22], sc.out[bS12]
	rows := sc.rows[:6*m]
	terms := rowTerms
	if cr.simd {
		terms = simdTerms.Row
	}
	parallel.For(cr.threads, m, parallel.RowGrain(w), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			o, p := i*w8, (i0+i-c0)*w
			mu, vr := mu1[o:o+w], vr1[o:o+w]
			for x := range vr {
				vr[x] = vr[x] - float32(mu[x]*mu[x])
			}
			terms(rows[6*i:6*i+6], img1[p:p+w], mu, vr, img2[p:p+w], mu2[o:o+w], s22[o:o+w], s12[o:o+w])
		}
	})
	addRowSums(tot, rows, m)
}
