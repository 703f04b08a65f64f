package dssim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripSlot is one scorer of a strip reference: the full-image slot's
// scratch sized to the tallest crop (its maps unused), the image's map of
// every scale, the recomputed reference's crop planes (when not kept) and
// the strip upload's event; all lists the buffers to free but raw.
type stripSlot struct {
	slot
	maps []*cuda.Buffer
	ref  planes
	up   *cuda.StripUpload
	all  []*cuda.Buffer
}

// fillStripSlot allocates a strip slot's buffers with alloc, in
// stripPlan.slotSizes' order.
func fillStripSlot(s *stripSlot, p *stripPlan, raw int64, alloc func(int64) *cuda.Buffer) {
	sizes := p.slotSizes(raw)
	s.raw = alloc(sizes[0]) // not in all: the pool may replace it
	sizes = sizes[1:]
	next := func() *cuda.Buffer {
		b := alloc(sizes[0])
		sizes = sizes[1:]
		s.all = append(s.all, b)
		return b
	}
	s.lin[0], s.lin[1], s.lab, s.img, s.mu = next(), next(), next(), next(), next()
	s.maps = s.maps[:0]
	for range p.dims {
		s.maps = append(s.maps, next())
	}
	s.rows, s.cnt, s.res = next(), next(), next()
	if !p.keep {
		s.ref = planes{}
		for range p.dims {
			s.ref.img = append(s.ref.img, next())
			s.ref.mu = append(s.ref.mu, next())
		}
	}
}

// uploader queues an upload of src into dst, calling ready with the bytes
// that have arrived (cuda.StripUpload.Upload on a device; the tests'
// replay otherwise).
type uploader func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error

// stripRun is what the strip queues need of a reference: its kernels,
// plan, decoding tables and (kept) every band's reference planes.
type stripRun struct {
	k    *kernels
	p    *stripPlan
	lut  *cuda.Buffer
	kept []planes
}

// queueBandRef queues band i's reference half: the upload and unpack of
// its crop of ref, then its scales' img and mu planes into out.
func (sr *stripRun) queueBandRef(q launch.Launcher, up uploader, s *slot, i int, ref *zenmetrics.Image, out *planes) error {
	b := sr.p.bands[i]
	crop := strips.Crop(ref, b.C0, b.C1)
	total := cuda.RawBytes(crop)
	lay := layoutOf(crop)
	if err := up(s.raw, crop.Pix[:total], unpacker(q, sr.k, sr.p.w, b.Rows(), b.C0, total, lay, sr.lut, s)); err != nil {
		return err
	}
	return queueReference(q, sr.k, b.dims, lay.alpha, b.C0, s, out)
}

// queueScore queues a whole strip score: per band (first its reference
// half when not kept) the distorted crop's upload and unpack, its scales
// and their SSIM maps' owned rows into the image's maps, then the pooling
// of every scale's map into s.res, exactly as a whole image's.
func (sr *stripRun) queueScore(q launch.Launcher, up uploader, s *stripSlot, ref, dist *zenmetrics.Image) error {
	for i, b := range sr.p.bands {
		rp := &s.ref
		if sr.p.keep {
			rp = &sr.kept[i]
		} else if err := sr.queueBandRef(q, up, &s.slot, i, ref, rp); err != nil {
			return err
		}
		crop := strips.Crop(dist, b.C0, b.C1)
		total := cuda.RawBytes(crop)
		lay := layoutOf(crop)
		if err := up(s.raw, crop.Pix[:total], unpacker(q, sr.k, sr.p.w, b.Rows(), b.C0, total, lay, sr.lut, &s.slot)); err != nil {
			return err
		}
		for sc := range b.dims {
			if err := queueMap(q, sr.k, b.dims, sc, lay.alpha, b.C0, &s.slot, rp, b.lo[sc], b.hi[sc], b.C0>>sc, s.maps[sc]); err != nil {
				return err
			}
		}
	}
	for sc, d := range sr.p.dims {
		if err := queuePool(q, sr.k, d[0], d[1], sc, s.maps[sc], &s.slot); err != nil {
			return err
		}
	}
	return nil
}

// stripRef is a prepared DSSIM reference scored strip by strip (Host: a
// copy of the reference, recomputed per score when not kept).
type stripRef struct {
	cuda.StripBase[*stripSlot]
	stripRun
	distMap bool
}

// Strips reports the strip count and whether the reference planes stay
// resident (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.p.bands), r.p.keep }

func (r *stripRef) outBytes() int64 {
	if r.distMap {
		return resBytes + 4*int64(r.p.w)*int64(r.p.h)
	}
	return resBytes
}

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	if s.wk, s.up, err = r.Dev.NewStripScratch(raw, r.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.p, raw, alloc) }); err != nil {
		return nil, err
	}
	return s, nil
}

func (r *stripRef) freeSlot(s *stripSlot) {
	r.Dev.FreeStripScratch(s.wk, s.up, append(s.all, s.raw)...)
	s.wk, s.all, s.raw = nil, nil, nil
}

// prepareStrips plans the strips within the free memory (or opt's strip
// height), checks the plan's memory before allocating anything, and
// computes every band's reference planes when they stay resident (else
// keeps a host copy of the reference for the scores).
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
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
	r := &stripRef{distMap: opt.DistMap}
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
		r.lut = alloc(sizes[0])
		sizes = sizes[1:]
		if p.keep {
			for _, bd := range p.bands {
				var pl planes
				for range bd.dims {
					pl.img = append(pl.img, alloc(sizes[0]))
					pl.mu = append(pl.mu, alloc(sizes[1]))
					sizes = sizes[2:]
				}
				r.kept = append(r.kept, pl)
			}
		} else {
			r.KeepHost(ref)
		}
	}, func(s *stripSlot) error {
		if err := s.wk.Upload(r.lut, lutBytes()); err != nil {
			return err
		}
		q := launch.Stream{St: s.wk.Stream}
		for i := range r.kept {
			if err := r.queueBandRef(q, s.up.Upload, &s.slot, i, ref, &r.kept[i]); err != nil {
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
// results (the same maps, pooled the same way). Safe for concurrent use.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	err = r.Scored(ctx, dist, r.p.w, r.p.h, r.p.rows, func(s *stripSlot) error {
		st := s.wk.Stream
		if err := r.queueScore(launch.Stream{St: st}, s.up.Upload, s, r.Host, dist); err != nil {
			_ = st.Sync()
			return err
		}
		sc, err = readScore(s.wk, s.res, s.maps[0], r.p.dims, r.p.w, r.p.h, r.distMap)
		return err
	})
	return sc, err
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *stripRef) Release() { r.StripBase.Release(func() { r.kept = nil }) }
