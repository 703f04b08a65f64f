// Package cvvdp is the CPU reference implementation of ColorVideoVDP
// (Mantiuk et al. 2024) for still images, written to give the JOD scores of
// pycvvdp 0.5.4 (gfxdisp/ColorVideoVDP, tag v0.5.4, commit ac9cf0f; MIT
// licence) with its defaults: cvvdp(display_name="standard_4k").predict(
// test, reference, dim_order="HWC") on 8-bit sRGB arrays. The algorithm and
// constants were read from pycvvdp's source (params.go, csf_lut.go,
// colour.go, display.go say where each number comes from); no code was
// copied.
//
// # Pipeline (as pycvvdp runs it on an image)
//
//  1. Display model: code values / 255 (or / 65535) through the display's
//     EOTF to absolute linear RGB (cd/m²), plus the black level and the
//     reflected ambient light; then RGB → XYZ → LMS (CIE 2006) → DKL
//     (achromatic, red–green, yellow–violet).
//  2. A decimated Laplacian pyramid per channel (pyramid.go) with as many
//     bands as the display's pixels per degree call for (down to
//     0.2 cycles/degree), the base band included.
//  3. Weber contrast per band: the band divided by the enlarged coarser
//     level's achromatic channel (each image by its own), clamped at 1000;
//     the base band is divided by the image's mean achromatic level.
//  4. castleCSF sensitivities from the reference's local background
//     luminance and the band's frequency (csf.go).
//  5. Masking (mult-mutual): contrasts ×S×channel gain; the smaller of the
//     two images' magnitudes, blurred (σ = 3 px, phase uncertainty), to
//     the power q per channel and pooled across channels (cross-channel
//     masking); the difference to the power p over one plus it, softly
//     clamped. The base band is just |T − R|·S.
//  6. Pooling: a 2-norm over each band's pixels (mean), a 4-norm over
//     bands (the base band weighted), a 4-norm over channels, the
//     image-integration factor, and the JOD mapping 10 − a·Q^b.
//
// # Frames
//
// pycvvdp treats an image as a one-frame video. The code is arranged the
// same way: a frame is a set of channel planes (three for an image: the
// sustained achromatic, RG and YV channels; video adds a transient
// achromatic channel filtered over time), each frame gives per-channel,
// per-band pooled differences (scoreFrame), and poolJOD pools over bands,
// channels and frames. Video only needs a frame source with the temporal
// filters in front of scoreFrame and a fourth channel; the rest is
// unchanged.
//
// # Precision
//
// pycvvdp computes in float32 with torch; so does this package, operation
// for operation in the reference's order where it matters, with float64
// only for sums over pixels (torch's float32 reductions are pairwise and
// accurate to a few ulp; a float64 sum is at least as accurate, so the two
// agree to float32 rounding). Powers, logarithms and exponentials are
// evaluated in float64 and rounded to float32 (torch's are within 1 ulp).
// The Gaussian blur is applied separably (torchvision applies the 13×13
// outer-product kernel in one 2-D convolution). The result matches pycvvdp
// to about 1e-5 JOD (see the tests).
//
// # Input
//
// Any zenmetrics.Image format. Alpha is ignored (pycvvdp's image loader
// keeps the first three channels). Grey images take pycvvdp's one-channel
// path: the display model gives absolute luminance, which is used as is in
// all three channel slots (no colour transform), as pycvvdp does for an
// [H, W, 1] array and its loader for a grey PNG. (With an HLG display,
// where pycvvdp fails on one channel, grey goes through the OOTF as R = G =
// B.) Both images must be at least 2×2 (smaller, and pycvvdp's pyramid
// fails).
//
// Argument order matters: the reference's background luminance sets the
// sensitivities. Score(dist) against a reference prepared from ref is
// predict(test=dist, reference=ref).
package cvvdp

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
)

// MinSide is the smallest width and height pycvvdp accepts: its pyramid
// needs floor(log2(min side)) ≥ 1.
const MinSide = 2

// nCh is the number of channels of a still image: sustained achromatic,
// red–green, yellow–violet.
const nCh = 3

// Config tunes the CPU implementation.
type Config struct {
	// Threads is the number of goroutines used per call; 0 means
	// runtime.GOMAXPROCS(0). Scores are bit-identical for every value.
	Threads int
	// Display names the display model (DisplayNames); "" means
	// DefaultDisplay, standard_4k.
	Display string
	// DistMap asks Score for the distortion map as well (DistMap).
	DistMap bool
}

func (c Config) threads() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Reference is a prepared reference image.
type Reference struct {
	w, h    int
	threads int
	disp    Display
	ph      *photometry
	ppd     float64
	lay     layout
	distMap bool
	// bands[b] is what the reference contributes to band b.
	bands []refBand

	mu       sync.RWMutex
	released bool
	pool     sync.Pool // *scratch
}

// refBand holds, for a band below the base band, the reference's masked
// contrast R·S·gain and the sensitivity S per channel and pixel; for the
// base band, its contrast R and one S per channel.
type refBand struct {
	w, h int
	rho  float64
	rp   [nCh][]float32
	s    [nCh][]float32
	bbS  [nCh]float32
}

// Result is one scoring's outcome.
type Result struct {
	// JOD is the quality in just-objectionable differences: 10 for
	// identical images, lower for larger differences.
	JOD float64
	// DistMap is pycvvdp's "raw" heatmap (1 − JOD/10 of the per-pixel
	// differences, 0 where nothing differs), only when Config.DistMap.
	DistMap *zenmetrics.FloatPlane
}

// Display returns the display model in use.
func (r *Reference) Display() Display { return r.disp }

// PixelsPerDegree returns the display's pixels per degree.
func (r *Reference) PixelsPerDegree() float64 { return r.ppd }

// Width and Height report the reference's size.
func (r *Reference) Width() int  { return r.w }
func (r *Reference) Height() int { return r.h }

func checkImage(im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if im.Width < MinSide || im.Height < MinSide {
		return &zenmetrics.TooSmallError{Metric: zenmetrics.CVVDP, Width: im.Width, Height: im.Height,
			MinWidth: MinSide, MinHeight: MinSide}
	}
	return nil
}

// Prepare does the reference-only work.
func Prepare(ref *zenmetrics.Image, cfg Config) (*Reference, error) {
	return PrepareContext(context.Background(), ref, cfg)
}

// PrepareContext is Prepare that gives up with ctx.Err() when ctx is done,
// checked between bands.
func PrepareContext(ctx context.Context, ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	disp, err := LookupDisplay(cfg.Display)
	if err != nil {
		return nil, err
	}
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ph, err := newPhotometry(disp)
	if err != nil {
		return nil, err
	}
	w, h := ref.Width, ref.Height
	r = &Reference{w: w, h: h, threads: cfg.threads(), disp: disp, ph: ph, ppd: disp.PixelsPerDegree(), distMap: cfg.DistMap}
	lay, ok := newLayout(w, h, r.ppd)
	if !ok {
		return nil, fmt.Errorf("%w: cvvdp: %dx%d is too small for a pyramid", zenmetrics.ErrBadInput, w, h)
	}
	r.lay = lay
	sc := newScratch(&r.lay, r.threads, r.distMap)
	r.frameToPyramid(ref, sc)
	r.bands = make([]refBand, lay.n)
	for b := 0; b < lay.n; b++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.prepareBand(b, sc)
	}
	r.pool.Put(sc)
	return r, nil
}

// frameToPyramid converts im through the display model into DKL planes and
// builds their Gaussian pyramid in sc.g.
func (r *Reference) frameToPyramid(im *zenmetrics.Image, sc *scratch) {
	toDKL(im, r.ph, sc.g[0], r.threads)
	for l := 0; l+1 < r.lay.n; l++ {
		for c := 0; c < nCh; c++ {
			reduce(sc.g[l+1][c], sc.g[l][c], sc.tmp, r.lay.w[l], r.lay.h[l], r.threads)
		}
	}
}

// prepareBand computes the reference's part of band b from its Gaussian
// pyramid in sc.g.
func (r *Reference) prepareBand(b int, sc *scratch) {
	l := &r.lay
	rb := &r.bands[b]
	rb.w, rb.h = l.w[b], l.h[b]
	n := rb.w * rb.h
	if b == l.n-1 {
		rb.rho = basebandRho
		lb := basebandBkg(sc.g[b][0])
		logL := log10f(lb)
		for c := 0; c < nCh; c++ {
			rb.rp[c] = make([]float32, n)
			baseContrast(rb.rp[c], sc.g[b][c], lb, r.threads)
			row := csfRow(c, rb.rho)
			rb.bbS[c] = sensitivity(&row, logL)
		}
		return
	}
	rb.rho = l.freqs[b]
	var rows [nCh][lutN]float32
	for c := 0; c < nCh; c++ {
		rb.rp[c] = make([]float32, n)
		rb.s[c] = make([]float32, n)
		rows[c] = csfRow(c, rb.rho)
	}
	for c := 0; c < nCh; c++ {
		expand(sc.ex[c], sc.g[b+1][c], sc.tmp, l.w[b+1], l.h[b+1], rb.w, rb.h, r.threads)
	}
	mul := l.bandMul(b)
	g := &sc.g[b]
	w := rb.w
	parallel.For(r.threads, rb.h, parallel.RowGrain(w), func(worker, y0, y1 int) {
		buf := sc.rows[worker]
		lbRow, logL, v := buf[:w], buf[w:2*w], buf[2*w:3*w]
		for y := y0; y < y1; y++ {
			o := y * w
			for x := range lbRow {
				lbRow[x] = max(sc.ex[0][o+x], lBkgMin)
				logL[x] = log10f(lbRow[x])
			}
			for c := 0; c < nCh; c++ {
				for x := range v {
					v[x] = csfInterp(&rows[c], logL[x])
				}
				s := rb.s[c][o : o+w]
				exp10Row(s, v, f32SensCorr)
				rp := rb.rp[c][o : o+w]
				gc, ec := g[c][o:o+w], sc.ex[c][o:o+w]
				for x := range rp {
					ct := min((gc[x]-ec[x])/lbRow[x], contrastMax) * mul
					rp[x] = ct * s[x] * chGain[c]
				}
			}
		}
	})
}

// basebandBkg is the base band's background: the mean of the achromatic
// channel clamped at 0.01 (torch.mean in float32; summed here in float64).
func basebandBkg(y []float32) float32 {
	var s float64
	for _, v := range y {
		s += float64(max(v, lBkgMin))
	}
	return float32(s / float64(len(y)))
}

// baseContrast writes min(g / lb, 1000).
func baseContrast(dst, g []float32, lb float32, threads int) {
	for i, v := range g {
		dst[i] = min(v/lb, contrastMax)
	}
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
	r.bands = nil
	r.pool = sync.Pool{}
}

// Score compares dist with the prepared reference and returns the JOD.
func (r *Reference) Score(dist *zenmetrics.Image) (float64, error) {
	res, err := r.ScoreContext(context.Background(), dist)
	return res.JOD, err
}

// ScoreContext is Score that gives up with ctx.Err() when ctx is done,
// checked between bands, and returns the distortion map too when the
// reference was prepared with Config.DistMap.
func (r *Reference) ScoreContext(ctx context.Context, dist *zenmetrics.Image) (res Result, err error) {
	defer zenmetrics.Recover(&err)
	if r == nil {
		return Result{}, fmt.Errorf("%w: nil reference", zenmetrics.ErrBadInput)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return Result{}, zenmetrics.ErrReleased
	}
	if err := dist.Validate(); err != nil {
		return Result{}, err
	}
	if dist.Width != r.w || dist.Height != r.h {
		return Result{}, &zenmetrics.SizeMismatchError{RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	sc, _ := r.pool.Get().(*scratch)
	if sc == nil || (r.distMap && sc.heat == nil) {
		sc = newScratch(&r.lay, r.threads, r.distMap)
	}
	defer r.pool.Put(sc)
	r.frameToPyramid(dist, sc)
	q, err := r.scoreFrame(ctx, sc)
	if err != nil {
		return Result{}, err
	}
	res.JOD = poolJOD([]frameQ{q}, r.lay.n)
	if r.distMap {
		res.DistMap = r.heatmap(sc)
	}
	return res, nil
}

// Score prepares ref, scores dist against it and releases it.
func Score(ref, dist *zenmetrics.Image, cfg Config) (jod float64, err error) {
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
