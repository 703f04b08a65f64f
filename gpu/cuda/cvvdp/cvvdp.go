// Package cvvdp is ColorVideoVDP (pycvvdp 0.5.4 on still images, as the
// CPU reference cpu/cvvdp computes it) on CUDA: the host code that drives
// the kernels in cvvdp.cu (compiled by NVRTC at first use, cached on
// disk) on the runtime of package cuda. Importing it registers the metric
// with every cuda.Backend (gpu/cuda/all imports it).
//
// It is the twin of gpu/webgpu/cvvdp: the same passes (unpack through the
// display model to DKL, the Gaussian pyramid, per band the Weber contrast
// against the enlarged coarser level, the castleCSF sensitivities, the
// mutual masking with the phase-uncertainty blur, per-row sums; the base
// band in one block; the distortion map's reconstruction), with the
// separable pyramid passes fused and no host round trip between passes.
// Unlike the WebGPU kernels, these reproduce cpu/cvvdp bit for bit: the
// float32 operations in its order (NVRTC with --fmad=false), its powers,
// logarithms and exponentials evaluated from its own tables and
// polynomials in double (cvvdp.FastMathTables), and its float64 sums in
// its order (each row left to right, the rows top to bottom). The pyramid
// layout, the CSF rows, the display's tables and the final pooling come
// from cpu/cvvdp (Plan, KernelConstants, Plan.JOD), so the two cannot
// drift apart.
//
// A prepared reference keeps on the device, per band below the base band,
// its R·S·gain and S per channel (24 bytes per pixel of the band, about
// 32 bytes per image pixel over the pyramid), the base band's contrast
// and S, and the display's sample tables and constants (257 KiB). A score
// uploads the distorted pixels (8/16-bit, as stored) through page-locked
// double buffers on the caller's own stream, converting level 0's rows to
// DKL as their bytes arrive, runs the distorted half in the caller's slot
// (its Gaussian pyramid, 16 bytes per image pixel, and three full-size
// plane triples, 36, plus the upload: about 60 bytes per pixel; the
// distortion map adds 5.3) and reads back 24 bytes per band (and the map
// when asked for). With zenmetrics.ModeStrip (strip.go, stripref.go) the
// pyramid stays whole and each band's per-pixel work runs in windows of
// its rows, with the reference's planes on the device or on the host:
// the same JOD and heatmap as the whole image, bit for bit.
package cvvdp

import (
	"context"
	"encoding/binary"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full scratch); more callers wait
// for a slot.
const maxSlots = 4

// estimate is the device memory of a prepared reference of plan p plus
// one scorer for uploads of raw bytes, with or without the distortion
// map (host staging is page-locked host memory, not counted).
func estimate(p *cpucv.Plan, raw int64, distMap bool) int64 {
	return cuda.AllocSizes(refSizes(p)) + cuda.AllocSizes(slotSizes(p, raw, distMap))
}

// fits reports whether a w×h image stays within the kernels' indexing
// (ints for the base band's and the row sums' indices, rows in the grid's
// Y dimension).
func fits(w, h int) bool {
	return 3*int64(w)*int64(h) <= math.MaxInt32 && int(cuda.Groups(h, blockY)) <= maxGridY
}

// reference is a prepared CVVDP reference on a CUDA device.
type reference struct {
	cuda.RefBase[*slot]
	k       *kernels
	plan    *cpucv.Plan
	w, h    int
	distMap bool
	ref     refBufs
}

// outBytes is the page-locked read-back a slot needs: the results, and
// the map when asked for.
func (r *reference) outBytes() int64 {
	if r.distMap {
		return resBytes(r.plan) + 4*int64(r.w)*int64(r.h)
	}
	return resBytes(r.plan)
}

// newSlot allocates a scorer's scratch for uploads of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, r.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillSlot(s, r.plan, raw, r.distMap, alloc) })
	if err != nil {
		return nil, err
	}
	return s, nil
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
		Sizes: func(raw int64) []int64 { return slotSizes(r.plan, raw, r.distMap) },
	}
}

// layoutOf is how im's samples sit in the upload buffer.
func layoutOf(im *zenmetrics.Image) layout {
	f := im.Format
	l := layout{stride: im.Stride, channels: f.Channels(), bps: f.BytesPerSample()}
	if f.IsGray() {
		l.gray = 1
	}
	return l
}

// f32Bytes is v as the little-endian words the device reads.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// readSums reads the results (three doubles per band) from out.
func readSums(p *cpucv.Plan, out []byte) [][nCh]float64 {
	sums := make([][nCh]float64, p.Levels)
	for b := range sums {
		for c := 0; c < nCh; c++ {
			sums[b][c] = math.Float64frombits(binary.LittleEndian.Uint64(out[8*(3*b+c):]))
		}
	}
	return sums
}

// upload queues im's raw bytes into s.raw on the slot's copy stream and,
// as each chunk arrives, the conversion of the rows it completes on its
// kernel stream, so that those kernels run while the rest travels.
func (r *reference) upload(s *slot, im *zenmetrics.Image) error {
	total := cuda.RawBytes(im)
	ready := unpacker(launch.Stream{St: s.wk.Stream}, r.k, r.plan, 0, r.h, total, layoutOf(im), &r.ref, s)
	return s.wk.UploadOverlapped(s.raw, im.Pix[:total], ready)
}

// prepare does the reference half: upload, unpack, the pyramid and every
// band's reference planes, resident until Release.
func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *reference, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	p, err := cpucv.NewPlan(ref.Width, ref.Height, opt.Display)
	if err != nil {
		return nil, err
	}
	r := &reference{plan: p, w: ref.Width, h: ref.Height, distMap: opt.DistMap}
	r.Init(b, maxSlots, r.slotFuncs())
	raw := cuda.RawBytes(ref)
	need := estimate(p, raw, r.distMap)
	if err := b.CheckFits("CVVDP", r.w, r.h, fits(r.w, r.h), need); err != nil {
		return nil, err
	}
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		sizes := refSizes(p)
		next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return alloc(n) }
		r.ref.lut, r.ref.kb = next(), next()
		for bd := 0; bd+1 < p.Levels; bd++ {
			r.ref.rp = append(r.ref.rp, next())
			r.ref.s = append(r.ref.s, next())
		}
		r.ref.rb = next()
	}, func(s *slot) error {
		// The tables travel on the kernel stream, the pixels on the copy
		// stream: the first unpack waits for both.
		if err := s.wk.Upload(r.ref.lut, f32Bytes(lutFloats(p))); err != nil {
			return err
		}
		if err := s.wk.Upload(r.ref.kb, f32Bytes(kbFloats(p))); err != nil {
			return err
		}
		if err := r.upload(s, ref); err != nil {
			return err
		}
		return queueReference(launch.Stream{St: s.wk.Stream}, r.k, p, s, &r.ref)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference: Value is the JOD, DistMap
// pycvvdp's raw heatmap when asked for (0 where the images agree). Safe
// for concurrent use: each caller gets its own slot (stream, staging,
// scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	sums, dm, err := r.run(ctx, dist)
	if err != nil {
		return sc, err
	}
	sc = zenmetrics.Score{Metric: zenmetrics.CVVDP, Value: r.plan.JOD(sums)}
	if dm != nil {
		sc.DistMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: dm}
	}
	return sc, nil
}

// run scores dist on the device and returns the band sums and, with a
// map, the map.
func (r *reference) run(ctx context.Context, dist *zenmetrics.Image) (sums [][nCh]float64, dm []float32, err error) {
	err = r.Scored(ctx, dist, r.w, r.h, cuda.RawBytes, func(s *slot) error {
		if err := r.upload(s, dist); err != nil {
			return err
		}
		if err := queueDistorted(launch.Stream{St: s.wk.Stream}, r.k, r.plan, s, &r.ref); err != nil {
			return err
		}
		rb := resBytes(r.plan)
		spans := []cuda.Span{{Buf: s.res, N: rb}}
		n := int64(r.w) * int64(r.h)
		if r.distMap {
			spans = append(spans, cuda.Span{Buf: s.mm, N: 4 * n})
		}
		out, err := s.wk.ReadBack(spans...)
		if err != nil {
			return err
		}
		sums = readSums(r.plan, out)
		if r.distMap {
			dm = cuda.Float32s(out[rb:], int(n))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return sums, dm, nil
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() { r.RefBase.Release(func() { r.ref = refBufs{} }) }
