// Package butteraugli is Butteraugli on CUDA: the host code that drives
// the kernels in butteraugli.cu (compiled by NVRTC at first use, cached on
// disk) on the runtime of package cuda. Importing it registers the metric
// with every cuda.Backend (gpu/cuda/all imports it).
//
// It is the twin of gpu/webgpu/butteraugli: the same passes (opsin
// dynamics, LF/MF/HF/UHF separation with separable FIR blurs, masking,
// Malta filters, the masked DC and AC terms, the half-resolution level
// blended in) on the same float32 arithmetic as the CPU reference
// (cpu/butteraugli, libjxl v0.12.0), with double where the reference uses
// double (which the WGSL kernels cannot), and the power sums of the norms
// in double.
//
// A prepared reference keeps, per alpha background and level, its 13
// planes on the device (LF×3, MF×3, HF×2, UHF×2, masking activity, AC and
// DC mask weights). A score uploads the distorted pixels (8/16-bit, as
// stored) through page-locked double buffers on the caller's own stream
// and runs the distorted half in the caller's slot (16 scratch planes per
// level), then reads back 64 bytes (and the map when asked for). Strips
// (ModeStrip) are strip.go: the same kernels per crop, each band's
// interior reduced.
package butteraugli

import (
	"context"
	"fmt"
	"math"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// minSize is the smallest side libjxl computes a distance map for.
const minSize = 8

// refPlanes and workPlanes are the planes per level of a reference's
// background and of a scorer's scratch.
const (
	refPlanes  = 13
	workPlanes = 16
)

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full set of scratch planes); more
// callers wait for a slot.
const maxSlots = 4

// lutSize is the bytes of the two decoding tables (8- and 16-bit).
const lutSize = 4*256 + 4*65536

// refBytes is the device memory of a reference with variants backgrounds
// (its planes and the decoding tables).
func refBytes(w, h, variants int) int64 {
	var b int64
	for _, s := range levels(w, h) {
		b += int64(variants) * refPlanes * cuda.AllocSize(4*int64(s.w)*int64(s.h))
	}
	return b + cuda.AllocSize(4*256) + cuda.AllocSize(4*65536)
}

// slotBytes is one scorer's device memory for uploads of raw bytes.
func slotBytes(w, h int, raw int64) int64 {
	var b int64
	for _, s := range levels(w, h) {
		b += workPlanes * cuda.AllocSize(4*int64(s.w)*int64(s.h))
	}
	return b + cuda.AllocSize(raw) + cuda.AllocSize(64*int64(reduceGroups(w*h))) + cuda.AllocSize(64)
}

// estimate is a prepared reference plus one scorer.
func estimate(w, h, variants int, raw int64) int64 {
	return refBytes(w, h, variants) + slotBytes(w, h, raw)
}

// checkOptions validates opt as the CPU reference does and returns the
// intensity target (0 or negative means 80).
func checkOptions(opt zenmetrics.Options) (float64, error) {
	it := opt.IntensityTarget
	if math.IsNaN(it) || math.IsInf(it, 0) {
		return 0, fmt.Errorf("%w: butteraugli intensity target %v", zenmetrics.ErrBadInput, it)
	}
	if it <= 0 {
		it = 80
	}
	if p := opt.PNorm; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return 0, fmt.Errorf("%w: butteraugli p-norm %v", zenmetrics.ErrBadInput, p)
	}
	return it, nil
}

// reference is a prepared Butteraugli reference on a CUDA device.
type reference struct {
	cuda.RefBase[*slot]
	k         *kernels
	w, h      int
	sz        []size
	intensity float32
	pnorm     float64
	distMap   bool
	sets      [][]planeSet    // [background][level]: one background, or two with alpha
	lut       [3]*cuda.Buffer // decoding tables by bytes per sample
}

// outBytes is the page-locked read-back a slot needs: the 8 sums, and the
// map when asked for.
func (r *reference) outBytes() int64 {
	if r.distMap {
		return 64 + 4*int64(r.w)*int64(r.h)
	}
	return 64
}

// newSlot allocates a scorer's scratch for images of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, r.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillSlot(s, r.sz, raw, alloc) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// fillSlot allocates a slot's device buffers with alloc (the device, or
// the tests' fake allocator).
func fillSlot(s *slot, sz []size, raw int64, alloc func(int64) *cuda.Buffer) {
	s.raw = alloc(raw)
	for _, l := range sz {
		n := 4 * int64(l.w) * int64(l.h)
		p := func() *cuda.Buffer { return alloc(n) }
		s.ws = append(s.ws, &work{lin: [3]*cuda.Buffer{p(), p(), p()}, res2: p(), dm: p(), dist: newSet(p, false)})
	}
	s.part = alloc(64 * int64(reduceGroups(sz[0].w*sz[0].h)))
	s.tot = alloc(64)
}

// newSet is a decomposition's planes from p (with the mask weights for a
// reference).
func newSet(p func() *cuda.Buffer, ref bool) planeSet {
	s := planeSet{lf: [3]*cuda.Buffer{p(), p(), p()}, mf: [3]*cuda.Buffer{p(), p(), p()},
		hf: [2]*cuda.Buffer{p(), p()}, uhf: [2]*cuda.Buffer{p(), p()}, act: p()}
	if ref {
		s.mac, s.mdc = p(), p()
	}
	return s
}

// slotBuffers lists a slot's device buffers.
func (s *slot) buffers() []*cuda.Buffer {
	out := []*cuda.Buffer{s.raw, s.part, s.tot}
	for _, wk := range s.ws {
		out = append(out, wk.lin[:]...)
		out = append(out, wk.res2, wk.dm, wk.dist.act)
		out = append(out, wk.dist.lf[:]...)
		out = append(out, wk.dist.mf[:]...)
		out = append(out, wk.dist.hf[:]...)
		out = append(out, wk.dist.uhf[:]...)
	}
	return out
}

// freeSlot gives a slot's buffers and worker back to the device.
func (r *reference) freeSlot(s *slot) {
	r.Dev.FreeScratch(s.wk, s.buffers()...)
	s.wk = nil
}

// Worker is the slot's worker (cuda.Slot).
func (s *slot) Worker() *cuda.Worker { return s.wk }

// slotFuncs are the reference's slot pool's: a slot beyond the first is
// checked against the free memory before it is allocated.
func (r *reference) slotFuncs() cuda.SlotFuncs[*slot] {
	return cuda.SlotFuncs[*slot]{
		New:   r.newSlot,
		Free:  r.freeSlot,
		Raw:   func(s *slot) **cuda.Buffer { return &s.raw },
		Check: func(raw int64) error { return r.B.CheckMemory(slotBytes(r.w, r.h, raw)) },
	}
}

// layoutOf is how im's samples sit in the upload buffer.
func layoutOf(im *zenmetrics.Image) layout {
	f := im.Format
	return layout{stride: im.Stride, channels: f.Channels(), bps: f.BytesPerSample(), blend: f.HasAlpha()}
}

// prepare does the reference half: upload, unpack per background (0 and 1
// in linear light when ref has alpha, as libjxl), decompose every level
// and derive the mask weights, all resident until Release.
func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *reference, err error) {
	it, err := checkOptions(opt)
	if err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	r := &reference{w: ref.Width, h: ref.Height, sz: levels(ref.Width, ref.Height),
		intensity: float32(it), pnorm: opt.PNorm, distMap: opt.DistMap}
	r.Init(b, maxSlots, r.slotFuncs())
	if len(r.sz) == 0 {
		return r, nil // the map is all zeros: nothing to keep
	}
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	raw := cuda.RawBytes(ref)
	if err := b.CheckMemory(estimate(r.w, r.h, variants, raw)); err != nil {
		return nil, err
	}
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		for _, bps := range []int{1, 2} {
			r.lut[bps] = alloc(int64(len(lutTable(bps))))
		}
		r.sets = newSets(r.sz, variants, alloc)
	}, func(s *slot) error {
		if err := uploadLuts(s.wk, r.lut); err != nil {
			return err
		}
		if err := s.wk.Upload(s.raw, ref.Pix[:raw]); err != nil {
			return err
		}
		lay := layoutOf(ref)
		return queuePrepare(launch.Stream{St: s.wk.Stream}, r.k, r.sz, r.intensity, s, r.lut[lay.bps], lay, r.sets)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// uploadLuts uploads the decoding tables (by bytes per sample) with wk.
func uploadLuts(wk *cuda.Worker, lut [3]*cuda.Buffer) error {
	for _, bps := range []int{1, 2} {
		if err := wk.Upload(lut[bps], lutTable(bps)); err != nil {
			return err
		}
	}
	return nil
}

var (
	lutOnce [3]sync.Once
	luts    [3][]byte
)

// lutTable is lutBytes(bps), computed once per process.
func lutTable(bps int) []byte {
	lutOnce[bps].Do(func() { luts[bps] = lutBytes(bps) })
	return luts[bps]
}

// Score implements zenmetrics.Reference: Value is the maximum of the
// distance map, Extras["pnorm3"] the 3-norm, Extras["pnorm"] the
// Options.PNorm-norm when asked for, DistMap the map when asked for. Safe
// for concurrent use: each caller gets its own slot (stream, staging,
// scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	err = r.Scoring(ctx, dist, r.w, r.h, func() error {
		sums, dm, err := r.run(ctx, dist)
		if err != nil {
			return err
		}
		sc = zenmetrics.Score{Metric: zenmetrics.Butteraugli, Value: sums[0], Extras: map[string]float64{"pnorm3": 0}}
		n := float64(r.w) * float64(r.h)
		if len(r.sz) > 0 {
			sc.Extras["pnorm3"] = norm(sums[1:4], n, 3)
		}
		if r.pnorm > 0 {
			sc.Extras["pnorm"] = 0
			if len(r.sz) > 0 {
				sc.Extras["pnorm"] = norm(sums[4:7], n, r.pnorm)
			}
		}
		if r.distMap {
			sc.DistMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: dm}
		}
		return nil
	})
	return sc, err
}

// run scores dist and returns the 8 sums (queueReduce) and, when asked
// for, the map.
func (r *reference) run(ctx context.Context, dist *zenmetrics.Image) (sums [8]float64, dm []float32, err error) {
	n := r.w * r.h
	if len(r.sz) == 0 {
		if r.distMap {
			dm = make([]float32, n)
		}
		return sums, dm, nil // below 8 px: libjxl's map is all zeros
	}
	raw := cuda.RawBytes(dist)
	err = r.InSlot(ctx, raw, func(s *slot) error {
		if err := s.wk.Upload(s.raw, dist.Pix[:raw]); err != nil {
			return err
		}
		lay := layoutOf(dist)
		if err := queueScore(launch.Stream{St: s.wk.Stream}, r.k, r.sz, r.intensity, s, r.lut[lay.bps], lay, r.sets, r.pnorm); err != nil {
			return err
		}
		spans := []cuda.Span{{Buf: s.tot, N: 64}}
		if r.distMap {
			spans = append(spans, cuda.Span{Buf: s.ws[0].dm, N: 4 * int64(n)})
		}
		out, err := s.wk.ReadBack(spans...)
		if err != nil {
			return err
		}
		copy(sums[:], cuda.Float64s(out, len(sums)))
		if r.distMap {
			dm = cuda.Float32s(out[64:], n)
		}
		return nil
	})
	if err != nil {
		return sums, nil, err
	}
	return sums, dm, nil
}

// norm is libjxl's ComputeDistanceP from the power sums of d^p, d^2p and
// d^4p over n values (cpu/butteraugli's finishDistanceP).
func norm(s []float64, n, p float64) float64 {
	one := 1.0 / n
	v := 0.0
	for i := 0; i < 3; i++ {
		v += math.Pow(one*s[i], 1.0/(p*float64(int(1)<<i)))
	}
	return v / 3.0
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() { r.RefBase.Release(func() { r.sets = nil }) }
