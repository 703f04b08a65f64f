// Package zensim is zensim 0.2.7 (imazen/zensim, default profile
// zensim-preview-v0.2) on CUDA: the host code that drives the kernels in
// zensim.cu (compiled by NVRTC at first use, cached on disk) on the
// runtime of package cuda. Importing it registers the metric with every
// cuda.Backend (gpu/cuda/all imports it).
//
// It is the twin of gpu/webgpu/zensim: the same passes (raw bytes to
// positive XYB at zensim's padded width, the 2×2 pyramid, per scale the
// horizontal box blur as zensim's running sums, one thread per row and
// channel, then the vertical running sums restarting at every 16-row
// strip and the per-pixel SSIM, edge and high-frequency values) on the
// same float32 arithmetic as the CPU reference (cpu/zensim, whose package
// doc is the algorithm). Where WGSL has to sum in float32 trees, CUDA has
// double: the sums are cpu/zensim's own float64 chains in its order (per
// strip over its 8-column groups and their rows, then its scalar tail,
// then the strips in order), so the 228 features and the score are the
// CPU's bit for bit, as a rule, and the host pools them with cpu/zensim's
// Finish (the weights live only there).
//
// A score, all on the caller's stream with no host round-trip between
// passes:
//
//	xyb     raw 8/16-bit rows -> scale 0's X, Y, B planes as their bytes
//	        arrive; compares each value with the reference's bits (zensim
//	        scores identical images 100)
//	down    scale s -> s+1 (three planes)
//	per scale (the three channels in each launch):
//	  hblur   one thread per row, a warp's rows through shared-memory tiles
//	          that the block's 4 warps load (the next tile in flight while
//	          warp 0 walks the current one) and store, coalesced:
//	          (mu1, mu2, ssq, s12) per pixel
//	  vstats  one thread per column and strip: the vertical sums and the
//	          per-pixel values, then through shared memory one record of
//	          20 values per output row and zensim column unit (8-column
//	          group or tail column)
//	  chain   per strip, channel and quantity: the float64 chain, fed
//	          from shared memory by the block's coalesced batch loads
//	  merge   the strips in order (loaded in batches): 20 values per
//	          channel
//
// and a read-back of 1924 bytes.
//
// A prepared reference keeps its XYB pyramid on the device (12 bytes per
// padded pixel × about 4/3) and the decoding tables (273 KiB). A score
// uploads the distorted pixels (8/16-bit, as stored) through page-locked
// double buffers on the caller's own slot and runs there: the upload, its
// own pyramid (12 bytes per padded pixel × 4/3), the blur (48 bytes per
// padded pixel of scale 0, reused by every scale) and the records (about
// 30 bytes per padded pixel), about 95 bytes per padded pixel of scratch
// plus the upload.
//
// Strips (zenmetrics.ModeStrip, strip.go and stripref.go): an image
// taller than the device's memory allows is scored band by band, with
// gpu/webgpu/zensim's bands; each band computes the whole image's values
// for the zensim strips it owns and writes their sums to the whole
// image's slots, merged once at the end, so the features and the score
// are the whole image's bit for bit. The reference's pyramid of every
// band stays resident when it fits, or is recomputed per score from a
// host copy of the reference.
package zensim

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// maxSlots bounds the scorers that run at once on one reference (each has
// a stream, page-locked staging and a full scratch); more callers wait
// for a slot.
const maxSlots = 4

// scaleDims is the plane size (padded width, rows) of every scale zensim
// uses for a w×h image.
func scaleDims(w, h int) [][2]int { return cpuz.ScaleSizes(w, h) }

// refSizes is the size of every buffer of a reference: the tables, then
// one buffer per scale.
func refSizes(dims [][2]int) []int64 {
	return append([]int64{4 * tabLen}, pyramidSizes(dims)...)
}

// estimate is the device memory of a prepared reference plus one scorer
// for uploads of raw bytes (host staging is page-locked host memory, not
// counted).
func estimate(w, h int, raw int64) int64 {
	g := newGeom(w, h, nil)
	return cuda.AllocSizes(refSizes(g.img)) + cuda.AllocSizes(slotSizes(g, raw))
}

// fits reports whether a w×h image is large enough for zensim and stays
// within the kernels' indexing: the padded pixel count of a plane in int
// (buffer offsets are size_t), the rows in the grid's Y dimension.
func fits(w, h int) bool {
	if w < cpuz.MinSize || h < cpuz.MinSize {
		return false
	}
	pw := int64(cpuz.PaddedWidth(w))
	return pw*int64(h) <= math.MaxInt32 && int(cuda.Groups(h, blockY)) <= maxGridY
}

// reference is a prepared zensim reference on a CUDA device.
type reference struct {
	cuda.RefBase[*slot]
	k    *kernels
	w, h int
	g    *geom // the whole image as one band
	tab  *cuda.Buffer
	ref  []*cuda.Buffer // the XYB pyramid, one buffer per scale
}

// newSlot allocates a scorer's scratch for uploads of up to raw bytes.
func (r *reference) newSlot(raw int64) (*slot, error) {
	s := &slot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, outBytes, func(alloc func(int64) *cuda.Buffer) { fillSlot(s, r.g, raw, alloc) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// freeSlot gives a slot's buffers and worker back to the device.
func (r *reference) freeSlot(s *slot) {
	var bufs []*cuda.Buffer
	for _, b := range s.buffers() {
		if b != nil {
			bufs = append(bufs, b)
		}
	}
	r.Dev.FreeScratch(s.wk, bufs...)
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
		Sizes: func(raw int64) []int64 { return slotSizes(r.g, raw) },
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
// as each chunk arrives, the XYB conversion of the rows it completes into
// out on its kernel stream (compared with cmp's bits unless cmp is nil),
// so that those kernels run while the rest of the image travels.
func (r *reference) upload(s *slot, im *zenmetrics.Image, cmp, out *cuda.Buffer) error {
	total := cuda.RawBytes(im)
	var flag *cuda.Buffer
	if cmp != nil {
		flag = s.flag
	}
	ready := converter(launch.Stream{St: s.wk.Stream}, r.k, r.w, r.h, &r.g.bands[0], total, layoutOf(im), s.raw, r.tab, cmp, out, flag)
	return s.wk.UploadOverlapped(s.raw, im.Pix[:total], ready)
}

// prepare does the reference half: upload, XYB and the pyramid, resident
// until Release.
func prepare(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image) (_ *reference, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if ref.Width < cpuz.MinSize || ref.Height < cpuz.MinSize {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.Zensim, Width: ref.Width, Height: ref.Height,
			MinWidth: cpuz.MinSize, MinHeight: cpuz.MinSize}
	}
	if !supported() {
		return nil, fmt.Errorf("%w: zensim on CUDA: a channel of the weights needs the MSE-only mode", zenmetrics.ErrUnsupported)
	}
	r := &reference{w: ref.Width, h: ref.Height, g: newGeom(ref.Width, ref.Height, nil)}
	r.Init(b, maxSlots, r.slotFuncs())
	raw := cuda.RawBytes(ref)
	need := estimate(r.w, r.h, raw)
	if err := b.CheckFits("zensim", r.w, r.h, fits(r.w, r.h), need); err != nil {
		return nil, err
	}
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		sizes := refSizes(r.g.img)
		r.tab = alloc(sizes[0])
		for s := range r.g.img {
			r.ref = append(r.ref, alloc(sizes[1+s]))
		}
	}, func(s *slot) error {
		if err := s.wk.Upload(r.tab, tabBytes()); err != nil {
			return err
		}
		// The tables travel on the kernel stream, the pixels on the copy
		// stream: the first conversion waits for both.
		if err := r.upload(s, ref, nil, r.ref[0]); err != nil {
			return err
		}
		return queuePyramid(launch.Stream{St: s.wk.Stream}, r.k, r.g.img, r.ref)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference: Value is zensim's score (100 for
// identical images, lower is worse). zensim has no map. Safe for
// concurrent use: each caller gets its own slot (stream, staging,
// scratch).
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	res, err := r.ScoreDetail(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.Zensim, Value: res.Score}, nil
}

// ScoreDetail is Score with cpu/zensim's Result: the distance and the 228
// features (the tests compare them with the CPU's feature by feature).
func (r *reference) ScoreDetail(ctx context.Context, dist *zenmetrics.Image) (res *cpuz.Result, err error) {
	err = r.Scored(ctx, dist, r.w, r.h, cuda.RawBytes, func(s *slot) error {
		st := s.wk.Stream
		if err := st.Zero(s.flag, 0, 4); err != nil {
			return err
		}
		if err := r.upload(s, dist, r.ref[0], s.dist[0]); err != nil {
			return err
		}
		q := launch.Stream{St: st}
		if err := queuePyramid(q, r.k, r.g.img, s.dist); err != nil {
			return err
		}
		if err := queueStats(q, r.k, r.g, s, r.ref); err != nil {
			return err
		}
		out, err := s.wk.ReadBack(cuda.Span{Buf: s.res, N: resBytes}, cuda.Span{Buf: s.flag, N: 4})
		if err != nil {
			return err
		}
		res = pool(r.w, r.h, len(r.g.img), out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pool turns the read-back (the results of nScales scales, then the
// flag) into cpu/zensim's Result.
func pool(w, h, nScales int, out []byte) *cpuz.Result {
	if binary.LittleEndian.Uint32(out[resBytes:]) == 0 {
		return cpuz.Identical()
	}
	sums := make([][3]cpuz.Sums, nScales)
	for s := range sums {
		for c := 0; c < 3; c++ {
			o := int64(s*3+c) * nq * 8
			f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(out[o+8*int64(i):])) }
			sums[s][c] = cpuz.Sums{
				SSIM: f(0), SSIM2: f(1), SSIM4: f(2), SSIM8: f(3),
				Art: f(4), Art2: f(5), Art4: f(6), Art8: f(7),
				Det: f(8), Det2: f(9), Det4: f(10), Det8: f(11),
				MSE: f(12), HFSqSrc: f(13), HFSqDst: f(14), HFAbsSrc: f(15), HFAbsDst: f(16),
				SSIMMax: float32(f(17)), ArtMax: float32(f(18)), DetMax: float32(f(19)),
			}
		}
	}
	return cpuz.Finish(w, h, sums)
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *reference) Release() { r.RefBase.Release(func() { r.ref = nil }) }
