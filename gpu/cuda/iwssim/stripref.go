package iwssim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripSlot is one scorer of a strip reference: the whole-image slot's
// scratch sized to the tallest crop (its row sums the image's), the
// recomputed reference's crop planes (when not kept; their model and
// eigenvalue counts are the reference's, set at each score) and the strip
// upload's event; all lists the buffers to free but raw.
type stripSlot struct {
	slot
	ref refPlanes
	up  *cuda.StripUpload
	all []*cuda.Buffer
}

// fillCrop allocates one crop's reference planes (cropPlanes' order)
// with next.
func fillCrop(p *refPlanes, next func() *cuda.Buffer) {
	for k := range p.y {
		p.y[k] = next()
		for m := 0; m < mapsAt(k); m++ {
			p.m[k][m] = next()
		}
	}
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
	for k := range s.x {
		s.x[k] = next()
	}
	s.tmp, s.g, s.bx, s.sums = next(), next(), next(), next()
	s.ref = refPlanes{}
	if !p.keep {
		fillCrop(&s.ref, next)
	}
}

// uploader queues an upload of src into dst, calling ready with the bytes
// that have arrived (cuda.StripUpload.Upload on a device; the tests'
// replay otherwise).
type uploader func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error

// stripRun is what the strip queues need of a reference: its kernels,
// plan, model buffer with the eigenvalue counts and flatness the host
// found, and (kept) every band's reference planes.
type stripRun struct {
	k     *kernels
	p     *stripPlan
	model *cuda.Buffer
	nlam  [nScales]int
	flat  [nScales]bool
	kept  []refPlanes
}

// upload queues the upload of crop rows of band i of im into the slot's
// raw buffer and their unpack into dst (scale 0 of the crop).
func (sr *stripRun) upload(q launch.Launcher, up uploader, s *slot, i int, im *zenmetrics.Image, dst *cuda.Buffer) error {
	b := sr.p.bands[i]
	crop := strips.Crop(im, b.C0, b.C1)
	total := cuda.RawBytes(crop)
	return up(s.raw, crop.Pix[:total], unpacker(q, sr.k, sr.p.w, b.Rows(), total, layoutOf(crop), s.raw, dst))
}

// queueBandRef queues band i's reference half into rp: the upload and
// unpack of its crop of ref, the crop's pyramid, with stats its
// statistics, and with covBuf the covariance sums of the block rows it
// owns into the image's table.
func (sr *stripRun) queueBandRef(q launch.Launcher, up uploader, s *slot, i int, ref *zenmetrics.Image, rp *refPlanes, stats bool, covBuf *cuda.Buffer) error {
	b := &sr.p.bands[i]
	if err := sr.upload(q, up, s, i, ref, rp.y[0]); err != nil {
		return err
	}
	if err := queuePyramid(q, sr.k, b.gm, &rp.y, s.tmp); err != nil {
		return err
	}
	if stats {
		if err := queueRefStats(q, sr.k, b.gm, s, rp); err != nil {
			return err
		}
	}
	if covBuf != nil {
		return queueCov(q, sr.k, &b.win, rp, covBuf)
	}
	return nil
}

// queuePrepare queues the first phase of a preparation: every band's
// reference crop (its statistics too when kept) and the covariance sums
// of the rows it owns into covBuf; the host then reads the table back
// (model).
func (sr *stripRun) queuePrepare(q launch.Launcher, up uploader, s *stripSlot, ref *zenmetrics.Image, covBuf *cuda.Buffer) error {
	for i := range sr.p.bands {
		rp := &s.ref
		if sr.p.keep {
			rp = &sr.kept[i]
		}
		if err := sr.queueBandRef(q, up, &s.slot, i, ref, rp, sr.p.keep, covBuf); err != nil {
			return err
		}
	}
	return nil
}

// setModel records the host's model (eigenvalue counts, flatness) in sr
// and in the planes that read it.
func (sr *stripRun) setModel(rp *refPlanes) {
	sr.nlam, sr.flat = rp.nlam, rp.flat
	for i := range sr.kept {
		sr.kept[i].model, sr.kept[i].nlam, sr.kept[i].flat = sr.model, sr.nlam, sr.flat
	}
}

// queueKeptMahal is the second phase of a kept preparation: vᵀC⁻¹v/N of
// every band's owned rows, once the model is on the device.
func (sr *stripRun) queueKeptMahal(q launch.Launcher) error {
	for i := range sr.kept {
		if err := queueMahal(q, sr.k, &sr.p.bands[i].win, &sr.kept[i]); err != nil {
			return err
		}
	}
	return nil
}

// queueScore queues a whole strip score: per band (first its reference
// half when not kept: crop, pyramid, statistics, vᵀC⁻¹v/N of its owned
// rows) the distorted crop's upload and unpack, its pyramid and the row
// sums of its owned region rows into the image's rows of s.sums.
func (sr *stripRun) queueScore(q launch.Launcher, up uploader, s *stripSlot, ref, dist *zenmetrics.Image) error {
	s.ref.model, s.ref.nlam, s.ref.flat = sr.model, sr.nlam, sr.flat
	for i := range sr.p.bands {
		b := &sr.p.bands[i]
		rp := &s.ref
		if sr.p.keep {
			rp = &sr.kept[i]
		} else {
			if err := sr.queueBandRef(q, up, &s.slot, i, ref, rp, true, nil); err != nil {
				return err
			}
			if err := queueMahal(q, sr.k, &b.win, rp); err != nil {
				return err
			}
		}
		if err := sr.upload(q, up, &s.slot, i, dist, s.x[0]); err != nil {
			return err
		}
		if err := queueScore(q, sr.k, &b.win, &s.slot, rp); err != nil {
			return err
		}
	}
	return nil
}

// stripRef is a prepared IW-SSIM reference scored strip by strip (Host: a
// copy of the reference, recomputed per score when not kept).
type stripRef struct {
	cuda.StripBase[*stripSlot]
	stripRun
}

// Strips reports the strip count and whether the reference planes stay
// resident (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.p.bands), r.p.keep }

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	if s.wk, s.up, err = r.Dev.NewStripScratch(raw, r.p.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.p, raw, alloc) }); err != nil {
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
// prepares the reference: every band's crop on the device filling the
// image's covariance table, one read-back, the host's model (the whole
// image's, from the same sums in the same order), its upload and, when
// the planes stay resident, every band's vᵀC⁻¹v/N; else a host copy of
// the reference for the scores. Two round trips, as for a whole image.
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	w, h := ref.Width, ref.Height
	if w < minSide || h < minSide {
		return nil, tooSmall(w, h)
	}
	rawOf := func(rows int) int64 { return cuda.CropRaw(ref, rows) }
	p, err := cuda.PlanStrips(b,
		func(budget int64) (*stripPlan, error) { return planStrips(w, h, rawOf, budget, opt.StripHeight) },
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
		next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return alloc(n) }
		r.model = next()
		if p.keep {
			r.kept = make([]refPlanes, len(p.bands))
			for i := range r.kept {
				fillCrop(&r.kept[i], next)
			}
		} else {
			r.KeepHost(ref)
		}
	}, func(s *stripSlot) error { return r.build(ctx, s, ref) })
	if err != nil {
		return nil, err
	}
	return r, nil
}

// build runs a strip preparation in the slot s (the counterpart of the
// whole image's reference.build): the covariance table lives only while
// preparing, beside the slot.
func (r *stripRef) build(ctx context.Context, s *stripSlot, ref *zenmetrics.Image) error {
	covBuf, err := r.Dev.Alloc(r.p.covBytes())
	if err != nil {
		return err
	}
	q := launch.Stream{St: s.wk.Stream}
	defer func() {
		_ = s.wk.Stream.Sync() // the kernels are done with covBuf
		r.Dev.Free(covBuf)
	}()
	if err := r.queuePrepare(q, s.up.Upload, s, ref, covBuf); err != nil {
		return err
	}
	_, n := covOffsets(r.p.gm)
	out, err := s.wk.ReadBack(cuda.Span{Buf: covBuf, N: 8 * int64(n)})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var mp refPlanes
	m, err := model(r.p.gm, cuda.Float64s(out, n), &mp)
	if err != nil {
		return err
	}
	r.setModel(&mp)
	var buf []byte
	if err := s.wk.Upload(r.model, f64Bytes(&buf, m)); err != nil {
		return err
	}
	return r.queueKeptMahal(q)
}

// Score implements zenmetrics.Reference, with the whole image's score bit
// for bit (strip.go). Safe for concurrent use.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	err = r.Scored(ctx, dist, r.p.w, r.p.h, r.p.rows, func(s *stripSlot) error {
		st := s.wk.Stream
		if err := r.queueScore(launch.Stream{St: st}, s.up.Upload, s, r.Host, dist); err != nil {
			_ = st.Sync()
			return err
		}
		out, err := s.wk.ReadBack(cuda.Span{Buf: s.sums, N: sumsBytes(r.p.gm)})
		if err != nil {
			return err
		}
		v, err := pool(r.p.gm, cuda.Float64s(out, 2*r.p.gm.rows))
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
func (r *stripRef) Release() { r.StripBase.Release(func() { r.kept, r.model = nil, nil }) }
