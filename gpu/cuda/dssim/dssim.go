// Package dssim is DSSIM (kornelski/dssim, dssim-core 3.4.0) on CUDA: the
// host code that drives the kernels in dssim.cu (compiled by NVRTC at
// first use, cached on disk) on the runtime of package cuda. Importing it
// registers the metric with every cuda.Backend (gpu/cuda/all imports it).
//
// It is the twin of gpu/webgpu/dssim: the same passes (unpack to linear
// light and L*a*b*, per scale the chroma blur, the mu/sigma² blurs, the
// cross blur and the SSIM map, 2×2 downsampling) on the same float32
// arithmetic as the CPU reference (cpu/dssim, whose package doc describes
// every step), with the pooling in double in the reference's own order,
// so that the maps are cpu/dssim's bit for bit and so, as a rule, are the
// scores.
//
// A prepared reference keeps its img and mu planes of every scale on the
// device (32 bytes per pixel × 4/3) and the decoding tables. A score
// uploads the distorted pixels (8/16-bit, as stored) through page-locked
// double buffers on the caller's own stream, converting scale 0's rows to
// linear light and L*a*b* as their bytes arrive, runs the distorted half
// in the caller's slot (about 72 bytes per pixel of scratch) and reads
// back 320 bytes (and scale 0's SSIM map when asked for). Strips
// (ModeStrip) are strip.go and stripref.go: the same kernels over crops,
// with the whole-image result bit for bit.
package dssim

import (
	"context"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full scratch); more callers wait
// for a slot.
const maxSlots = 4

// refSizes is the size of every buffer of a w×h reference: the decoding
// tables, then img and mu per scale.
func refSizes(w, h int) []int64 {
	out := []int64{4 * lutLen}
	for _, d := range scaleDims(w, h) {
		n := 16 * int64(d[0]) * int64(d[1])
		out = append(out, n, n)
	}
	return out
}

// estimate is the device memory of a prepared reference plus one scorer
// for uploads of raw bytes (host staging is page-locked host memory, not
// counted).
func estimate(w, h int, raw int64) int64 {
	return cuda.AllocSizes(refSizes(w, h)) + cuda.AllocSizes(slotSizes(w, h, raw))
}

// fits reports whether a w×h image stays within the kernels' indexing
// (plane indices in int, rows in the grid's Y dimension).
func fits(w, h int) bool {
	return int64(w)*int64(h) <= math.MaxInt32 && int(cuda.Groups(h, blockY)) <= maxGridY
}

// reference is a prepared DSSIM reference on a CUDA device.
type reference struct {
	cuda.RefBase[*slot]
	k       *kernels
	w, h    int
	dims    [][2]int
	distMap bool
	lut     *cuda.Buffer
	ref     planes
}

// outBytes is the page-locked read-back a slot needs: the results, and
// the map when asked for.
func (r *reference) outBytes() int64 {
	if r.distMap {
		return resBytes + 4*int64(r.w)*int64(r.h)
	}
	return resBytes
}

// newSlot allocates a scorer's scratch for uploads of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, r.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillSlot(s, r.w, r.h, raw, alloc) })
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
		Sizes: func(raw int64) []int64 { return slotSizes(r.w, r.h, raw) },
	}
}

// layoutOf is how im's samples sit in the upload buffer.
func layoutOf(im *zenmetrics.Image) layout {
	f := im.Format
	l := layout{stride: im.Stride, channels: f.Channels(), bps: f.BytesPerSample()}
	if f.HasAlpha() {
		l.alpha = 1
	}
	return l
}

// upload queues im's raw bytes into s.raw on the slot's copy stream and,
// as each chunk arrives, the conversion of the rows it completes (scale
// 0's linear and L*a*b* planes) on its kernel stream, so that those
// kernels run while the rest of the image travels.
func (r *reference) upload(s *slot, im *zenmetrics.Image) error {
	total := cuda.RawBytes(im)
	ready := unpacker(launch.Stream{St: s.wk.Stream}, r.k, r.w, r.h, 0, total, layoutOf(im), r.lut, s)
	return s.wk.UploadOverlapped(s.raw, im.Pix[:total], ready)
}

// prepare does the reference half: upload, unpack, and every scale's img
// and mu planes, resident until Release.
func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *reference, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	r := &reference{w: ref.Width, h: ref.Height, dims: scaleDims(ref.Width, ref.Height), distMap: opt.DistMap}
	r.Init(b, maxSlots, r.slotFuncs())
	raw := cuda.RawBytes(ref)
	need := estimate(r.w, r.h, raw)
	if err := b.CheckFits("DSSIM", r.w, r.h, fits(r.w, r.h), need); err != nil {
		return nil, err
	}
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		sizes := refSizes(r.w, r.h)
		r.lut = alloc(sizes[0])
		for sc := range r.dims {
			r.ref.img = append(r.ref.img, alloc(sizes[1+2*sc]))
			r.ref.mu = append(r.ref.mu, alloc(sizes[2+2*sc]))
		}
	}, func(s *slot) error {
		if err := s.wk.Upload(r.lut, lutBytes()); err != nil {
			return err
		}
		// The tables travel on the kernel stream, the pixels on the copy
		// stream: the first unpack waits for both.
		if err := r.upload(s, ref); err != nil {
			return err
		}
		return queueReference(launch.Stream{St: s.wk.Stream}, r.k, r.dims, layoutOf(ref).alpha, 0, s, &r.ref)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference: Value is the DSSIM, DistMap
// scale 0's SSIM map when asked for (1 where the images agree). Safe for
// concurrent use: each caller gets its own slot (stream, staging,
// scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	err = r.Scored(ctx, dist, r.w, r.h, cuda.RawBytes, func(s *slot) error {
		if err := r.upload(s, dist); err != nil {
			return err
		}
		if err := queueDistorted(launch.Stream{St: s.wk.Stream}, r.k, r.dims, layoutOf(dist).alpha, s, &r.ref); err != nil {
			return err
		}
		sc, err = readScore(s.wk, s.res, s.maps[0], r.dims, r.w, r.h, r.distMap)
		return err
	})
	return sc, err
}

// readScore reads back the results (and scale 0's map into a w×h plane
// with distMap) after a score's kernels and pools them: the end of a
// whole image's score and of a strip one.
func readScore(wk *cuda.Worker, res, map0 *cuda.Buffer, dims [][2]int, w, h int, distMap bool) (zenmetrics.Score, error) {
	n := int64(w) * int64(h)
	spans := []cuda.Span{{Buf: res, N: resBytes}}
	if distMap {
		spans = append(spans, cuda.Span{Buf: map0, N: 4 * n})
	}
	out, err := wk.ReadBack(spans...)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	sc := zenmetrics.Score{Metric: zenmetrics.DSSIM, Value: pool(dims, cuda.Float64s(out, 8*maxScales))}
	if distMap {
		sc.DistMap = &zenmetrics.FloatPlane{Width: w, Height: h, Pix: cuda.Float32s(out[resBytes:], int(n))}
	}
	return sc, nil
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() { r.RefBase.Release(func() { r.ref = planes{} }) }
