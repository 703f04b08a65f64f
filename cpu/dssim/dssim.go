// Package dssim is the CPU reference implementation of DSSIM as
// kornelski/dssim's crate dssim-core 3.4.0 (git tag 3.4.0, commit c86745c4,
// AGPL-3.0) computes it with its default configuration, fed the way the
// `dssim` 3.4.0 tool loads PNG files. The code is written here from the
// algorithm described below; only numeric constants are transcribed, each
// marked with its source. The GPU implementation follows this description,
// so it is complete: every step, order and constant that moves the score.
//
// # Algorithm
//
// Notation: all per-pixel arithmetic is float32 unless float64 is named.
// fma(a, b, c) is a·b + c rounded once. Planes are row-major.
//
//  1. Linear light. Each 8-bit (16-bit) sample v becomes s = v / 255
//     (v / 65535) in float32, then s / 12.92 if s ≤ 0.04045, else
//     ((s + 0.055) / 1.055)^2.4 (float32 powf, exponent 2.4 as float32);
//     both are precomputed lookup tables. Grey images become R = G = B.
//     Images with alpha: α = a / 255 (a / 65535) in float32, and R, G, B
//     are multiplied by α (premultiplied linear light); α is kept as a
//     fourth plane. Images without alpha have no α plane at all (this
//     matters: they are never composited, see 3).
//  2. Scales. Scale 0 is the image. Scale k+1 exists only if scale k is at
//     least 8 pixels wide and 8 high; it is (w/2) × (h/2) (integer
//     division: an odd last column or row is dropped), each pixel the mean
//     of a 2×2 block of scale k's linear planes (α included), computed as
//     ((p00 + p01) + p10 + p11) × 0.25 with p00, p01 the top row. At most 5
//     scales are used (dssim-core builds a sixth, which nothing reads).
//  3. L*a*b* per scale, per pixel at (x, y) of that scale. With an α
//     plane, t = 1 − α is first added to R if n&16 ≠ 0, to G if n&8 ≠ 0,
//     to B if n&32 ≠ 0, where n = (x + 11) XOR (y + 11): compositing over a
//     fixed pattern of coloured 8–32 px blocks. Then
//     fx = fma(B, 0.1805/0.9505, fma(G, 0.3576/0.9505, R × (0.4124/0.9505)))
//     fy = fma(B, 0.0722/1.0,    fma(G, 0.7152/1.0,    R × (0.2126/1.0)))
//     fz = fma(B, 0.9505/1.089,  fma(G, 0.1192/1.089,  R × (0.0193/1.089)))
//     (each quotient a float32 constant: float32 numerator / float32
//     denominator), and for each of fx, fy, fz: F(v) = cbrt(v) − 16/116 if
//     v > 216/24389, else v × (24389 / (27 × 116)) (float32 quotients).
//     cbrt is dssim-core's approximation, not a true cube root: seed
//     y = (−0.5·v + 1.51)·v + 0.2, then twice y = y·(y³ + 2v) / (2y³ + v)
//     with y³ = (y·y)·y, unfused. Finally
//     L = F(fy) × 1.05
//     a = fma(500/220, F(fx) − F(fy), 86.2/220)
//     b = fma(200/220, F(fy) − F(fz), 107.9/220).
//  4. Blur: a 3×3 kernel with corners 0.095332, edges 0.118095 and centre
//     0.146293, applied twice (input → temp → output), edges extended
//     (clamp row and column indices into the image). dssim-core sums an
//     inner pixel as ((a0k0 + a1k1) + a2k2) + ((b0k3 + b1k4) + b2k5) +
//     ((c0k6 + c1k7) + c2k8) for the rows above, at and below, and uses
//     fma(a2, k2, fma(a0, k0, a1·k1)) per row for the first and last pixel
//     of a row; the difference is in the last bits. Since the kernel's
//     top and bottom rows are equal, the row above's sum for output row y
//     is the row below's sum for output row y−2: this package computes
//     each input row's two sums (weights k0 k1 k0 and k1 k4 k1) once and
//     adds them per output pixel, which is the same arithmetic.
//  5. Per scale and channel (L, a, b) of each image: the chroma channels a
//     and b are first replaced by their blur (L is not); then with img the
//     (blurred, for chroma) channel: mu = blur(img), sq = blur(img²).
//     For the pair: prod = blur(img1 · img2) per channel.
//  6. SSIM map per scale, per pixel, on the channel means: with
//     avg(l, a, b) = ((l + a) + b) × (1/3 as float32) and, per channel,
//     m11 = mu1², m22 = mu2², m12 = mu1·mu2:
//     mu1sq = avg(m11), mu2sq = avg(m22), mu12 = avg(m12),
//     s1 = avg(sq1 − m11), s2 = avg(sq2 − m22), s12 = avg(prod − m12),
//     ssim = (2·mu12 + C1)(2·s12 + C2) / ((mu1sq + mu2sq + C1)(s1 + s2 + C2))
//     with C1 = 0.01·0.01 and C2 = 0.03·0.03 (float32 products), evaluated
//     as (num1 · num2) / (den1 · den2).
//  7. Pooling of scale k (float64): m = mean of the map (sum of the
//     float32 values as float64 / pixel count), a = max(m, 0)^(0.5^k),
//     score_k = 1 − mean over pixels of |a − ssim|. Then
//     ssim = Σ score_k·w_k / Σ w_k over the scales that exist, with
//     w = 0.028, 0.197, 0.322, 0.298, 0.155 for scales 0..4, and
//     DSSIM = 1 / max(ssim, 2.220446049250313e-16) − 1.
//
// The SSIM map returned on request (Config.SSIMMap) is step 6's map of
// scale 0, the first map dssim-core's SsimMap list holds (the one the
// `dssim -o out` tool writes as out-0.png): per-pixel SSIM, 1 where the
// images agree, lower where they differ.
//
// ScoreDetail also returns every scale's size, weight, map mean, pooled
// score and SSIM map, to check another implementation stage by stage.
//
// There is no minimum size: dssim-core scores a 1×1 image (its blur clamps
// every index into the image), so no valid image is refused for its size.
// Note what the pooling means for small images: below 8 pixels in either
// direction there is only scale 0, whose score measures how much the SSIM
// map varies around its mean, so a 1×1 pair always scores 0 (as in
// dssim-core).
//
// # Precision and threads
//
// The steps above are done in the same float32 operations in the same
// order as dssim-core, fused where it fuses (Rust's mul_add) and unfused
// elsewhere (float32 conversions keep Go from fusing on arm64). The only
// deliberate difference: dssim-core adds a scale's pixels in one
// sequential float64 sum; here each row is summed and the row sums are
// added in order, so rows can run in parallel with bit-identical results
// for every thread count (the two orders differ by about 1e-16 relative).
//
// # Reuse and memory
//
// Prepare keeps the reference's img, mu and sq planes (9 float32 planes)
// at every scale, about 48 bytes per pixel. A scoring borrows a scratch of
// about 72 bytes per pixel (linear RGBA at scales 0 and 1, the distorted
// image's 9 planes at scale 0's size, 3 product planes, one blur
// temporary, row sums, 7 rows per thread for the blur); the Reference keeps
// up to two between calls, so scoring many images allocates nothing per
// image. The SSIM map, when asked for, is the caller's and adds 4 bytes per
// pixel. EstimateBytes gives the figure (the tests check it against what
// is really allocated, within 0.2 %).
package dssim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// Scale weights and SSIM constants of dssim-core 3.4.0 (dssim-core/src/
// dssim.rs: DEFAULT_WEIGHTS, compare_scale's c1 and c2, to_dssim's
// f64::EPSILON; kornelski/dssim tag 3.4.0, AGPL-3.0).
var scaleWeights = [...]float64{0.028, 0.197, 0.322, 0.298, 0.155}

// numScales is how many scales the default weights use.
const numScales = len(scaleWeights)

// minDownsample: a scale narrower or shorter than this has no next scale
// (dssim-core's Downsample returns None below 8 pixels).
const minDownsample = 8

func mul32(a, b float32) float32 { return a * b }

var (
	ssimC1 = mul32(0.01, 0.01)
	ssimC2 = mul32(0.03, 0.03)
	third  = div32(1, 3)
)

// Config tunes the CPU implementation.
type Config struct {
	// Threads is the number of goroutines per call; 0 means
	// runtime.GOMAXPROCS(0). Scores are bit-identical for every value.
	Threads int
	// SSIMMap asks Score for scale 0's per-pixel SSIM map.
	SSIMMap bool
}

func (c Config) threads() int {
	if c.Threads > 0 {
		return c.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// stats are one image's planes at one scale: img (L, and a, b after their
// extra blur), mu = blur(img), sq = blur(img²).
type stats struct {
	img, mu, sq [3][]float32
}

// Reference is a prepared reference image. It is safe for concurrent
// Score calls.
type Reference struct {
	w, h int
	cfg  Config
	p    pool
	dims [][2]int
	ref  []stats // per scale

	mu       sync.RWMutex
	released bool

	// idle scratches kept for the next Score (at most maxIdle), so that
	// scoring many images allocates nothing per image. A sync.Pool would
	// drop them at every garbage collection, which at tens of MiB each
	// happens often.
	idleMu sync.Mutex
	idle   []*scratch
}

// maxIdle is how many scratches a Reference keeps between Score calls.
const maxIdle = 2

func (r *Reference) getScratch() *scratch {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	if k := len(r.idle); k > 0 {
		sc := r.idle[k-1]
		r.idle = r.idle[:k-1]
		return sc
	}
	return nil
}

func (r *Reference) putScratch(sc *scratch) {
	r.idleMu.Lock()
	defer r.idleMu.Unlock()
	if len(r.idle) < maxIdle {
		r.idle = append(r.idle, sc)
	}
}

// scratch is one scoring's (or the preparation's) working memory.
type scratch struct {
	lin  [2]linImage // alternating scales: 0, 2, 4 in lin[0]; 1, 3 in lin[1]
	st   stats       // the distorted image at the current scale
	prod [3][]float32
	tmp  []float32
	rows []float64
	// rowbuf is each worker's rowBufLen(w) buffer for the blur.
	rowbuf [][]float32
}

// scaleDims lists the sizes of the scales used for a w×h image.
func scaleDims(w, h int) [][2]int {
	dims := [][2]int{{w, h}}
	for len(dims) < numScales {
		d := dims[len(dims)-1]
		if d[0] < minDownsample || d[1] < minDownsample {
			break
		}
		dims = append(dims, [2]int{d[0] / 2, d[1] / 2})
	}
	return dims
}

// scratchFloats is the float32 count of a scratch for a w×h image: 4
// linear planes at scales 0 and 1, 9 stats planes, 3 products, 1 temp.
func scratchFloats(w, h int) int64 {
	n := int64(w) * int64(h)
	n1 := int64(w/2) * int64(h/2)
	return 4*(n+n1) + 9*n + 3*n + n
}

func newScratch(w, h, threads int) *scratch {
	n := w * h
	n1 := (w / 2) * (h / 2)
	big := make([]float32, scratchFloats(w, h))
	take := func(k int) []float32 {
		p := big[:k:k]
		big = big[k:]
		return p
	}
	s := &scratch{rows: make([]float64, h)}
	for i, k := range [2]int{n, n1} {
		s.lin[i] = linImage{r: take(k), g: take(k), b: take(k), a: take(k)}
	}
	for c := 0; c < 3; c++ {
		s.st.img[c], s.st.mu[c], s.st.sq[c], s.prod[c] = take(n), take(n), take(n), take(n)
	}
	s.tmp = take(n)
	s.rowbuf = make([][]float32, threads)
	for i := range s.rowbuf {
		s.rowbuf[i] = make([]float32, rowBufLen(w))
	}
	return s
}

// EstimateBytes is the heap a prepared w×h reference plus one concurrent
// scoring uses (without the optional SSIM map, which adds 4·w·h bytes).
func EstimateBytes(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return 0
	}
	var ref int64
	for _, d := range scaleDims(w, h) {
		ref += 9 * 4 * int64(d[0]) * int64(d[1])
	}
	threads := int64(runtime.GOMAXPROCS(0))
	return ref + 4*scratchFloats(w, h) + 8*int64(h) + 4*threads*int64(rowBufLen(w))
}

// Prepare does the reference-only work: linear light, the pyramid and the
// reference's L*a*b*, mu and sq planes at every scale.
func Prepare(ref *zenmetrics.Image, cfg Config) (*Reference, error) {
	return PrepareContext(context.Background(), ref, cfg)
}

// PrepareContext is Prepare that gives up with ctx.Err() when ctx is done,
// checked between scales.
func PrepareContext(ctx context.Context, ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r = &Reference{w: ref.Width, h: ref.Height, cfg: cfg, p: pool{threads: cfg.threads()},
		dims: scaleDims(ref.Width, ref.Height)}
	sc := newScratch(r.w, r.h, r.p.threads)
	r.ref = make([]stats, len(r.dims))
	err = r.pyramid(ctx, ref, sc, func(s int, lin *linImage) error {
		n := lin.w * lin.h
		big := make([]float32, 9*n)
		st := &r.ref[s]
		for c := 0; c < 3; c++ {
			st.img[c], st.mu[c], st.sq[c] = big[0:n:n], big[n:2*n:2*n], big[2*n:3*n:3*n]
			big = big[3*n:]
		}
		r.stats(lin, st, sc)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.putScratch(sc)
	return r, nil
}

// pyramid converts im to linear light and calls fn on each scale's linear
// planes, from scale 0 down, checking ctx before each scale.
func (r *Reference) pyramid(ctx context.Context, im *zenmetrics.Image, sc *scratch, fn func(s int, lin *linImage) error) error {
	alpha := im.Format.HasAlpha()
	view := func(i, s int) *linImage {
		w, h := r.dims[s][0], r.dims[s][1]
		n := w * h
		l := &sc.lin[i]
		v := &linImage{w: w, h: h, r: l.r[:n], g: l.g[:n], b: l.b[:n]}
		if alpha {
			v.a = l.a[:n]
		}
		return v
	}
	cur := view(0, 0)
	r.p.rows(r.h, r.w, func(_, y0, y1 int) { toLinearRows(im, cur, y0, y1) })
	for s := range r.dims {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(s, cur); err != nil {
			return err
		}
		if s+1 < len(r.dims) {
			next := view((s+1)%2, s+1)
			src := cur
			r.p.rows(next.h, next.w, func(_, y0, y1 int) { downsampleRows(src, next, y0, y1) })
			cur = next
		}
	}
	return nil
}

// stats fills st (planes at least lin.w·lin.h long) for one scale, using
// sc's blur buffers.
func (r *Reference) stats(lin *linImage, st *stats, sc *scratch) {
	w, h := lin.w, lin.h
	n := w * h
	img := [3][]float32{st.img[0][:n], st.img[1][:n], st.img[2][:n]}
	r.p.rows(h, w, func(_, y0, y1 int) { labRows(lin, img[0], img[1], img[2], y0, y1) })
	tmp := sc.tmp[:n]
	for c := 0; c < 3; c++ {
		if c > 0 {
			r.p.blur(blurInput{a: img[c]}, img[c], tmp, w, h, sc.rowbuf)
		}
		r.p.blur(blurInput{a: img[c]}, st.mu[c][:n], tmp, w, h, sc.rowbuf)
		r.p.blur(blurInput{a: img[c], square: true}, st.sq[c][:n], tmp, w, h, sc.rowbuf)
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
	r.ref = nil
	r.idleMu.Lock()
	r.idle = nil
	r.idleMu.Unlock()
}

// Width and Height report the reference's size.
func (r *Reference) Width() int  { return r.w }
func (r *Reference) Height() int { return r.h }

// Score compares dist with the prepared reference and returns the DSSIM
// value (0 for identical images) and, when Config.SSIMMap was set, scale
// 0's per-pixel SSIM map. It gives up with ctx.Err() when ctx is done,
// checked between scales.
func (r *Reference) Score(ctx context.Context, dist *zenmetrics.Image) (value float64, ssimMap *zenmetrics.FloatPlane, err error) {
	if r == nil {
		return 0, nil, fmt.Errorf("%w: nil reference", zenmetrics.ErrBadInput)
	}
	d, err := r.score(ctx, dist, r.cfg.SSIMMap, false)
	if err != nil {
		return 0, nil, err
	}
	if r.cfg.SSIMMap {
		ssimMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: d.Scales[0].Map}
	}
	return d.Value, ssimMap, nil
}

// Detail is a comparison's value with what each scale contributed, for
// checking another implementation stage by stage.
type Detail struct {
	Value  float64 // DSSIM, as Score returns it
	SSIM   float64 // the weighted mean of the scale scores (Value = 1/SSIM − 1)
	Scales []ScaleDetail
}

// ScaleDetail is one scale of a comparison.
type ScaleDetail struct {
	Width, Height int
	Weight        float64
	// Mean is the mean of the SSIM map (before the power 0.5^k), Score the
	// pooled score 1 − mean |Mean^(0.5^k) − ssim|.
	Mean, Score float64
	// Map is the scale's per-pixel SSIM map, Width × Height, row-major.
	Map []float32
}

// ScoreDetail is Score with every scale's size, weight, mean, pooled score
// and SSIM map (4 bytes per pixel of every scale, allocated per call).
func (r *Reference) ScoreDetail(ctx context.Context, dist *zenmetrics.Image) (*Detail, error) {
	return r.score(ctx, dist, true, true)
}

// score runs a comparison; map0 keeps scale 0's map, all every scale's.
func (r *Reference) score(ctx context.Context, dist *zenmetrics.Image, map0, all bool) (d *Detail, err error) {
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
	sc := r.getScratch()
	if sc == nil {
		sc = newScratch(r.w, r.h, r.p.threads)
	}
	defer r.putScratch(sc)
	d = &Detail{Scales: make([]ScaleDetail, len(r.dims))}
	var sum, wsum float64
	err = r.pyramid(ctx, dist, sc, func(s int, lin *linImage) error {
		sd := &d.Scales[s]
		sd.Width, sd.Height, sd.Weight = lin.w, lin.h, scaleWeights[s]
		out := sc.prod[0]
		if all || (s == 0 && map0) {
			sd.Map = make([]float32, lin.w*lin.h)
			out = sd.Map
		}
		sd.Mean, sd.Score = r.scoreScale(s, lin, sc, out)
		sum += float64(sd.Score * sd.Weight) // rounded product: arm64 would fuse it into the sum
		wsum += sd.Weight
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.SSIM = sum / wsum
	d.Value = 1/math.Max(d.SSIM, Epsilon) - 1
	return d, nil
}

// scoreScale computes the distorted image's planes at scale s, the SSIM
// map into out, and returns the map's mean and the scale's pooled score
// (step 7).
func (r *Reference) scoreScale(s int, lin *linImage, sc *scratch, out []float32) (mean, score float64) {
	w, h := lin.w, lin.h
	n := w * h
	st := &sc.st
	r.stats(lin, st, sc)
	ref := &r.ref[s]
	tmp := sc.tmp[:n]
	for c := 0; c < 3; c++ {
		in := blurInput{a: ref.img[c][:n], b: st.img[c][:n]}
		r.p.blur(in, sc.prod[c][:n], tmp, w, h, sc.rowbuf)
	}
	out = out[:n]
	rows := sc.rows[:h]
	r.p.rows(h, w, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			o := y * w
			rows[y] = ssimRow(ref, st, &sc.prod, o, o+w, out[o:o+w])
		}
	})
	total := 0.0
	for _, v := range rows {
		total += v
	}
	count := float64(n)
	mean = total / count
	avg := math.Pow(math.Max(mean, 0), math.Pow(0.5, float64(s)))
	r.p.rows(h, w, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			d := 0.0
			for _, v := range out[y*w : y*w+w] {
				d += math.Abs(avg - float64(v))
			}
			rows[y] = d
		}
	})
	dev := 0.0
	for _, v := range rows {
		dev += v
	}
	return mean, 1 - dev/count
}

// ssimRow computes step 6 for pixels [lo, hi) into out and returns the
// float64 sum of the values written.
func ssimRow(r, d *stats, prod *[3][]float32, lo, hi int, out []float32) float64 {
	mu1l, mu1a, mu1b := r.mu[0][lo:hi], r.mu[1][lo:hi], r.mu[2][lo:hi]
	mu2l, mu2a, mu2b := d.mu[0][lo:hi], d.mu[1][lo:hi], d.mu[2][lo:hi]
	sq1l, sq1a, sq1b := r.sq[0][lo:hi], r.sq[1][lo:hi], r.sq[2][lo:hi]
	sq2l, sq2a, sq2b := d.sq[0][lo:hi], d.sq[1][lo:hi], d.sq[2][lo:hi]
	pl, pa, pb := prod[0][lo:hi], prod[1][lo:hi], prod[2][lo:hi]
	out = out[:len(mu1l)]
	c1, c2, k := ssimC1, ssimC2, third
	sum := 0.0
	for i := range out {
		// Channel products, kept as float32 (no fusion with the sums),
		// and the scaled sums below rounded too: arm64 would fuse ·k into
		// mu1sq+mu2sq and s1+s2.
		m11l, m11a, m11b := float32(mu1l[i]*mu1l[i]), float32(mu1a[i]*mu1a[i]), float32(mu1b[i]*mu1b[i])
		m22l, m22a, m22b := float32(mu2l[i]*mu2l[i]), float32(mu2a[i]*mu2a[i]), float32(mu2b[i]*mu2b[i])
		m12l, m12a, m12b := float32(mu1l[i]*mu2l[i]), float32(mu1a[i]*mu2a[i]), float32(mu1b[i]*mu2b[i])
		mu1sq := float32(float32(m11l+m11a+m11b) * k)
		mu2sq := float32(float32(m22l+m22a+m22b) * k)
		mu12 := float32(float32(m12l+m12a+m12b) * k)
		s1 := float32(float32((sq1l[i]-m11l)+(sq1a[i]-m11a)+(sq1b[i]-m11b)) * k)
		s2 := float32(float32((sq2l[i]-m22l)+(sq2a[i]-m22a)+(sq2b[i]-m22b)) * k)
		s12 := float32(float32((pl[i]-m12l)+(pa[i]-m12a)+(pb[i]-m12b)) * k)
		num := float32(float32(2*mu12)+c1) * float32(float32(2*s12)+c2)
		den := float32(float32(mu1sq+mu2sq)+c1) * float32(float32(s1+s2)+c2)
		v := num / den
		out[i] = v
		sum += float64(v)
	}
	return sum
}

// Compare prepares ref, scores dist against it and releases it.
func Compare(ref, dist *zenmetrics.Image, cfg Config) (value float64, ssimMap *zenmetrics.FloatPlane, err error) {
	defer zenmetrics.Recover(&err)
	if err := ref.Validate(); err != nil {
		return 0, nil, err
	}
	if err := dist.Validate(); err != nil {
		return 0, nil, err
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return 0, nil, err
	}
	r, err := Prepare(ref, cfg)
	if err != nil {
		return 0, nil, err
	}
	defer r.Release()
	return r.Score(context.Background(), dist)
}
