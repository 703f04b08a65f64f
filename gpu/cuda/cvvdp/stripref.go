package cvvdp

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// stripRef is a prepared CVVDP reference scored in strips (strip.go).
type stripRef struct {
	cuda.RefBase[*stripSlot]
	stripRun
	w, h int
}

// Strips reports the finest band's window count and whether the
// reference's planes stay on the device (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.sp.windows(0)), r.sp.keep }

// rawOf is the slot's raw buffer for crops of im.
func (r *stripRef) rawOf(im *zenmetrics.Image) int64 { return cuda.CropRaw(im, r.sp.winRows) }

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	if s.wk, s.up, err = r.Dev.NewStripScratch(raw, r.sp.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.sp, raw, alloc) }); err != nil {
		return nil, err
	}
	return s, nil
}

func (r *stripRef) freeSlot(s *stripSlot) {
	r.Dev.FreeStripScratch(s.wk, s.up, s.buffers()...)
	s.wk, s.up = nil, nil
}

// prepareStrips plans the strips within the free memory (or opt's strip
// height), checks the plan's memory before allocating anything, and
// computes the reference's planes: kept on the device, or read back
// window by window to the host.
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	p, err := cpucv.NewPlan(ref.Width, ref.Height, opt.Display)
	if err != nil {
		return nil, err
	}
	rawOf := func(rows int) int64 { return cuda.CropRaw(ref, rows) }
	sp, err := cuda.PlanStrips(b,
		func(budget int64) (*stripPlan, error) {
			return planStrips(p, rawOf, opt.DistMap, budget, max(0, opt.StripHeight))
		},
		func(sp *stripPlan) int64 { return sp.memory(rawOf(sp.winRows)) })
	if err != nil {
		return nil, err
	}
	raw := rawOf(sp.winRows)
	r := &stripRef{w: ref.Width, h: ref.Height}
	r.sp = sp
	r.Init(b, maxSlots, cuda.SlotFuncs[*stripSlot]{
		New:   r.newSlot,
		Free:  r.freeSlot,
		Raw:   func(s *stripSlot) **cuda.Buffer { return &s.raw },
		Sizes: func(raw int64) []int64 { return r.sp.slotSizes(raw) },
	})
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	if !sp.keep {
		r.host = make([][][]byte, p.Levels-1)
		for bd := range r.host {
			r.host[bd] = make([][]byte, len(sp.windows(bd)))
		}
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		sizes := sp.refSizes()
		next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return alloc(n) }
		r.ref.lut, r.ref.kb = next(), next()
		if sp.keep {
			for bd := 0; bd+1 < p.Levels; bd++ {
				r.ref.rp = append(r.ref.rp, next())
				r.ref.s = append(r.ref.s, next())
			}
		}
		r.ref.rb = next()
	}, func(s *stripSlot) error {
		if err := s.wk.Upload(r.ref.lut, f32Bytes(lutFloats(p))); err != nil {
			return err
		}
		if err := s.wk.Upload(r.ref.kb, f32Bytes(kbFloats(p))); err != nil {
			return err
		}
		// A window's planes go to the host as soon as they are computed:
		// the next window overwrites them.
		save := func(bd, i int, win window) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := windowBytes(p, bd, win)
			out, err := s.wk.ReadBack(cuda.Span{Buf: s.rpW, N: n}, cuda.Span{Buf: s.sW, N: n})
			if err != nil {
				return err
			}
			r.host[bd][i] = append([]byte(nil), out...)
			return nil
		}
		return r.queuePrepare(launch.Stream{St: s.wk.Stream}, s.up.Upload, s, ref, save)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Score implements zenmetrics.Reference with the whole-image Score's
// results (the same sums and map, bit for bit: strip.go). Safe for
// concurrent use: each caller gets its own slot.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	p := r.sp.p
	err = r.Scored(ctx, dist, r.w, r.h, r.rawOf, func(s *stripSlot) error {
		st := s.wk.Stream
		if err := r.queueScore(launch.Stream{St: st}, s.up.Upload, s.wk.Upload, s, dist); err != nil {
			_ = st.Sync()
			return err
		}
		rb := resBytes(p)
		spans := []cuda.Span{{Buf: s.res, N: rb}}
		n := px(p, 0)
		if r.sp.distMap {
			spans = append(spans, cuda.Span{Buf: s.g[0], N: 4 * n})
		}
		out, err := s.wk.ReadBack(spans...)
		if err != nil {
			return err
		}
		sc = zenmetrics.Score{Metric: zenmetrics.CVVDP, Value: p.JOD(readSums(p, out))}
		if r.sp.distMap {
			sc.DistMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: cuda.Float32s(out[rb:], int(n))}
		}
		return nil
	})
	return sc, err
}

// Release frees the reference's device memory and host planes; it waits
// for running scores. Idempotent.
func (r *stripRef) Release() {
	r.RefBase.Release(func() { r.ref, r.host = refBufs{}, nil })
}
