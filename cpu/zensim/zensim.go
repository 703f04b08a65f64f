// Package zensim is the CPU implementation of zensim 0.2.7 (imazen/zensim,
// tag zensim-v0.2.7, commit 2894042d, MIT OR Apache-2.0) with its default
// profile, zensim-preview-v0.2. The code is written here from the
// algorithm below; only numbers (the 228 trained weights, the colour
// constants, the sRGB table) are transcribed, each marked with its source.
//
// # Algorithm
//
// All per-pixel arithmetic is float32 unless float64 is named; fma(a, b, c)
// is a·b + c rounded once, and no other product is fused with a sum (as in
// zensim's Rust). Go may fuse x·y + z on arm64 and GOAMD64=v3, so every
// product that feeds a sum here is wrapped in an explicit conversion, which
// forbids that; TestPublishedScores fails by up to 3e-3 without them.
//
//  1. XYB. Each pixel goes to linear light (8-bit: linear-srgb's table;
//     16-bit: its C0-continuous curve; alpha composited over zensim's
//     noise background), then to positive XYB (see xyb in color.go). The
//     planes are pw = paddedWidth(w) wide; columns past w mirror the image
//     and count as pixels in every statistic below.
//  2. Scales. Scale 0 is the XYB image; scale k+1 is (w/2) × (h/2) of
//     scale k, each pixel ((p00 + p01) + p10 + p11) × 0.25. At most 4
//     scales; a scale is used only if it is at least 8 × 8.
//  3. Per scale and channel, which features are computed depends on which
//     have a weight above 0.001 (zensim's active_channels): none, MSE
//     only, edge/HF/MSE, or everything. Features not computed are 0.
//  4. Blur: an 11-tap box (radius 5) with mirror (reflect-101) edges,
//     horizontal then vertical, as running sums: each row or column starts
//     from the mirrored window's sum and slides by (sum + in) − out. The
//     horizontal pass keeps sums of s, d, s²+d² (fma(s, s, fma(d, d, Σ)),
//     removals fma(−x, x, ·)) and s·d; outputs are sum × (1/11).
//  5. Strips. The vertical pass runs per strip of 16 output rows, on rows
//     [y−5, end+5) clipped to the image, with the strip as its whole
//     height (mirror at the strip's ends): the running sums therefore
//     depend on the strip layout, which this package reproduces exactly.
//  6. Per pixel: mu1, mu2, ssq, s12 the blurred values;
//     d = max(0, 1 − fma(m, −m, 1)·fma(2, fma(−mu1, mu2, s12), C2) /
//     (fma(−mu2, mu2, fma(−mu1, mu1, ssq)) + C2)) with m = mu1 − mu2 and
//     C2 = 0.0009; e = (1 + |d−mu2|)/(1 + |s−mu1|) − 1, artifact max(e, 0),
//     detail-lost max(−e, 0); sums of d, d², d⁴, d⁸ and maxima, the same
//     for artifact and detail-lost, Σ(s−mu1)², Σ(d−mu2)², Σ|s−mu1|,
//     Σ|d−mu2| and Σ(s−d)². Eight adjacent columns are summed in float32
//     as ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)) and added to float64 sums.
//  7. Pooling over the scale's N = pw_s × h_s pixels: mean, (mean d⁴)^¼,
//     (mean d²)^½ for SSIM, artifact and detail-lost; MSE; hf_energy_loss
//     max(0, 1 − Σ(d−mu2)²/Σ(s−mu1)²), hf_mag_loss (L1 likewise),
//     hf_energy_gain max(0, ratio − 1) (0 when the source mean is ≤ 1e−10);
//     peaks: max and (mean ·⁸)^⅛ of SSIM, artifact, detail-lost.
//  8. Score: distance = Σ weight_i · feature_i over 13 basic features per
//     channel per scale followed by 6 peak features per channel per
//     scale, divided by the number of scales; score = 100 − 18·distance^0.7
//     (100 when distance ≤ 0, and for identical images: zensim checks their
//     bytes, this package their XYB planes).
package zensim

import (
	"context"
	"fmt"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"
	"runtime"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

const (
	numScales   = 4
	numBasic    = 13 // basic features per channel
	numPeak     = 6  // peak features per channel
	numWeights  = numScales * 3 * (numBasic + numPeak)
	blurRadius  = 5
	stripInner  = 16 // zensim streaming.rs STRIP_INNER
	minDim      = MinSize
	scoreA      = 18.0
	scoreB      = 0.7
	ssimC2      = float32(0.0009)
	activeLimit = 0.001 // a feature group is computed if a weight exceeds this
)

// Config tunes the CPU implementation.
type Config struct {
	// Threads is the number of goroutines per call; 0 means
	// runtime.GOMAXPROCS(0). Scores are bit-identical for every value.
	Threads int
}

func (c Config) threads() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// mode is which features a channel needs at a scale.
type mode uint8

const (
	modeNone mode = iota
	modeMSE       // MSE only, no blur
	modeEdge      // edge, HF and MSE (mu only)
	modeFull      // everything
)

// modes is zensim's active_channels for the default weights.
var modes = func() (m [numScales][3]mode) {
	has := func(base, n int) bool {
		for i := base; i < base+n; i++ {
			if math.Abs(weights[i]) > activeLimit {
				return true
			}
		}
		return false
	}
	basicTotal := numScales * numBasic * 3
	for s := 0; s < numScales; s++ {
		for c := 0; c < 3; c++ {
			base := s*numBasic*3 + c*numBasic
			ssim := has(base, 3)
			hf := has(base+10, 3)
			edge := has(base+3, 6) || hf
			mse := has(base+9, 1)
			pb := basicTotal + s*18 + c*6
			if has(pb, 1) || has(pb+3, 1) {
				ssim = true
			}
			if has(pb+1, 2) || has(pb+4, 2) {
				edge = true
			}
			switch {
			case ssim:
				m[s][c] = modeFull
			case edge:
				m[s][c] = modeEdge
			case mse:
				m[s][c] = modeMSE
			}
		}
	}
	return m
}()

// MinSize is the smallest width and height zensim accepts.
const MinSize = 8

type dim struct{ w, h int }

// scaleDims lists the plane sizes of the scales used for a w×h image.
func scaleDims(w, h int) []dim {
	d := dim{paddedWidth(w), h}
	var dims []dim
	for s := 0; s < numScales; s++ {
		if d.w < minDim || d.h < minDim {
			break
		}
		dims = append(dims, d)
		d = dim{d.w / 2, d.h / 2}
	}
	return dims
}

type planes [3][]float32

// pyramid is one image's XYB planes at every scale.
type pyramid []planes

func newPyramid(dims []dim) pyramid {
	var n int
	for _, d := range dims {
		n += 3 * d.w * d.h
	}
	big := make([]float32, n)
	p := make(pyramid, len(dims))
	for s, d := range dims {
		k := d.w * d.h
		for c := 0; c < 3; c++ {
			p[s][c] = big[:k:k]
			big = big[k:]
		}
	}
	return p
}

func pyramidBytes(dims []dim) int64 {
	var n int64
	for _, d := range dims {
		n += 3 * 4 * int64(d.w) * int64(d.h)
	}
	return n
}

// Reference is a prepared reference image: its XYB pyramid. It is safe for
// concurrent Score calls.
type Reference struct {
	w, h    int
	threads int
	dims    []dim
	ref     pyramid

	mu       sync.RWMutex
	released bool

	idleMu sync.Mutex
	idle   *scratch
}

// scratch is one scoring's working memory: the distorted pyramid and each
// worker's strip buffers.
type scratch struct {
	dist  pyramid
	strip [][]float32
}

// stripFloats is one worker's strip buffer: 4 horizontally blurred planes
// of the tallest strip (16 + 2·5 rows).
func stripFloats(w int) int { return 4 * (stripInner + 2*blurRadius) * w }

func (r *Reference) newScratch() *scratch {
	sc := &scratch{dist: newPyramid(r.dims), strip: make([][]float32, r.threads)}
	for i := range sc.strip {
		sc.strip[i] = make([]float32, stripFloats(r.dims[0].w))
	}
	return sc
}

// EstimateBytes is the heap a prepared w×h reference plus one concurrent
// scoring uses with runtime.GOMAXPROCS(0) threads: two XYB pyramids (4
// bytes × 3 planes × the padded pixels of every scale), each thread's
// strip buffers and the per-strip sums.
func EstimateBytes(w, h int) int64 {
	if w < minDim || h < minDim {
		return 0
	}
	dims := scaleDims(w, h)
	p := pyramidBytes(dims)
	threads := int64(runtime.GOMAXPROCS(0))
	var strips int64 // per-strip sums, one set per scale
	for _, d := range dims {
		strips += int64((d.h + stripInner - 1) / stripInner)
	}
	return 2*p + threads*4*int64(stripFloats(dims[0].w)) + strips*3*int64(accBytes)
}

// Prepare does the reference-only work: the reference's XYB pyramid.
func Prepare(ref *zenmetrics.Image, cfg Config) (*Reference, error) {
	return PrepareContext(context.Background(), ref, cfg)
}

// PrepareContext is Prepare that gives up with ctx.Err() when ctx is done.
func PrepareContext(ctx context.Context, ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if ref.Width < minDim || ref.Height < minDim {
		return nil, fmt.Errorf("%w: zensim needs at least %d×%d pixels, got %d×%d",
			zenmetrics.ErrBadInput, minDim, minDim, ref.Width, ref.Height)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r = &Reference{w: ref.Width, h: ref.Height, threads: cfg.threads(), dims: scaleDims(ref.Width, ref.Height)}
	r.ref = newPyramid(r.dims)
	if err := r.buildPyramid(ctx, ref, r.ref); err != nil {
		return nil, err
	}
	return r, nil
}

// buildPyramid converts im to XYB into p[0] and downscales into the rest.
func (r *Reference) buildPyramid(ctx context.Context, im *zenmetrics.Image, p pyramid) error {
	pw := r.dims[0].w
	chunks := (r.h + chunkRows - 1) / chunkRows
	parallel.Each(r.threads, chunks, func(_, i int) {
		toXYB(im, p[0], pw, i*chunkRows, min((i+1)*chunkRows, r.h))
	})
	for s := 1; s < len(r.dims); s++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, dst, sw, d := p[s-1], p[s], r.dims[s-1].w, r.dims[s]
		parallel.Each(r.threads, 3*d.h, func(_, i int) {
			c, y := i/d.h, i%d.h
			downscaleRow(src[c], dst[c], sw, d.w, y)
		})
	}
	return nil
}

// downscaleRow writes row y of the half-size plane.
func downscaleRow(src, dst []float32, sw, dw, y int) {
	r0 := src[2*y*sw:]
	r1 := src[(2*y+1)*sw:]
	out := dst[y*dw : (y+1)*dw]
	for x := range out {
		out[x] = float32(float32(float32(r0[2*x]+r0[2*x+1])+r1[2*x]+r1[2*x+1]) * 0.25)
	}
}

// Release frees the reference; later Score calls fail with ErrReleased.
func (r *Reference) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	r.ref = nil
	r.idleMu.Lock()
	r.idle = nil
	r.idleMu.Unlock()
}

func (r *Reference) Width() int  { return r.w }
func (r *Reference) Height() int { return r.h }

// Result is a comparison's score with the raw weighted distance and the
// 228 features (zero where zensim skips them), for checking stage by stage.
type Result struct {
	Score    float64
	Distance float64
	Features []float64
}

// Score compares dist with the prepared reference and returns zensim's
// score (100 for identical images, lower is worse, negative for extreme
// distortions). It gives up with ctx.Err() when ctx is done, checked
// between scales.
func (r *Reference) Score(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	res, err := r.ScoreDetail(ctx, dist)
	if err != nil {
		return 0, err
	}
	return res.Score, nil
}

// ScoreDetail is Score with the distance and the feature vector.
func (r *Reference) ScoreDetail(ctx context.Context, dist *zenmetrics.Image) (res *Result, err error) {
	defer zenmetrics.Recover(&err)
	if r == nil {
		return nil, fmt.Errorf("%w: nil reference", zenmetrics.ErrBadInput)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	if err := dist.Validate(); err != nil {
		return nil, err
	}
	if dist.Width != r.w || dist.Height != r.h {
		return nil, &zenmetrics.SizeMismatchError{RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.idleMu.Lock()
	sc := r.idle
	r.idle = nil
	r.idleMu.Unlock()
	if sc == nil {
		sc = r.newScratch()
	}
	defer func() {
		r.idleMu.Lock()
		r.idle = sc
		r.idleMu.Unlock()
	}()
	if err := r.buildPyramid(ctx, dist, sc.dist); err != nil {
		return nil, err
	}
	if identical(r.ref[0], sc.dist[0]) {
		return &Result{Score: 100, Features: make([]float64, numWeights)}, nil
	}
	stats := make([]scaleStats, len(r.dims))
	for s := range r.dims {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stats[s] = r.scale(s, sc)
	}
	return combine(stats), nil
}

// identical reports whether two images' XYB planes are the same bits:
// zensim scores byte-identical images exactly 100 without computing
// (features computed on them would be 0 up to rounding); identical planes
// cover that case without keeping the caller's reference image.
func identical(a, b planes) bool {
	for c := range a {
		x, y := a[c], b[c]
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
	}
	return true
}

// Compare prepares ref, scores dist against it and releases it.
func Compare(ref, dist *zenmetrics.Image, cfg Config) (value float64, err error) {
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
	return r.Score(context.Background(), dist)
}
