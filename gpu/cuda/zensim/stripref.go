package zensim

import (
	"context"
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripSlot is one scorer of a strip reference: the whole-image slot's
// buffers sized to the tallest crop (its strip sums for the whole image),
// the recomputed reference's crop pyramid (when not kept) and the strip
// upload's event.
type stripSlot struct {
	slot
	ref []*cuda.Buffer
	up  *cuda.StripUpload
}

// fillStripSlot allocates a strip slot's buffers with alloc, in
// stripPlan.slotSizes' order.
func fillStripSlot(s *stripSlot, p *stripPlan, raw int64, alloc func(int64) *cuda.Buffer) {
	fillSlot(&s.slot, p.geom, raw, alloc)
	s.ref = nil
	if !p.keep {
		for _, n := range pyramidSizes(cropDims(p.img, p.rows)) {
			s.ref = append(s.ref, alloc(n))
		}
	}
}

// uploader queues an upload of src into dst, calling ready with the bytes
// that have arrived (cuda.StripUpload.Upload on a device; the tests'
// replay otherwise).
type uploader func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error

// stripRun is what the strip queues need of a reference: its kernels,
// plan, decoding tables and (kept) every band's reference pyramid.
type stripRun struct {
	k    *kernels
	p    *stripPlan
	tab  *cuda.Buffer
	kept [][]*cuda.Buffer
}

// queueBandRef queues band i's reference half: the upload and conversion
// of its crop of ref, then its pyramid into out.
func (sr *stripRun) queueBandRef(q launch.Launcher, up uploader, s *slot, i int, ref *zenmetrics.Image, out []*cuda.Buffer) error {
	b := &sr.p.bands[i]
	crop := strips.Crop(ref, b.C0, b.C1)
	total := cuda.RawBytes(crop)
	ready := converter(q, sr.k, sr.p.w, sr.p.h, b, total, layoutOf(crop), s.raw, sr.tab, nil, out[0], nil)
	if err := up(s.raw, crop.Pix[:total], ready); err != nil {
		return err
	}
	return queuePyramid(q, sr.k, b.dims, out)
}

// queueScore queues a whole strip score after the flag's clearing: per
// band (first its reference half when not kept) the distorted crop's
// upload and conversion (compared with the band's reference), its
// pyramid, and every scale's blurs, records and the sums of the strips
// the band owns; then every scale's merge of all strips in order, as a
// whole image's.
func (sr *stripRun) queueScore(q launch.Launcher, up uploader, s *stripSlot, ref, dist *zenmetrics.Image) error {
	for i := range sr.p.bands {
		b := &sr.p.bands[i]
		rp := s.ref
		if sr.p.keep {
			rp = sr.kept[i]
		} else if err := sr.queueBandRef(q, up, &s.slot, i, ref, rp); err != nil {
			return err
		}
		crop := strips.Crop(dist, b.C0, b.C1)
		total := cuda.RawBytes(crop)
		ready := converter(q, sr.k, sr.p.w, sr.p.h, b, total, layoutOf(crop), s.raw, sr.tab, rp[0], s.dist[0], s.flag)
		if err := up(s.raw, crop.Pix[:total], ready); err != nil {
			return err
		}
		if err := queuePyramid(q, sr.k, b.dims, s.dist); err != nil {
			return err
		}
		for sc := range b.dims {
			if err := queueScale(q, sr.k, sr.p.geom, b, sc, &s.slot, rp); err != nil {
				return err
			}
		}
	}
	for sc := range sr.p.img {
		if err := queueMerge(q, sr.k, sr.p.geom, sc, &s.slot); err != nil {
			return err
		}
	}
	return nil
}

// stripRef is a prepared zensim reference scored strip by strip (Host: a
// copy of the reference, recomputed per score when not kept).
type stripRef struct {
	cuda.StripBase[*stripSlot]
	stripRun
}

// Strips reports the strip count and whether the reference pyramids stay
// resident (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.p.bands), r.p.keep }

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	if s.wk, s.up, err = r.Dev.NewStripScratch(raw, outBytes, func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.p, raw, alloc) }); err != nil {
		return nil, err
	}
	return s, nil
}

// freeSlot gives a slot's buffers, worker and event back, after its copy
// stream (the event's last upload may still be queued there).
func (r *stripRef) freeSlot(s *stripSlot) {
	var bufs []*cuda.Buffer
	for _, b := range append(s.buffers(), s.ref...) {
		if b != nil {
			bufs = append(bufs, b)
		}
	}
	r.Dev.FreeStripScratch(s.wk, s.up, bufs...)
	s.wk, s.ref, s.raw, s.up = nil, nil, nil, nil
}

// prepareStrips plans the strips within the free memory (or opt's strip
// height), checks the plan's memory before allocating anything, and
// computes every band's reference pyramid when they stay resident (else
// keeps a host copy of the reference for the scores).
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
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
	rawOf := func(rows int) int64 { return cropRaw(ref.Width, rows, ref.Stride, ref.Format) }
	p, err := cuda.PlanStrips(b,
		func(budget int64) (*stripPlan, error) {
			return planStrips(ref.Width, ref.Height, rawOf, budget, opt.StripHeight)
		},
		func(p *stripPlan) int64 { return p.memory(rawOf(p.rows)) })
	if err != nil {
		return nil, err
	}
	raw := rawOf(p.rows)
	r := &stripRef{}
	r.p = p
	r.Init(b, maxSlots, cuda.SlotFuncs[*stripSlot]{
		New:   r.newSlot,
		Free:  r.freeSlot,
		Raw:   func(s *stripSlot) **cuda.Buffer { return &s.raw },
		Sizes: func(raw int64) []int64 { return r.p.slotSizes(raw) },
	})
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		sizes := p.refSizes()
		r.tab = alloc(sizes[0])
		sizes = sizes[1:]
		if !p.keep {
			r.KeepHost(ref)
			return
		}
		for _, bd := range p.bands {
			var pyr []*cuda.Buffer
			for range bd.dims {
				pyr = append(pyr, alloc(sizes[0]))
				sizes = sizes[1:]
			}
			r.kept = append(r.kept, pyr)
		}
	}, func(s *stripSlot) error {
		// The tables travel on the kernel stream, the pixels on the copy
		// stream: the first conversion waits for both.
		if err := s.wk.Upload(r.tab, tabBytes()); err != nil {
			return err
		}
		q := launch.Stream{St: s.wk.Stream}
		for i := range r.kept {
			if err := r.queueBandRef(q, s.up.Upload, &s.slot, i, ref, r.kept[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference, with the whole-image Score's
// result bit for bit (strip.go). Safe for concurrent use.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	res, err := r.ScoreDetail(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.Zensim, Value: res.Score}, nil
}

// ScoreDetail is Score with cpu/zensim's Result (the distance and the 228
// features).
func (r *stripRef) ScoreDetail(ctx context.Context, dist *zenmetrics.Image) (res *cpuz.Result, err error) {
	err = r.Scored(ctx, dist, r.p.w, r.p.h, r.p.rows, func(s *stripSlot) error {
		st := s.wk.Stream
		if err := st.Zero(s.flag, 0, 4); err != nil {
			return err
		}
		if err := r.queueScore(launch.Stream{St: st}, s.up.Upload, s, r.Host, dist); err != nil {
			_ = st.Sync()
			return err
		}
		out, err := s.wk.ReadBack(cuda.Span{Buf: s.res, N: resBytes}, cuda.Span{Buf: s.flag, N: 4})
		if err != nil {
			return err
		}
		res = pool(r.p.w, r.p.h, len(r.p.img), out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *stripRef) Release() { r.StripBase.Release(func() { r.kept = nil }) }
