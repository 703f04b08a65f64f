package butteraugli

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Butteraugli in strips (zenmetrics.ModeStrip), with gpu/webgpu/
// butteraugli's geometry. Every filter is an FIR, so a value depends on a
// bounded neighbourhood: per level the chain is the opsin blur (reach 2)
// → LF blur (16) → MF blur (7) → UHF blur (3) → masking blur (6) → fuzzy
// erosion (3) → Malta filters (4), at most R = 41 rows; the half level
// doubles that and adds a row for its 2×2 subsampling and one for the
// combine's upsampling: 2R + 2 = 84 rows. Crops start on even rows, so
// the half level's rows are the full image's. A blur cuts its kernel off
// at a crop's edge as at the image's, so every value 84 rows or more from
// a crop edge that is not an image edge comes from the same arithmetic on
// the same inputs as in the whole image: the interior of each crop's map
// is the whole image's bit for bit, the maximum (Value) is the whole
// image's exactly, and the power sums of the norms, reduced per strip
// over its interior rows and added in double, differ from the whole
// image's only by summation order (the whole image's reduction is a tree
// too).
//
// Each crop runs the whole-image kernels as an image of its own; the
// reference's planes (13 per background and level) stay resident per
// strip when they fit, or are recomputed per score from a host copy of
// the reference, so that the device holds one crop's working set.

// Reaches (rows) of the two non-blur neighbourhoods of the chain.
const (
	erodeReach = 3 // fuzzy erosion looks 3 rows away
	maltaReach = 4 // the Malta lines are 9 taps long
)

// stripSpec is the strip geometry (see above), from the blurs' radii.
var stripSpec = func() strips.Spec {
	reach := erodeReach + maltaReach
	for _, b := range blurs {
		reach += b.k.off
	}
	halo := (2*reach + 2 + 1) &^ 1
	return strips.Spec{Halo: halo, Align: 2, MinCrop: 2 * minSize}
}()

// forceKeep, when not nil, makes a forced strip height keep or recompute
// the reference planes (tests).
var forceKeep *bool

// lutBytesHeld is the decoding tables' device memory.
func lutBytesHeld() int64 { return cuda.AllocSize(4*256) + cuda.AllocSize(4*65536) }

// setBytes is the reference planes of one w×rows crop with variants
// backgrounds.
func setBytes(w, rows, variants int) int64 { return refBytes(w, rows, variants) - lutBytesHeld() }

// stripPlan is the band layout of a strip reference.
type stripPlan struct {
	w, h     int
	variants int
	bands    []strips.Strip
	rows     int  // the tallest crop: the slot's planes are sized to it
	keep     bool // every band's reference planes stay resident
}

func newStripPlan(w, h, variants int, ss []strips.Strip, keep bool) *stripPlan {
	p := &stripPlan{w: w, h: h, variants: variants, bands: ss, keep: keep}
	for _, s := range ss {
		p.rows = max(p.rows, s.Rows())
	}
	return p
}

// slotBytes is one strip scorer: a whole-image slot for the tallest crop,
// the bands' sums, and (recomputed) one crop's reference planes.
func (p *stripPlan) slotBytes(raw int64) int64 {
	b := slotBytes(p.w, p.rows, raw) + cuda.AllocSize(64*int64(len(p.bands)))
	if !p.keep {
		b += setBytes(p.w, p.rows, p.variants)
	}
	return b
}

// memory is the device bytes of the reference and its first scorer.
func (p *stripPlan) memory(raw int64) int64 {
	b := lutBytesHeld() + p.slotBytes(raw)
	if p.keep {
		for _, s := range p.bands {
			b += setBytes(p.w, s.Rows(), p.variants)
		}
	}
	return b
}

// planStrips picks the plan of a w×h image (variants backgrounds, crops
// uploading rawOf(rows) bytes) within budget bytes (< 0: anything goes),
// by the shared policy (strips.Choose). The kernels index planes in int.
func planStrips(w, h, variants int, rawOf func(rows int) int64, budget int64, force int) (*stripPlan, error) {
	fitsIn := func(ss []strips.Strip, keep bool) bool {
		p := newStripPlan(w, h, variants, ss, keep)
		return int64(w)*int64(p.rows) <= math.MaxInt32 && (budget < 0 || p.memory(rawOf(p.rows)) <= budget)
	}
	ss, keep, err := cuda.ChooseStrips("Butteraugli", w, h, stripSpec, force, budget, forceKeep, fitsIn)
	if err != nil {
		return nil, err
	}
	return newStripPlan(w, h, variants, ss, keep), nil
}

// estimateStrips is the memory of the plan of a w×h image in the worst
// case (alpha, RGBA16 uploads) within budget, and whether there is one.
func estimateStrips(w, h int, budget int64) (int64, bool) {
	rawOf := func(rows int) int64 { return 8 * int64(w) * int64(rows) }
	p, err := planStrips(w, h, 2, rawOf, budget, 0)
	if err != nil {
		return 0, false
	}
	return p.memory(rawOf(p.rows)), true
}

// stripSlot is one strip scorer: the whole-image slot for the tallest
// crop, the bands' sums (8 doubles each) and, recomputed, one crop's
// reference planes.
type stripSlot struct {
	slot
	tots *cuda.Buffer
	sets [][]planeSet
	more []*cuda.Buffer // tots and the sets' buffers, to free
}

// fillStripSlot allocates a strip slot's buffers with alloc.
func fillStripSlot(s *stripSlot, p *stripPlan, raw int64, alloc func(int64) *cuda.Buffer) {
	sz := levels(p.w, p.rows)
	fillSlot(&s.slot, sz, raw, alloc)
	keep := func(n int64) *cuda.Buffer {
		b := alloc(n)
		s.more = append(s.more, b)
		return b
	}
	s.tots = keep(64 * int64(len(p.bands)))
	if !p.keep {
		s.sets = newSets(sz, p.variants, keep)
	}
}

// newSets is a reference's planes: per background and level a set.
func newSets(sz []size, variants int, alloc func(int64) *cuda.Buffer) [][]planeSet {
	var out [][]planeSet
	for v := 0; v < variants; v++ {
		var sets []planeSet
		for _, l := range sz {
			n := 4 * int64(l.w) * int64(l.h)
			sets = append(sets, newSet(func() *cuda.Buffer { return alloc(n) }, true))
		}
		out = append(out, sets)
	}
	return out
}

// stripRun is what the strip queues need of a reference.
type stripRun struct {
	k         *kernels
	p         *stripPlan
	intensity float32
	pnorm     float64
	lut       [3]*cuda.Buffer
	kept      [][][]planeSet // [band][background][level], when kept
}

// view is rows [lo, hi) of a w-wide float plane, as a buffer of its own.
func view(b *cuda.Buffer, w, lo, hi int) *cuda.Buffer {
	return &cuda.Buffer{Ptr: b.Ptr + cuda.DevPtr(4*int64(lo)*int64(w)), Size: 4 * int64(hi-lo) * int64(w)}
}

// queueBandRef queues band i's reference half: its crop of ref uploaded
// (up) and decomposed into sets.
func (sr *stripRun) queueBandRef(q launch.Launcher, up func(dst *cuda.Buffer, src []byte) error, s *slot, i int, ref *zenmetrics.Image, sets [][]planeSet) error {
	b := sr.p.bands[i]
	crop := strips.Crop(ref, b.C0, b.C1)
	if err := up(s.raw, crop.Pix[:cuda.RawBytes(crop)]); err != nil {
		return err
	}
	lay := layoutOf(crop)
	return queuePrepare(q, sr.k, levels(sr.p.w, b.Rows()), sr.intensity, s, sr.lut[lay.bps], lay, sets)
}

// queueBand queues band i of a score: (recomputed) its reference half,
// the distorted crop's upload and distance map (in s.ws[0].dm, the crop's
// rows) and the reduction of the band's interior rows into its 8 doubles
// of s.tots.
func (sr *stripRun) queueBand(q launch.Launcher, up func(dst *cuda.Buffer, src []byte) error, s *stripSlot, i int, ref, dist *zenmetrics.Image) error {
	b := sr.p.bands[i]
	sets := s.sets
	if sr.p.keep {
		sets = sr.kept[i]
	} else if err := sr.queueBandRef(q, up, &s.slot, i, ref, sets); err != nil {
		return err
	}
	crop := strips.Crop(dist, b.C0, b.C1)
	if err := up(s.raw, crop.Pix[:cuda.RawBytes(crop)]); err != nil {
		return err
	}
	lay := layoutOf(crop)
	sz := levels(sr.p.w, b.Rows())
	if err := queueMaps(q, sr.k, sz, sr.intensity, &s.slot, sr.lut[lay.bps], lay, sets); err != nil {
		return err
	}
	lo, hi := b.Window()
	tot := &cuda.Buffer{Ptr: s.tots.Ptr + cuda.DevPtr(64*i), Size: 64}
	return queueReduce(q, sr.k, view(s.ws[0].dm, sr.p.w, lo, hi), s.part, tot, (hi-lo)*sr.p.w, sr.pnorm, isCube(sr.pnorm))
}

// combine adds the bands' sums (8 doubles each in tots): the maximum of
// the maxima, the sums of the power sums, in band order.
func combine(tots []byte, bands int) [8]float64 {
	var sums [8]float64
	for i := 0; i < bands; i++ {
		for q := 0; q < 7; q++ {
			v := math.Float64frombits(binary.LittleEndian.Uint64(tots[64*i+8*q:]))
			if q == 0 {
				sums[0] = math.Max(sums[0], v)
			} else {
				sums[q] += v
			}
		}
	}
	return sums
}

// stripRef is a Butteraugli reference prepared in strips (Host,
// recomputed: a copy of the reference).
type stripRef struct {
	cuda.StripBase[*stripSlot]
	stripRun
	distMap bool
}

// Strips reports the band count and whether the reference planes stay
// resident (cuda.StripsOf).
func (r *stripRef) Strips() (int, bool) { return len(r.p.bands), r.p.keep }

func (r *stripRef) outBytes() int64 {
	n := 64 * int64(len(r.p.bands))
	if r.distMap {
		n += 4 * int64(r.p.w) * int64(r.p.h)
	}
	return n
}

func (r *stripRef) newSlot(raw int64) (*stripSlot, error) {
	s := &stripSlot{}
	var err error
	s.wk, err = r.Dev.NewScratch(raw, r.outBytes(), func(alloc func(int64) *cuda.Buffer) { fillStripSlot(s, r.p, raw, alloc) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (r *stripRef) freeSlot(s *stripSlot) {
	r.Dev.FreeScratch(s.wk, append(s.buffers(), s.more...)...)
	s.wk, s.more = nil, nil
}

// prepareStrips plans the strips within the free memory (or opt's strip
// height), checks the plan's memory before allocating anything and
// decomposes every band's reference crop when the planes stay resident
// (else keeps a host copy for the scores).
func prepareStrips(ctx context.Context, b *cuda.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (_ *stripRef, err error) {
	it, err := checkOptions(opt)
	if err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	rawOf := func(rows int) int64 { return cuda.RawBytes(strips.Crop(ref, 0, rows)) }
	p, err := cuda.PlanStrips(b,
		func(budget int64) (*stripPlan, error) {
			return planStrips(ref.Width, ref.Height, variants, rawOf, budget, opt.StripHeight)
		},
		func(p *stripPlan) int64 { return p.memory(rawOf(p.rows)) })
	if err != nil {
		return nil, err
	}
	raw := rawOf(p.rows)
	r := &stripRef{distMap: opt.DistMap}
	r.p, r.intensity, r.pnorm = p, float32(it), opt.PNorm
	r.Init(b, maxSlots, cuda.SlotFuncs[*stripSlot]{
		New:   r.newSlot,
		Free:  r.freeSlot,
		Raw:   func(s *stripSlot) **cuda.Buffer { return &s.raw },
		Check: func(raw int64) error { return r.B.CheckMemory(r.p.slotBytes(raw)) },
	})
	if r.k, err = load(r.Dev); err != nil {
		return nil, err
	}
	err = r.Build(ctx, raw, func(alloc func(int64) *cuda.Buffer) {
		for _, bps := range []int{1, 2} {
			r.lut[bps] = alloc(int64(len(lutTable(bps))))
		}
		if p.keep {
			for _, s := range p.bands {
				r.kept = append(r.kept, newSets(levels(p.w, s.Rows()), variants, alloc))
			}
		} else {
			r.KeepHost(ref)
		}
	}, func(s *stripSlot) error {
		if err := uploadLuts(s.wk, r.lut); err != nil {
			return err
		}
		q := launch.Stream{St: s.wk.Stream}
		for i := range r.kept {
			if err := r.queueBandRef(q, s.wk.Upload, &s.slot, i, ref, r.kept[i]); err != nil {
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

// Score implements zenmetrics.Reference as the whole-image Score does
// (Value, Extras, DistMap), from the bands' interiors. Safe for
// concurrent use.
func (r *stripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	w, h, nb := r.p.w, r.p.h, len(r.p.bands)
	err = r.Scored(ctx, dist, w, h, r.p.rows, func(s *stripSlot) error {
		st := s.wk.Stream
		out := s.wk.Out
		q := launch.Stream{St: st}
		for i, b := range r.p.bands {
			if err := r.queueBand(q, s.wk.Upload, s, i, r.Host, dist); err != nil {
				_ = st.Sync()
				return fmt.Errorf("butteraugli strip %d/%d (rows %d-%d): %w", i+1, nb, b.Y0, b.Y1, err)
			}
			if r.distMap {
				lo, hi := b.Window()
				if err := st.Download(out, 64*int64(nb)+4*int64(b.Y0)*int64(w), s.ws[0].dm, 4*int64(lo)*int64(w), 4*int64(hi-lo)*int64(w)); err != nil {
					_ = st.Sync()
					return err
				}
			}
		}
		if err := st.Download(out, 0, s.tots, 0, 64*int64(nb)); err != nil {
			_ = st.Sync()
			return err
		}
		if err := st.Sync(); err != nil {
			return err
		}
		sums := combine(out.Bytes, nb)
		n := float64(w) * float64(h)
		sc = zenmetrics.Score{Metric: zenmetrics.Butteraugli, Value: sums[0], Extras: map[string]float64{"pnorm3": norm(sums[1:4], n, 3)}}
		if r.pnorm > 0 {
			sc.Extras["pnorm"] = norm(sums[4:7], n, r.pnorm)
		}
		if r.distMap {
			sc.DistMap = &zenmetrics.FloatPlane{Width: w, Height: h, Pix: cuda.Float32s(out.Bytes[64*nb:], w*h)}
		}
		return nil
	})
	return sc, err
}

// Release frees the reference's device memory; it waits for running
// scores. Idempotent.
func (r *stripRef) Release() { r.StripBase.Release(func() { r.kept = nil }) }
