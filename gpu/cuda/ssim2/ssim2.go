// Package ssim2 is SSIMULACRA2 on CUDA: the host code that drives the
// kernels in ssim2.cu (compiled by NVRTC at first use, cached on disk) on
// the runtime of package cuda. Importing it registers the metric with
// every cuda.Backend (gpu/cuda/all imports it).
//
// The algorithm and its float32 arithmetic are those of the CPU reference
// (cpu/ssim2) and the WGSL kernels: libjxl's sRGB curve, XYB with its cube
// root, its recursive Gaussian with the four-lane interior of the
// horizontal pass, the SSIM and edge maps with double where libjxl uses
// double. Only the summation order differs (per column on the GPU, per row
// on the CPU), which moves scores by about 1e-13.
//
// The reference keeps, per background and scale, its positive XYB, its
// blur and its variance (9 planes) on the device; a score uploads the
// distorted pixels (8/16-bit, as stored: never floats) through page-locked
// double buffers on the caller's own stream and runs the distorted half.
package ssim2

import (
	"context"
	_ "embed"
	"math"
	"os"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed ssim2.cu
var kernelSource string

const (
	numScales = 6
	minSide   = 8
	numTerms  = 6
	// tileThreads is TB in ssim2.cu: the blurs run in blocks of 256
	// threads over 32 rows or columns of one channel.
	tileThreads = 256
)

// tiles is the grid of a tiled blur over n rows (or columns) × 3 channels.
func tiles(n int) cuda.Dim3 { return cuda.Dim3{X: cuda.Groups(n, 32), Y: 3, Z: 1} }

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

type scale struct{ w, h int }

func (s scale) n() int64 { return int64(s.w) * int64(s.h) }

// plan lists libjxl's scales: scale k+1 exists when scale k is at least
// 8×8 (so the last may be smaller).
func plan(w, h int) []scale {
	p := []scale{{w, h}}
	for len(p) < numScales {
		l := p[len(p)-1]
		if l.w < minSide || l.h < minSide {
			break
		}
		p = append(p, scale{(l.w + 1) / 2, (l.h + 1) / 2})
	}
	return p
}

// pyrPixels is the pixels of every scale together: a distorted pyramid
// buffer holds that many per plane (scale k after the scales before it,
// as hblur_dist_all and vblur_terms_all index them).
func pyrPixels(p []scale) int64 {
	var n int64
	for _, s := range p {
		n += s.n()
	}
	return n
}

// pyrView is scale k's part of a distorted pyramid buffer of planes
// planes per scale.
func pyrView(b *cuda.Buffer, p []scale, k int, planes int64) *cuda.Buffer {
	off := 4 * planes * pyrPixels(p[:k])
	return &cuda.Buffer{Ptr: b.Ptr + cuda.DevPtr(off), Size: 4 * planes * p[k].n()}
}

// refScale is one scale of a reference pyramid: positive XYB, its blur and
// its variance, three channel planes each.
type refScale struct{ img, mu, vr *cuda.Buffer }

// view is the reference composited on one background (libjxl scores an
// image with alpha on grey 0.1 and 0.9 and keeps the lower score).
type view struct {
	bg  float32
	pyr []refScale
}

// slot is one scorer's device scratch with its worker (stream, staging).
// For a whole image, img2 (the distorted XYB) and hb (its horizontal
// blurs) hold every scale (pyrView), so that one launch blurs them all;
// a strip slot holds one scale at a time.
type slot struct {
	wk      *cuda.Worker
	raw     *cuda.Buffer
	lin     [2]*cuda.Buffer
	img2    *cuda.Buffer
	hb      *cuda.Buffer
	sums    *cuda.Buffer
	tot     *cuda.Buffer
	sumStep int64 // doubles between two scales' column sums
}

type reference struct {
	b     *cuda.Backend
	dev   *cuda.Device
	k     *kernels // the launch table (module)
	w, h  int
	plan  []scale
	alpha bool // the reference has an alpha channel: two backgrounds
	views []view
	bufs  []*cuda.Buffer // every reference buffer, to free

	mu       sync.RWMutex
	released bool
	slots    *cuda.SlotPool[*slot]
}

// bandsMin is the smallest upload (bytes) that uploadBands takes: measured
// on the H200 from page-locked memory, the two bands take a 16 MP RGB8
// score (48 MiB) from 3.50 to 3.20 ms but a 4 MP one (12 MiB) from 1.00
// to 1.05 ms, where the overlapped half is too short to pay for the
// split. ZENMETRICS_CUDA_BANDS=on or off overrides it (bandsOn).
const bandsMin = 32 << 20

// bandsOn, when not nil, forces uploadBands on or off.
var bandsOn = func() *bool {
	switch os.Getenv("ZENMETRICS_CUDA_BANDS") {
	case "on":
		on := true
		return &on
	case "off":
		off := false
		return &off
	}
	return nil
}()

// banded says whether a score uploads n bytes in two bands.
func banded(n int64) bool {
	if bandsOn != nil {
		return *bandsOn
	}
	return n >= bandsMin
}

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full set of scratch planes); more
// callers wait for a slot. Two already overlap upload and compute.
const maxSlots = 4

func checkImage(im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if im.Width < minSide || im.Height < minSide {
		return &zenmetrics.TooSmallError{Metric: zenmetrics.SSIMULACRA2, Width: im.Width, Height: im.Height, MinWidth: minSide, MinHeight: minSide}
	}
	return nil
}

// estimate is the device bytes of a reference with views pyramids plus one
// scorer's scratch, for raw bytes of pixels uploaded.
func estimate(w, h, views int, raw int64) int64 {
	p := plan(w, h)
	var pyr int64
	for _, s := range p {
		pyr += 9 * 4 * s.n()
	}
	return int64(views)*pyr + slotBytes(w, h, raw)
}

func slotBytes(w, h int, raw int64) int64 {
	p := plan(w, h)
	var n1, n2 int64
	if len(p) > 1 {
		n1 = p[1].n()
	}
	if len(p) > 2 {
		n2 = p[2].n()
	}
	all := pyrPixels(p) // img2 and hb hold every scale
	return raw + 4*3*(n1+n2) + 4*3*all + 4*9*all + 8*int64(numScales)*3*int64(w)*numTerms + 8*2*numScales*3*numTerms
}

// newSlot allocates a scorer's scratch for images of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.dev.NewScratch(raw, 8*2*numScales*3*numTerms, func(alloc func(int64) *cuda.Buffer) {
		fillSlot(s, r.plan, raw, alloc)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// fillSlot allocates a whole-image slot's buffers with alloc (slotBytes
// counts them).
func fillSlot(s *slot, p []scale, raw int64, alloc func(int64) *cuda.Buffer) {
	all := pyrPixels(p)
	s.sumStep = 3 * int64(p[0].w) * numTerms
	s.raw = alloc(raw)
	s.lin[0] = alloc(4 * 3 * p[min(1, len(p)-1)].n())
	s.lin[1] = alloc(4 * 3 * p[min(2, len(p)-1)].n())
	s.img2 = alloc(4 * 3 * all)
	s.hb = alloc(4 * 9 * all)
	s.sums = alloc(8 * numScales * s.sumStep)
	s.tot = alloc(8 * 2 * numScales * 3 * numTerms)
}

// freeSlot gives a slot's buffers and worker back to the device.
func (r *reference) freeSlot(s *slot) {
	r.dev.FreeScratch(s.wk, s.raw, s.lin[0], s.lin[1], s.img2, s.hb, s.sums, s.tot)
}

// newPool is the reference's slot pool. A slot beyond the first is not
// checked against the free memory here (as before the pool was shared):
// its allocation fails instead.
func (r *reference) newPool() *cuda.SlotPool[*slot] {
	return cuda.NewSlotPool(r.dev, maxSlots, cuda.SlotFuncs[*slot]{
		New:  r.newSlot,
		Free: r.freeSlot,
		Raw:  func(s *slot) **cuda.Buffer { return &s.raw },
	})
}

func groups2(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, 32), Y: cuda.Groups(h, 8), Z: 1}, cuda.Dim3{X: 32, Y: 8, Z: 1}
}

// upload queues im's raw bytes into s.raw.
func upload(s *slot, im *zenmetrics.Image) error {
	return s.wk.Upload(s.raw, im.Pix[:cuda.RawBytes(im)])
}

// queue is the launcher on s's stream.
func queue(s *slot) launch.Stream { return launch.Stream{St: s.wk.Stream} }

// tb is the blur kernels' block (TB in ssim2.cu).
var tb = cuda.Dim3{X: tileThreads, Y: 1, Z: 1}

// firstBand queues, for scale-1 rows [oy0, oy1), scale 0's XYB (into
// xyb0) and scale 1's linear planes (into s.lin[0]) from the raw pixels
// in s.raw (queueXYB's scale 0, a band of it).
func firstBand(q launch.Launcher, k *kernels, p []scale, s *slot, sd sideOf, xyb0 *cuda.Buffer, oy0, oy1 int) error {
	if oy1 <= oy0 {
		return nil
	}
	bl := 0
	if sd.blend {
		bl = 1
	}
	s1 := p[1]
	g, b := groups2(s1.w, oy1-oy0)
	return q.Launch(&k.first, g, b, s.raw, p[0].w, p[0].h, sd.stride, sd.ch, sd.bps, bl, sd.bg, xyb0, s.lin[0], s1.w, s1.h, oy0, oy1)
}

// uploadBands uploads dist on the worker's copy stream and, once the
// upper half of its rows has arrived, queues scale 0's decode
// (first_scale) and horizontal pass for those rows, which then run while
// the lower half travels; when the rest has arrived, the rest of scale 0's
// decode. It returns the scale-0 rows already blurred (queueView's y0).
// Two bands, not one per staging chunk: a band's horizontal pass takes as
// long as a whole one (its chains run the full row width) with a fraction
// of the blocks, so more bands would queue behind each other on the
// stream. For a single view (no second background).
func (r *reference) uploadBands(s *slot, dist *zenmetrics.Image, blend bool, v view) (int, error) {
	total := cuda.RawBytes(dist)
	h, h1 := r.h, r.plan[1].h
	half := h / 2 / 32 * 32 // whole blocks of rows, both rows of their scale-1 rows
	sd := side(dist, blend, v.bg)
	q := queue(s)
	oyDone, yDone := 0, 0
	err := s.wk.UploadOverlapped(s.raw, dist.Pix[:total], func(end int64) error {
		if end < total {
			if yDone > 0 || half == 0 || end/int64(dist.Stride) < int64(half) {
				return nil
			}
			if err := firstBand(q, r.k, r.plan, s, sd, s.img2, 0, half/2); err != nil {
				return err
			}
			// Scale 0's part of the pyramids is at their start.
			if err := q.Launch(&r.k.hDist, tiles(half), tb, v.pyr[0].img, s.img2, s.hb, r.w, r.h, 0, half); err != nil {
				return err
			}
			oyDone, yDone = half/2, half
			return nil
		}
		return firstBand(q, r.k, r.plan, s, sd, s.img2, oyDone, h1)
	})
	return yDone, err
}

// buildPyramid queues the reference's planes for one background.
func (r *reference) buildPyramid(s *slot, ref *zenmetrics.Image, blend bool, bg float32) ([]refScale, error) {
	pyr := make([]refScale, len(r.plan))
	for k, sc := range r.plan {
		n := sc.n()
		for _, dst := range []**cuda.Buffer{&pyr[k].img, &pyr[k].mu, &pyr[k].vr} {
			b, err := r.dev.Alloc(4 * 3 * n)
			if err != nil {
				return nil, err
			}
			r.bufs = append(r.bufs, b)
			*dst = b
		}
	}
	return pyr, queueRefPyramid(queue(s), r.k, r.plan, s, side(ref, blend, bg), pyr)
}

// queueRefPyramid queues a reference's planes for one view from its raw
// pixels in s.raw: per scale its XYB, horizontal and vertical passes.
func queueRefPyramid(q launch.Launcher, k *kernels, p []scale, s *slot, sd sideOf, pyr []refScale) error {
	cur := 0
	for kk, sc := range p {
		var err error
		if cur, err = queueXYB(q, k, p, kk, cur, sd, s, pyr[kk].img); err != nil {
			return err
		}
		if err := q.Launch(&k.hRef, tiles(sc.h), tb, pyr[kk].img, s.hb, sc.w, sc.h, 0, sc.h); err != nil {
			return err
		}
		if err := q.Launch(&k.vRefWhole, tiles(sc.w), tb, s.hb, pyr[kk].mu, pyr[kk].vr, sc.w, sc.h); err != nil {
			return err
		}
	}
	return nil
}

func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image) (_ *reference, err error) {
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	d := b.Device()
	alpha := ref.Format.HasAlpha()
	blend := alpha && !opaque(ref)
	views := 1
	if blend {
		views = 2
	}
	raw := cuda.RawBytes(ref)
	if err := b.CheckMemory(estimate(ref.Width, ref.Height, views, raw)); err != nil {
		return nil, err
	}
	k, err := module.Load(d)
	if err != nil {
		return nil, err
	}
	r := &reference{b: b, dev: d, k: k, w: ref.Width, h: ref.Height, plan: plan(ref.Width, ref.Height), alpha: alpha}
	r.slots = r.newPool()
	defer func() {
		if err != nil {
			r.Release()
		}
	}()
	s, err := r.slots.Get(ctx, raw)
	if err != nil {
		return nil, err
	}
	defer r.slots.Put(s)
	if err := upload(s, ref); err != nil {
		return nil, err
	}
	switch {
	case blend:
		for _, bg := range []float32{0.1, 0.9} {
			pyr, err := r.buildPyramid(s, ref, true, bg)
			if err != nil {
				return nil, err
			}
			r.views = append(r.views, view{bg: bg, pyr: pyr})
		}
	case alpha:
		pyr, err := r.buildPyramid(s, ref, false, 0)
		if err != nil {
			return nil, err
		}
		r.views = []view{{bg: 0.1, pyr: pyr}, {bg: 0.9, pyr: pyr}}
	default:
		pyr, err := r.buildPyramid(s, ref, false, 0)
		if err != nil {
			return nil, err
		}
		r.views = []view{{bg: 0.5, pyr: pyr}}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.wk.Stream.Sync(); err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference. Safe for concurrent use: each
// caller gets its own slot (stream, staging, scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return sc, zenmetrics.ErrReleased
	}
	if err := cuda.CheckScored(ctx, dist, r.w, r.h); err != nil {
		return sc, err
	}
	s, err := r.slots.Get(ctx, cuda.RawBytes(dist))
	if err != nil {
		return sc, err
	}
	defer r.slots.Put(s)
	blendDist := dist.Format.HasAlpha() && !opaque(dist)
	// Views that give the same score are run once: an opaque reference's
	// two views share a pyramid, and then only a distorted image with
	// real transparency differs between them.
	type key struct {
		pyr *refScale
		bg  float32
	}
	idx := map[key]int{}
	var runs []int // view index per distinct run
	for i, v := range r.views {
		kk := key{pyr: &v.pyr[0]}
		if blendDist {
			kk.bg = v.bg
		}
		if _, ok := idx[kk]; !ok {
			idx[kk] = len(runs)
			runs = append(runs, i)
		}
	}
	// One run (no transparency to composite twice): scale 0's first
	// kernels overlap the upload. Else upload, then run each view.
	bands := len(runs) == 1 && banded(cuda.RawBytes(dist))
	y0 := 0
	if bands {
		if y0, err = r.uploadBands(s, dist, blendDist, r.views[runs[0]]); err != nil {
			return sc, err
		}
	} else if err := upload(s, dist); err != nil {
		return sc, err
	}
	for j, vi := range runs {
		if err := queueView(queue(s), r.k, r.plan, s, side(dist, blendDist, r.views[vi].bg), r.views[vi].pyr, j, bands, y0); err != nil {
			return sc, err
		}
	}
	per := int64(numScales * 3 * numTerms * 8)
	if err := s.wk.Stream.Download(s.wk.Out, 0, s.tot, 0, int64(len(runs))*per); err != nil {
		return sc, err
	}
	if err := s.wk.Stream.Sync(); err != nil {
		return sc, err
	}
	best := math.Inf(1)
	for j := range runs {
		best = min(best, r.final(s.wk.Out.Bytes[int64(j)*per:]))
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: best}, nil
}

// queueView queues a score's distorted half against the reference
// pyramid pyr: every scale's XYB into the pyramid s.img2 (scale 0's
// already queued when banded: uploadBands), then one launch for every
// scale's horizontal pass (hblur_dist_all; scale 0's from row y0) and
// one for every scale's vertical pass and terms (vblur_terms_all), then
// the sums of run j. Scale by scale, the same arithmetic as the
// per-scale kernels (hblur_dist, vblur_terms).
func queueView(q launch.Launcher, k *kernels, p []scale, s *slot, sd sideOf, pyr []refScale, j int, banded bool, y0 int) error {
	cur := 0
	for kk := range p {
		if kk == 0 && banded {
			continue
		}
		var err error
		if cur, err = queueXYB(q, k, p, kk, cur, sd, s, pyrView(s.img2, p, kk, 3)); err != nil {
			return err
		}
	}
	mark(s, 0, "xyb")
	rows := 0
	var refs [3 * numScales]any // img, mu, vr per scale; unused scales repeat the last
	for kk := 0; kk < numScales; kk++ {
		rs := pyr[min(kk, len(p)-1)]
		refs[kk], refs[numScales+kk], refs[2*numScales+kk] = rs.img, rs.mu, rs.vr
	}
	cols := 0
	for kk, c := range p {
		if kk == 0 {
			rows += int(cuda.Groups(c.h-y0, 32))
		} else {
			rows += int(cuda.Groups(c.h, 32))
		}
		cols += int(cuda.Groups(c.w, 32))
	}
	w, h, nk := p[0].w, p[0].h, len(p)
	if rows > 0 {
		args := append(append([]any{}, refs[:numScales]...), s.img2, s.hb, w, h, y0, nk)
		if err := q.Launch(&k.hDistAll, cuda.Dim3{X: uint32(rows), Y: 3, Z: 1}, tb, args...); err != nil {
			return err
		}
	}
	mark(s, 0, "hblur")
	args := append([]any{s.hb, s.img2, s.sums, w, h, nk, int(s.sumStep)}, refs[:]...)
	if err := q.Launch(&k.vTermsAll, cuda.Dim3{X: uint32(cols), Y: 3, Z: 1}, tb, args...); err != nil {
		return err
	}
	mark(s, 0, "vblur+terms")
	return queueSums(q, k, w, nk, s, j)
}

// profile, when set (tests), is called after each step of a score's
// distorted half with the scale and the step's name.
var profile func(st *cuda.Stream, k int, step string)

func mark(s *slot, k int, step string) {
	if profile != nil && s.wk != nil {
		profile(s.wk.Stream, k, step)
	}
}

// final turns the sums read back (float64, [scale][c][term]) into the
// score, as cpu/ssim2's sumNorms and finalScore do.
func (r *reference) final(b []byte) float64 {
	norms := make([][3][6]float64, len(r.plan))
	for k, sc := range r.plan {
		inv := 1.0 / float64(sc.n())
		for c := 0; c < 3; c++ {
			var t [6]float64
			for i := range t {
				o := ((k*3+c)*numTerms + i) * 8
				t[i] = math.Float64frombits(leUint64(b[o:]))
			}
			norms[k][c] = [6]float64{
				inv * t[0], math.Sqrt(math.Sqrt(inv * t[1])),
				inv * t[2], math.Sqrt(math.Sqrt(inv * t[3])),
				inv * t[4], math.Sqrt(math.Sqrt(inv * t[5])),
			}
		}
	}
	return finalScore(norms)
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	r.slots.Close()
	r.dev.Free(r.bufs...)
	r.bufs, r.views = nil, nil
}

// opaque reports whether every alpha sample is at its maximum (blending
// an opaque pixel gives its colour back exactly, so it can be skipped).
func opaque(im *zenmetrics.Image) bool {
	f := im.Format
	if !f.HasAlpha() {
		return true
	}
	ch, bps := f.Channels(), f.BytesPerSample()
	for y := 0; y < im.Height; y++ {
		row := im.Row(y)
		for i := (ch - 1) * bps; i < len(row); i += ch * bps {
			if row[i] != 0xff || (bps == 2 && row[i+1] != 0xff) {
				return false
			}
		}
	}
	return true
}
