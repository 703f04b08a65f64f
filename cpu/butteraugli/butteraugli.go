// Package butteraugli is the CPU reference implementation of Butteraugli as
// libjxl v0.12.0's butteraugli_main computes it: the maximum of the distance
// map (its first output line) and the p-norm it prints (`3-norm:` by
// default).
//
// What butteraugli_main does with its inputs, reproduced here:
//
//   - Samples are sRGB-encoded; they are scaled to [0, 1] (v/255 or
//     v/65535) and decoded to linear light with libjxl's rational
//     approximation of the sRGB curve. 1.0 is IntensityTarget nits (80 when
//     unset, butteraugli_main's default for SDR input).
//   - Gray images become R = G = B.
//   - When either image has alpha, both are composited onto black and onto
//     white (mixing straight alpha on the sRGB-encoded values, then decoding
//     again); each pair is scored, the distance map is the pixelwise
//     maximum of the two maps, and the reported values come from that map.
//     An image without alpha is used as it is in both.
//   - Images narrower or shorter than 8 pixels are not refused: libjxl's
//     comparator returns an all-zero distance map for them, so Max and the
//     p-norms are 0. Between 8 and 15 pixels the half-resolution pass is
//     skipped because the subsampled image is under 8 pixels. No size is
//     rejected beyond empty images (which fail validation).
//
// Precision: the pipeline runs in float32 like libjxl, following its order of
// operations where it is visible in the source (kernel sums, Malta segment
// sums, term accumulation order) and its double-precision steps where it uses
// them (the Malta half-open terms, the mask curves, the sub-resolution mix,
// the alpha blend, the p-norm sums). Using float64 throughout was not chosen:
// it moves results away from the reference, whose float32 roundings are part
// of its numbers. libjxl's SIMD code fuses some multiply-adds, which plain Go
// float32 arithmetic does not; the resulting last-bit differences stay far
// below the 1e-3 relative tolerance (see the parity tests).
//
// Every stage is parallel over rows and every output value is computed by one
// goroutine from complete inputs; the only cross-row reduction (the p-norm
// sums) is kept per row and added in row order. Results are therefore bit
// identical for any thread count.
package butteraugli

import (
	"fmt"
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// Config tunes a comparison. The zero value is butteraugli_main's defaults.
type Config struct {
	// Threads is the number of goroutines per comparison; 0 means
	// GOMAXPROCS.
	Threads int
	// IntensityTarget is the display luminance in nits of linear 1.0;
	// 0 (or negative, as butteraugli_main treats it) means 80.
	IntensityTarget float64
	// PNorm asks for one more p-norm in Result.PNorm (0: none). The 3-norm
	// is always computed.
	PNorm float64
	// DistMap asks for the per-pixel distance map in Result.DistMap.
	DistMap bool
}

// Result of one comparison.
type Result struct {
	// Max is the largest value of the distance map (butteraugli_main's
	// first output line).
	Max float64
	// PNorm3 is butteraugli_main's `3-norm:` value.
	PNorm3 float64
	// PNorm is the Config.PNorm-norm, when Config.PNorm > 0.
	PNorm float64
	// DistMap is the Width×Height distance map, row-major, when
	// Config.DistMap is set.
	DistMap       []float32
	Width, Height int
}

// minSize is the smallest width and height libjxl's comparator computes a
// distance map for; below it the map is all zeros (libjxl v0.12.0,
// lib/jxl/butteraugli/butteraugli.cc, ButteraugliComparator::Make and
// Diffmap; BSD-3-Clause), and so is this package's.
const minSize = 8

// MinSize is minSize for the backends: cpu.Backend and the CLIs refuse
// images below it (a distance of 0 for unrelated images would read as a
// perfect match), while Compare and Prepare here keep libjxl's zeros.
const MinSize = minSize

// Reference is a prepared reference image: its opsin dynamics, frequency
// bands and masking terms at full and half resolution, computed once and
// reused by every Score. It is safe for concurrent use.
type Reference struct {
	mu        sync.RWMutex
	released  bool
	cfg       Config
	wk        workers
	intensity float32
	w, h      int
	// variants holds one prepared reference for an opaque reference, or
	// two (composited onto black, onto white) when it has alpha.
	variants []*variant
	// scratches keeps the work buffers of finished Scores (and of Prepare)
	// for the next ones; nil once released.
	scratches *sync.Pool
}

// variant is the reference prepared for one background.
type variant struct {
	full, sub *level // nil below minSize
}

func checkConfig(cfg *Config) error {
	if math.IsNaN(cfg.IntensityTarget) || math.IsInf(cfg.IntensityTarget, 0) {
		return fmt.Errorf("%w: butteraugli intensity target %v", zenmetrics.ErrBadInput, cfg.IntensityTarget)
	}
	if cfg.IntensityTarget <= 0 {
		cfg.IntensityTarget = 80
	}
	if math.IsNaN(cfg.PNorm) || math.IsInf(cfg.PNorm, 0) || cfg.PNorm < 0 {
		return fmt.Errorf("%w: butteraugli p-norm %v", zenmetrics.ErrBadInput, cfg.PNorm)
	}
	return nil
}

// Prepare does the reference-only half of Butteraugli.
func Prepare(ref *zenmetrics.Image, cfg Config) (r *Reference, err error) {
	defer zenmetrics.Recover(&err)
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	wk := newWorkers(cfg.Threads)
	r = &Reference{
		cfg:       cfg,
		wk:        wk,
		intensity: float32(cfg.IntensityTarget),
		w:         ref.Width,
		h:         ref.Height,
		scratches: &sync.Pool{},
	}
	sc := &scratch{}
	li := toLinear(wk, ref, sc)
	if li.alpha == nil {
		r.variants = []*variant{r.prepareVariant(li.rgb, sc)}
	} else {
		for _, bg := range [2]float32{0, 1} {
			rgb := blendOnto(wk, li, bg, sc)
			r.variants = append(r.variants, r.prepareVariant(rgb, sc))
			sc.release(rgb[0].p, rgb[1].p, rgb[2].p)
		}
		sc.release(li.alpha.p)
	}
	sc.release(li.rgb[0].p, li.rgb[1].p, li.rgb[2].p)
	r.scratches.Put(sc)
	return r, nil
}

func (r *Reference) prepareVariant(rgb image3, sc *scratch) *variant {
	v := &variant{}
	if r.w < minSize || r.h < minSize {
		return v
	}
	v.full = prepareLevel(r.wk, rgb, r.intensity, sc)
	sub := subsample2x(r.wk, rgb, sc)
	if sub[0].w >= minSize && sub[0].h >= minSize {
		v.sub = prepareLevel(r.wk, sub, r.intensity, sc)
	}
	sc.release(sub[0].p, sub[1].p, sub[2].p)
	return v
}

// Release frees the prepared state; Score afterwards returns
// zenmetrics.ErrReleased. It is idempotent.
func (r *Reference) Release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.released = true
	r.variants = nil
	r.scratches = nil
	r.mu.Unlock()
}

// Score compares dist with the prepared reference.
func (r *Reference) Score(dist *zenmetrics.Image) (res Result, err error) {
	defer zenmetrics.Recover(&err)
	if r == nil {
		return Result{}, zenmetrics.ErrReleased
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
		return Result{}, &zenmetrics.SizeMismatchError{
			RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	wk := r.wk
	sc, _ := r.scratches.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	li := toLinear(wk, dist, sc)
	var dm plane
	rgbLive := true
	if len(r.variants) == 1 && li.alpha == nil {
		// The linear planes are needed once: diffmap hands them back as
		// soon as it is done with them, so its later planes reuse them
		// instead of fresh memory.
		dm = r.diffmap(r.variants[0], li.rgb, sc, true)
		rgbLive = false
	} else {
		var maps [2]plane
		for i, bg := range [2]float32{0, 1} {
			v := r.variants[min(i, len(r.variants)-1)]
			rgb := blendOnto(wk, li, bg, sc)
			// A blended copy (not li.rgb itself) is diffmap's to release.
			maps[i] = r.diffmap(v, rgb, sc, li.alpha != nil)
		}
		dm = maps[0]
		for i, v := range maps[1].p {
			dm.p[i] = max(dm.p[i], v)
		}
		sc.release(maps[1].p)
	}
	if li.alpha != nil {
		sc.release(li.alpha.p)
	}
	if rgbLive {
		sc.release(li.rgb[0].p, li.rgb[1].p, li.rgb[2].p)
	}
	// dm is never released: it may be handed out as Result.DistMap.
	r.scratches.Put(sc)
	res = Result{Width: r.w, Height: r.h}
	var m float32
	for _, v := range dm.p {
		m = max(m, v)
	}
	res.Max = float64(m)
	res.PNorm3 = distanceP(wk, dm, 3)
	if r.cfg.PNorm > 0 {
		res.PNorm = distanceP(wk, dm, r.cfg.PNorm)
	}
	if r.cfg.DistMap {
		res.DistMap = dm.p
	}
	return res, nil
}

// diffmap is the distance map of rgb1 against one prepared reference
// variant: the full-resolution map blended with the half-resolution one.
//
// Its work planes come from and go back to sc; so does rgb1 when consume
// is set (as soon as the opsin dynamics have read it), otherwise rgb1 is
// left alone.
func (r *Reference) diffmap(v *variant, rgb1 image3, sc *scratch, consume bool) plane {
	if v.full == nil {
		if consume {
			sc.release(rgb1[0].p, rgb1[1].p, rgb1[2].p)
		}
		return newPlane(r.w, r.h)
	}
	wk := r.wk
	var sub image3
	if v.sub != nil {
		sub = subsample2x(wk, rgb1, sc)
	}
	xyb := sc.outImage3(r.w, r.h)
	blurred := sc.outImage3(r.w, r.h)
	opsinDynamics(wk, rgb1, r.intensity, xyb, blurred, sc)
	sc.release(blurred[0].p, blurred[1].p, blurred[2].p)
	if consume {
		sc.release(rgb1[0].p, rgb1[1].p, rgb1[2].p)
	}
	dm := diffmapLevel(wk, v.full, xyb, sc)
	if v.sub != nil {
		sw, sh := sub[0].w, sub[0].h
		sxyb := sc.outImage3(sw, sh)
		sblurred := sc.outImage3(sw, sh)
		opsinDynamics(wk, sub, r.intensity, sxyb, sblurred, sc)
		sc.release(sblurred[0].p, sblurred[1].p, sblurred[2].p, sub[0].p, sub[1].p, sub[2].p)
		sdm := diffmapLevel(wk, v.sub, sxyb, sc)
		addSupersampled2x(wk, sdm, dm)
		sc.release(sdm.p)
	}
	return dm
}

// Compare prepares ref, scores dist against it and releases it.
func Compare(ref, dist *zenmetrics.Image, cfg Config) (Result, error) {
	if ref != nil && dist != nil {
		if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
			return Result{}, err
		}
	}
	r, err := Prepare(ref, cfg)
	if err != nil {
		return Result{}, err
	}
	defer r.Release()
	return r.Score(dist)
}

// EstimateBytes is the heap a prepared w×h reference plus one Score use at
// their peak, for an opaque reference. The prepared reference keeps 13
// float32 planes at full and 13 at half resolution (≈ 65 B/px); one Score
// allocates the distorted image's linear planes, XYB image, bands, masking
// planes, three padded Malta inputs, two Malta sums and the map, and the
// same at half resolution (≈ 134 B/px, all counted as live, which is what
// the garbage collector may see at worst). A reference with alpha keeps two
// prepared copies and each Score blends the distorted image twice: about
// 100 B/px more.
func EstimateBytes(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return 0
	}
	px := int64(w) * int64(h)
	return px*200 + 1<<20
}

// distanceP is libjxl's ComputeDistanceP: the mean of the p-, 2p- and
// 4p-power means of the map, summed in double. Per-row sums are combined in
// row order so the result does not depend on the thread count (nor, for
// CompareStrips, on the strips).
func distanceP(wk workers, dm plane, p float64) float64 {
	if dm.w == 0 || dm.h == 0 {
		return 0
	}
	sums := make([][3]float64, dm.h)
	wk.rows(dm.h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			sums[y] = rowPowerSums(dm.row(y), p)
		}
	})
	var tot [3]float64
	for _, s := range sums {
		tot[0] += s[0]
		tot[1] += s[1]
		tot[2] += s[2]
	}
	return finishDistanceP(tot, dm.h*dm.w, p)
}

// rowPowerSums is one row's Σd^p, Σd^2p and Σd^4p in x order.
func rowPowerSums(row []float32, p float64) [3]float64 {
	cube := math.Abs(p-3) < 1e-6
	var s [3]float64
	for _, v := range row {
		d := float64(v)
		var d2 float64
		if cube {
			d2 = float64(d * (d * d)) // rounded: arm64 would fuse it into the sum
		} else {
			d2 = math.Pow(d, p)
		}
		s[0] += d2
		d2 = float64(d2 * d2)
		s[1] += d2
		d2 = float64(d2 * d2)
		s[2] += d2
	}
	return s
}

// finishDistanceP turns the power sums over n values into the norm.
func finishDistanceP(tot [3]float64, n int, p float64) float64 {
	if n == 0 {
		return 0
	}
	one := 1.0 / float64(n)
	v := 0.0
	for i := 0; i < 3; i++ {
		v += math.Pow(one*tot[i], 1.0/(p*float64(int(1)<<i)))
	}
	return v / 3.0
}
