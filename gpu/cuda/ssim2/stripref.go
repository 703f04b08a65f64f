package ssim2

import (
	"context"
	"math"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// stripView is one background a score is computed on: its grey level
// and the reference pyramid it compares with (as reference.views).
type stripView struct {
	bg  float32
	pyr int
}

// stripViews are the views of a reference, the number of pyramids and
// how each pyramid is decoded (blend, bg), as prepare does: real
// transparency on grey 0.1 and 0.9 (two pyramids); an opaque alpha
// channel, one pyramid scored on both; no alpha, one view on 0.5.
func stripViews(ref *zenmetrics.Image) (views []stripView, blend bool, bgs []float32) {
	alpha := ref.Format.HasAlpha()
	switch {
	case alpha && !opaque(ref):
		return []stripView{{0.1, 0}, {0.9, 1}}, true, []float32{0.1, 0.9}
	case alpha:
		return []stripView{{0.1, 0}, {0.9, 0}}, false, []float32{0}
	}
	return []stripView{{0.5, 0}}, false, []float32{0}
}

// stripRun is what the strip queues need of a reference.
type stripRun struct {
	k     *kernels
	p     *stripPlan
	views []stripView
	blend bool      // the reference's pyramids are composited
	bgs   []float32 // per pyramid
	kept  [][]pyramid
}

// uploadFn queues an upload of src into dst (the worker's, on its stream;
// the tests' replay otherwise).
type uploadFn func(dst *cuda.Buffer, src []byte) error

// queuePyramid queues reference pyramid pi of every band into out(i):
// per band the crop's upload and its pyramid, the recursion carried.
func (sr *stripRun) queuePyramid(q launch.Launcher, up uploadFn, s *stripSlot, ref *zenmetrics.Image, pi int, out func(i int) pyramid) error {
	for i := range sr.p.bands {
		b := &sr.p.bands[i]
		crop := strips.Crop(ref, b.C0, b.C1)
		if err := up(s.raw, crop.Pix[:cuda.RawBytes(crop)]); err != nil {
			return err
		}
		if err := queueBandRef(q, sr.k, b, i, side(crop, sr.blend, sr.bgs[pi]), s, out(i)); err != nil {
			return err
		}
	}
	return nil
}

// runs are the views a score of dist computes, deduplicated as
// reference.Score does: views sharing a pyramid give the same score
// unless dist itself has transparency to composite on their backgrounds.
func (sr *stripRun) runs(blendDist bool) []stripView {
	type key struct {
		pyr int
		bg  float32
	}
	seen := map[key]bool{}
	var out []stripView
	for _, v := range sr.views {
		k := key{pyr: v.pyr}
		if blendDist {
			k.bg = v.bg
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// queueScore queues a whole strip score of dist: per run (view) and band
// (first the band's reference pyramid when not kept) the distorted crop's
// upload and terms, then the run's reduction into s.tot's run j.
func (sr *stripRun) queueScore(q launch.Launcher, up uploadFn, s *stripSlot, ref, dist *zenmetrics.Image) (runs int, err error) {
	blendDist := dist.Format.HasAlpha() && !opaque(dist)
	for j, v := range sr.runs(blendDist) {
		for i := range sr.p.bands {
			b := &sr.p.bands[i]
			var py pyramid
			if sr.p.keep {
				py = sr.kept[i][v.pyr]
			} else {
				py = s.pyrs[v.pyr]
				rc := strips.Crop(ref, b.C0, b.C1)
				if err := up(s.raw, rc.Pix[:cuda.RawBytes(rc)]); err != nil {
					return 0, err
				}
				if err := queueBandRef(q, sr.k, b, i, side(rc, sr.blend, sr.bgs[v.pyr]), s, py); err != nil {
					return 0, err
				}
			}
			crop := strips.Crop(dist, b.C0, b.C1)
			if err := up(s.raw, crop.Pix[:cuda.RawBytes(crop)]); err != nil {
				return 0, err
			}
			if err := queueBandDist(q, sr.k, b, i, side(crop, blendDist, v.bg), s, py); err != nil {
				return 0, err
			}
		}
		if err := queueReduce(q, sr.k, sr.p, s, j); err != nil {
			return 0, err
		}
		runs = j + 1
	}
	return runs, nil
}

// score is the SSIMULACRA2 of runs runs' results (the lowest, as the
// whole image's Score).
func (sr *stripRun) score(out []byte, runs int) float64 {
	per := numScales * 3 * numTerms * 8
	fin := &reference{plan: sr.p.full}
	best := math.Inf(1)
	for j := 0; j < runs; j++ {
		best = min(best, fin.final(out[j*per:]))
	}
	return best
}

// stripRef is a SSIMULACRA2 reference prepared in strips.
type stripRef struct {
	stripRun
	b    *cuda.Backend
	dev  *cuda.Device
	host *zenmetrics.Image // recomputed: a copy of the reference
	bufs []*cuda.Buffer

	mu       sync.RWMutex
	released bool
	slots    *cuda.SlotPool[*stripSlot]
}

// Strips reports the band count and whether the reference pyramids stay
// resident (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.p.bands), r.p.keep }

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	s.wk, err = r.dev.NewScratch(raw, 8*2*numScales*3*numTerms, func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.p, raw, alloc) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (r *stripRef) freeSlot(s *stripSlot) {
	r.dev.FreeScratch(s.wk, append(s.all, s.raw)...)
	s.wk, s.all, s.raw = nil, nil, nil
}

// prepareStrips plans the strips within the free memory (or opt's strip
// height), checks the plan's memory before allocating anything and builds
// every band's reference pyramids when they stay resident (else keeps a
// host copy of the reference for the scores).
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
	if err := checkImage(ref); err != nil {
		return nil, err
	}
	views, blend, bgs := stripViews(ref)
	rawOf := func(rows int) int64 { return cuda.RawBytes(strips.Crop(ref, 0, rows)) }
	p, err := cuda.PlanStrips(b,
		func(budget int64) (*stripPlan, error) {
			return planStrips(ref.Width, ref.Height, len(bgs), rawOf, budget, opt.StripHeight)
		},
		func(p *stripPlan) int64 { return p.memory(rawOf(p.rows)) })
	if err != nil {
		return nil, err
	}
	raw := rawOf(p.rows)
	d := b.Device()
	r := &stripRef{b: b, dev: d}
	r.p, r.views, r.blend, r.bgs = p, views, blend, bgs
	r.slots = cuda.NewSlotPool(d, maxSlots, cuda.SlotFuncs[*stripSlot]{
		New:   r.newSlot,
		Free:  r.freeSlot,
		Raw:   func(s *stripSlot) **cuda.Buffer { return &s.raw },
		Check: func(raw int64) error { return r.b.CheckMemory(cuda.AllocSizes(r.p.slotSizes(raw))) },
	})
	if r.k, err = module.Load(d); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.Release()
		}
	}()
	if p.keep {
		alloc := func(n int64) *cuda.Buffer { return d.AllocInto(&r.bufs, &err, n) }
		for _, bd := range p.bands {
			var pys []pyramid
			for range bgs {
				pys = append(pys, newPyramid(bd.sc, alloc))
			}
			r.kept = append(r.kept, pys)
		}
		if err != nil {
			return nil, err
		}
	} else {
		r.host = zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
		for y := range ref.Height {
			copy(r.host.Row(y), ref.Row(y))
		}
		return r, nil
	}
	s, err := r.slots.Get(ctx, raw)
	if err != nil {
		return nil, err
	}
	defer r.slots.Put(s)
	q := launch.Stream{St: s.wk.Stream}
	for pi := range bgs {
		if err := r.queuePyramid(q, s.wk.Upload, s, ref, pi, func(i int) pyramid { return r.kept[i][pi] }); err != nil {
			return nil, err
		}
	}
	if err := s.wk.Stream.Sync(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference with the whole image's score.
// Safe for concurrent use: each caller gets its own slot.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return sc, zenmetrics.ErrReleased
	}
	if err := cuda.CheckScored(ctx, dist, r.p.w, r.p.h); err != nil {
		return sc, err
	}
	raw := cuda.RawBytes(strips.Crop(dist, 0, r.p.rows))
	if r.host != nil {
		raw = max(raw, cuda.RawBytes(strips.Crop(r.host, 0, r.p.rows)))
	}
	s, err := r.slots.Get(ctx, raw)
	if err != nil {
		return sc, err
	}
	defer r.slots.Put(s)
	st := s.wk.Stream
	runs, err := r.queueScore(launch.Stream{St: st}, s.wk.Upload, s, r.host, dist)
	if err != nil {
		_ = st.Sync()
		return sc, err
	}
	per := int64(numScales * 3 * numTerms * 8)
	if err := st.Download(s.wk.Out, 0, s.tot, 0, int64(runs)*per); err != nil {
		_ = st.Sync()
		return sc, err
	}
	if err := st.Sync(); err != nil {
		return sc, err
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: r.score(s.wk.Out.Bytes, runs)}, nil
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *stripRef) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	r.slots.Close()
	r.dev.Free(r.bufs...)
	r.bufs, r.kept, r.host = nil, nil, nil
}
