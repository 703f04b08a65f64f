// Package iwssim is IW-SSIM (piq 0.8.0's information_weighted_ssim) on
// CUDA: the host code that drives the kernels in iwssim.cu (compiled by
// NVRTC at first use, cached on disk) on the runtime of package cuda.
// Importing it registers the metric with every cuda.Backend (gpu/cuda/all
// imports it).
//
// It is the twin of gpu/webgpu/iwssim, in double where WebGPU has only
// float32: the kernels do the float64 CPU reference's (cpu/iwssim's)
// operations in its order (NVRTC with --fmad=false; math.Log2 rewritten
// with Go's algorithm), the sums run in its order, and so the score is
// cpu/iwssim's bit for bit on amd64 (TestEmulated runs the kernels on the
// CPU to check it, plane by plane; TestVsCPU on a GPU). Unlike the WebGPU
// version, which prepares the reference on the CPU and uploads it, the
// reference's half runs on the device as well: its pyramid, statistics,
// the neighbourhood covariance's sums per block row and vᵀC⁻¹v per
// block; only the four 10×10 eigenvalue problems run on the host
// (cpu/iwssim.InverseModel, the reference's own gonum step), between two
// round trips. A score uploads the distorted pixels through page-locked
// double buffers on the caller's own stream, converting rows as their
// bytes arrive, runs the distorted half (the passes are listed in
// iwssim.cu) and reads back two doubles per region row, which the host
// adds in row order.
//
// # Flat and degenerate references
//
// cpu/iwssim decides two things at rounding level (see its package doc):
// a band within FlatBandLimit(k) of zero gets a zero model, and
// eigenvalues within 2⁻³⁶ of the largest are zero. The second is
// InverseModel's own. For the first, the cov kernel also reads back each
// block row's largest |y| (exact: no arithmetic, only comparisons), and
// the host passes the band's maximum, compared with the same limit, to
// InverseModel. A pair whose weights are all zero at some scale (both
// images flat there) is refused with cpu/iwssim.ZeroWeightsError, as on
// the CPU: the row sums are the CPU's to the bit, exact zeros included,
// so no host-side guess (WebGPU's uniform-image check, needed there for
// float32) is needed.
//
// # Memory
//
// A prepared reference keeps on the device, per scale (the five scales
// together are about 4/3 of the image), its band y (8 bytes per pixel)
// and its region planes mu, vr, bm, bv, ss (40 bytes per pixel; mu, vr
// only at the last scale): about 64 bytes per pixel of the image. Each
// scorer (a slot; up to maxSlots per reference, made as callers need
// them; Prepare uses the first) holds the raw upload (up to 8 bytes per
// pixel, RGBA16), the distorted pyramid (about 11 bytes per pixel), one
// intermediate pyramid plane (4) and the six planes of the statistics'
// first pass (48), about 63 bytes per pixel plus the upload, with
// page-locked staging and read-back. Estimate gives the exact figure.
//
// # Strips
//
// With zenmetrics.ModeStrip (stripref.go, strip.go) an image taller than
// the device's memory allows is scored in horizontal bands with a 160-row
// halo, gpu/webgpu/iwssim's cut. Both halves still run on the device: the
// row-local steps (pyramid, statistics, vᵀC⁻¹v, the score's terms) per
// crop for the rows the band owns, the global ones as for a whole image:
// each band writes the covariance sums of its block rows into the image's
// table, the host adds them in row order and solves the eigenvalue
// problems once, and the score's row sums land at the image's rows and
// are pooled as a whole image's. The score is the whole image's bit for
// bit.
package iwssim

import (
	"context"
	"encoding/binary"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full scratch); more callers wait
// for a slot.
const maxSlots = 4

// estimate is the device memory of a prepared reference plus one scorer
// for uploads of raw bytes (host staging is page-locked host memory, not
// counted).
func estimate(w, h int, raw int64) int64 {
	return cuda.AllocSizes(refSizes(w, h)) + cuda.AllocSizes(slotSizes(w, h, raw))
}

// fits reports whether a w×h image stays within the kernels' indexing
// (scale 0's plane indices in int, rows in the grid's Y dimension).
func fits(w, h int) bool {
	return int64(w)*int64(h) <= math.MaxInt32 && int(cuda.Groups(h, blockY)) <= maxGridY
}

// minSide is piq's smallest side for five scales (161).
var minSide, _ = cpuiw.MinSize()

// reference is a prepared IW-SSIM reference on a CUDA device.
type reference struct {
	cuda.RefBase[*slot]
	k   *kernels
	gm  geometry
	ref refPlanes
}

// newSlot allocates a scorer's scratch for uploads of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, outBytes(r.gm), func(alloc func(int64) *cuda.Buffer) { fillSlot(s, r.gm.w, r.gm.h, raw, alloc) })
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
		Sizes: func(raw int64) []int64 { return slotSizes(r.gm.w, r.gm.h, raw) },
	}
}

// layoutOf is how im's samples sit in the upload buffer.
func layoutOf(im *zenmetrics.Image) layout {
	f := im.Format
	return layout{stride: im.Stride, channels: f.Channels(), bps: f.BytesPerSample()}
}

// f64Bytes writes v as the little-endian doubles the device reads into
// buf (grown as needed) and returns them.
func f64Bytes(buf *[]byte, v []float64) []byte {
	n := 8 * len(v)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// tooSmall is piq's minimum-size refusal.
func tooSmall(w, h int) error {
	return &zenmetrics.TooSmallError{Metric: zenmetrics.IWSSIM, Width: w, Height: h, MinWidth: minSide, MinHeight: minSide}
}

// prepare checks the memory, allocates the reference's planes and builds
// them on the device (build).
func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image) (_ *reference, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	w, h := ref.Width, ref.Height
	if w < minSide || h < minSide {
		return nil, tooSmall(w, h)
	}
	r := &reference{gm: newGeometry(w, h)}
	r.Init(b, maxSlots, r.slotFuncs())
	raw := cuda.RawBytes(ref)
	need := estimate(w, h, raw)
	if err := b.CheckFits("IW-SSIM", w, h, fits(w, h), need); err != nil {
		return nil, err
	}
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) { fillRef(&r.ref, w, h, alloc) },
		func(s *slot) error { return r.build(ctx, s, ref) })
	if err != nil {
		return nil, err
	}
	return r, nil
}

// build queues the reference's half in the slot s: the upload (the unpack
// of scale 0 into ref.y[0] following the bytes), queueReference, one
// read-back of the covariance sums and band maxima, the host's flatness
// test and eigenvalue step (model), the model's upload and queueMahal.
// Two round trips in all, the second one Build's.
func (r *reference) build(ctx context.Context, s *slot, im *zenmetrics.Image) error {
	q := launch.Stream{St: s.wk.Stream}
	w, h := r.gm.w, r.gm.h
	total := cuda.RawBytes(im)
	ready := unpacker(q, r.k, w, h, total, layoutOf(im), s.raw, r.ref.y[0])
	if err := s.wk.UploadOverlapped(s.raw, im.Pix[:total], ready); err != nil {
		return err
	}
	covBuf := s.x[0]
	if err := queueReference(q, r.k, r.gm, s, &r.ref, covBuf); err != nil {
		return err
	}
	_, n := covOffsets(r.gm)
	out, err := s.wk.ReadBack(cuda.Span{Buf: covBuf, N: 8 * int64(n)})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := model(r.gm, cuda.Float64s(out, n), &r.ref)
	if err != nil {
		return err
	}
	var buf []byte
	if err := s.wk.Upload(r.ref.model, f64Bytes(&buf, m)); err != nil {
		return err
	}
	return queueMahal(q, r.k, wholeWin(r.gm), &r.ref)
}

// pool adds each scale's row sums in row order and takes piq's product
// Π |Σ cs·iw / Σ iw|^w_k, as cpu/iwssim does (the last scale's mean over
// its rw·rh values), refusing a scale whose weights are all zero with
// cpu/iwssim's error.
func pool(gm geometry, sums []float64) (float64, error) {
	score := 1.0
	for k := 0; k < nScales; k++ {
		s := gm.s[k]
		var sn, sd float64
		for i := 0; i < s.rh; i++ {
			sn += sums[2*(gm.rowOff[k]+i)]
		}
		if weighted(k) {
			for i := 0; i < s.rh; i++ {
				sd += sums[2*(gm.rowOff[k]+i)+1]
			}
		} else {
			sd = float64(s.rw) * float64(s.rh)
		}
		if sd == 0 {
			// Every weight is zero: both images are flat at this scale
			// (a flat reference band has a zero model, see model). The
			// row sums are the CPU's to the bit, so this is where
			// cpu/iwssim refuses the pair too, with this error.
			return 0, cpuiw.ZeroWeightsError(k)
		}
		score *= math.Pow(math.Abs(sn/sd), kc.Weights[k])
	}
	return score, nil
}

// Score implements zenmetrics.Reference: Value is the IW-SSIM (1 =
// identical); there is no map (neither piq nor the CPU and WebGPU
// versions have one). Safe for concurrent use: each caller gets its own
// slot (stream, staging, scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	err = r.Scored(ctx, dist, r.gm.w, r.gm.h, cuda.RawBytes, func(s *slot) error {
		q := launch.Stream{St: s.wk.Stream}
		total := cuda.RawBytes(dist)
		ready := unpacker(q, r.k, r.gm.w, r.gm.h, total, layoutOf(dist), s.raw, s.x[0])
		if err := s.wk.UploadOverlapped(s.raw, dist.Pix[:total], ready); err != nil {
			return err
		}
		if err := queueScore(q, r.k, wholeWin(r.gm), s, &r.ref); err != nil {
			return err
		}
		out, err := s.wk.ReadBack(cuda.Span{Buf: s.sums, N: sumsBytes(r.gm)})
		if err != nil {
			return err
		}
		v, err := pool(r.gm, cuda.Float64s(out, 2*r.gm.rows))
		if err != nil {
			return err
		}
		sc = zenmetrics.Score{Metric: zenmetrics.IWSSIM, Value: v}
		return nil
	})
	return sc, err
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() { r.RefBase.Release(func() { r.ref = refPlanes{} }) }
