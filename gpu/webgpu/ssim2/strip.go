package ssim2

import (
	"context"
	"fmt"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// SSIMULACRA2 in strips.
//
// Geometry: ssim2StripSpec (halo.go): a halo of 160 rows (5 rows at
// the coarsest of the 6 scales), band boundaries and crop starts on
// multiples of 32, crops at least 256 rows. Each strip's crop goes through
// the unchanged pipeline; vmaps sums only the rows of the strip's interior
// at each scale (strip.WindowAt, the Params win_lo/win_hi), so the strips'
// per-(pass, scale, channel, term) sums add up, in float64 on the host, to
// the full image's, and the full image's formula (with its per-scale pixel
// counts) gives the score. Values in the interior equal the full image's
// up to the blur's undamped ring (≤ 1.45e-7 of a row's value per missing
// row), so the score is the full one to ~1e-6, not bit for bit.
//
// Memory: a strip's working set is the reference's XYB pyramid (3 planes
// per scale and pass, "resident") plus the scoring scratch (the linear RGB
// pyramid, 8 full-size planes, the raw upload and its staging copy, the
// column sums). One scratch, made for the tallest crop, serves every strip.
//
// Reference state, as for Butteraugli:
//
//   - kept: every strip's resident pyramid stays on the device (16 B/px per
//     alpha background over all crops, halos counted twice), so a Score
//     does exactly what a full-image cached reference does, strip by strip;
//   - recomputed: a host copy of the reference's bytes is kept, and each
//     Score uploads every strip's reference crop and runs unpack and
//     downsample on it again before scoring (the blurs of the reference
//     are computed at every Score anyway, next to the distorted image's),
//     so the device holds one strip's working set.
//
// Measured on lavapipe (2 cores, TestSSIM2StripKeptVsRecomputed, best of
// 3 Scores of a cached reference, 4 strips): 1024² kept 481 ms / 75.1 MiB
// held vs recomputed 612 ms / 45.1 MiB; 2048² kept 1.49 s / 209 MiB vs
// recomputed 1.82 s / 125 MiB (full image, cached: 277 ms and 1.16 s).
// Recomputing costs ~1.25× (one more upload, unpack and downsample per
// strip) and saves the other strips' pyramids, so planSSIM2Strips keeps
// the state whenever it fits at bands whose halo rows cost less than that
// factor, and recomputes otherwise (any size then runs in one strip's
// memory).

// ssim2StripPlan is the band layout and reference strategy for a w×h image.
type ssim2StripPlan struct {
	strips   []webgpu.Strip
	maxCrop  int   // rows of the tallest crop (the scratch's size)
	cropRows int   // rows of all crops: what a Score computes
	keep     bool  // per-strip reference state kept (else recomputed)
	bytes    int64 // predicted device bytes (what Estimate reports)

	keptBytes, recBytes int64 // the prediction for either strategy
}

// ssim2RecomputeCost is the time of a Score with a recomputed strip
// reference relative to a kept one at the same bands: measured on lavapipe
// 1.27 (1024², 4 strips: 611 vs 480 ms) and 1.23 (2048²: 1.82 vs 1.47 s).
const ssim2RecomputeCost = 1.25

// ssim2UniformBytes is the per-reference uniform blocks: the downsample
// blocks and, per pass, two unpack blocks and at most 3 job tables
// (hblur4, hblur, vmaps) per channel group.
func ssim2UniformBytes(scales, passes int) int64 {
	return int64(scales-1+2*passes)*ssim2ParamBytes + int64(passes)*9*ssim2JobsBytes
}

// ssim2ResidentBytes is the device bytes of one prepared crop of w×rows:
// the reference XYB pyramid per pass and the uniform blocks.
func ssim2ResidentBytes(w, rows, passes int) int64 {
	plan := ssim2Plan(w, rows)
	return 4*3*int64(passes)*ssim2ChannelFloats(plan) + ssim2UniformBytes(len(plan), passes)
}

// ssim2ScratchBytes is the device bytes of the scoring scratch for crops
// of w×rows: linear pyramid, the XYB and five blur pyramids, the raw
// upload and its staging copy (rawBpp bytes per pixel), the column sums
// and the carried recursion state, the term table and sums, the blur
// constants.
func ssim2ScratchBytes(w, rows, passes int, rawBpp int64) int64 {
	plan := ssim2Plan(w, rows)
	var pyr, slots int64
	for _, s := range plan {
		pyr += int64(s.W) * int64(s.H)
		slots += int64(s.W) * ssim2VSlots * 3 * ssim2Terms
	}
	n := int64(w) * int64(rows)
	terms := int64(passes * len(plan) * 3 * ssim2Terms)
	return 4*(3*pyr+18*ssim2ChannelFloats(plan)) + 2*rawBpp*n + 8*slots*int64(passes) + 24*terms + 256
}

// planSSIM2Strips chooses the band height and the strategy from the budget
// (bytes this reference may use; < 0: unknown, only the binding limit
// counts), the binding limit and the bytes-per-pixel model. forced > 0
// sets the band height (then the budget only picks the strategy).
//
// Without forcing: the tallest bands whose one-strip working set
// (recomputed reference) fits; then the tallest bands whose kept state
// (every strip's reference pyramid plus one scratch) fits, taken instead
// when their rows, halos included, cost less than the recomputed plan's
// times ssim2RecomputeCost.
func planSSIM2Strips(w, h, passes int, rawBpp int64, budget int64, maxBinding uint64, forced int) (ssim2StripPlan, error) {
	spec := ssim2StripSpec()
	// Binding: the widest bindings are one channel's float pyramid
	// (4 B/px × 4/3 plus rounding: at most 6 B/px for crops of 16 rows and
	// more) and the raw upload (rawBpp B/px), both per crop row.
	bindRows := int64(maxBinding) / (int64(w) * max(6, rawBpp))
	layout := func(band int) (ssim2StripPlan, error) {
		strips, err := webgpu.PlanStrips(h, band, spec)
		if err != nil {
			return ssim2StripPlan{}, err
		}
		p := ssim2StripPlan{strips: strips}
		for _, s := range strips {
			p.maxCrop = max(p.maxCrop, s.Rows())
			p.cropRows += s.Rows()
		}
		// Every strip's planes are sized for the tallest crop.
		resident := int64(len(strips)) * ssim2ResidentBytes(w, p.maxCrop, passes)
		if int64(p.maxCrop) > bindRows || ssim2BindingBytes(w, p.maxCrop) > maxBinding {
			return ssim2StripPlan{}, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: int64(p.maxCrop) * int64(w) * max(6, rawBpp), Free: -1,
				Detail: "a strip's plane exceeds maxStorageBufferBindingSize"}
		}
		scratch := ssim2ScratchBytes(w, p.maxCrop, passes, rawBpp)
		p.keptBytes = resident + scratch
		p.recBytes = ssim2ResidentBytes(w, p.maxCrop, passes) + scratch
		return p, nil
	}
	keep := func(p ssim2StripPlan) ssim2StripPlan {
		p.keep, p.bytes = true, p.keptBytes
		return p
	}
	if forced > 0 {
		p, err := layout(forced)
		if err != nil {
			return p, err
		}
		if budget <= 0 || p.keptBytes <= budget {
			return keep(p), nil
		}
		p.bytes = p.recBytes
		return p, nil
	}
	// Recomputed: rows of one strip's working set under the budget, from
	// the per-pixel rate (the pyramid at most 4/3 of scale 0) after the
	// row-independent part (column sums and carried state); then shrunk,
	// one alignment step at a time, until the exact prediction fits.
	rowBytes := int64(w) * (16*int64(passes+1) + 32 + 2*rawBpp)
	fixed := 8*int64(passes)*ssim2VSlots*3*ssim2Terms*2*int64(w) + 64<<10
	limit := bindRows
	if budget >= 0 { // < 0: free memory unknown, only the binding limits
		limit = min(limit, webgpu.RowsWithin(budget-fixed, rowBytes))
	}
	band, ok := webgpu.StripBand(h, spec, limit)
	var rec ssim2StripPlan
	for ok {
		var err error
		if rec, err = layout(band); err != nil {
			return rec, err
		}
		if budget < 0 || rec.recBytes <= budget || band <= spec.Align {
			break
		}
		band = (min(band, h) - 1) / spec.Align * spec.Align
	}
	if !ok || (budget >= 0 && rec.recBytes > budget) {
		least := min(h, max(spec.MinCrop, spec.Align+2*spec.Halo))
		need := ssim2ResidentBytes(w, least, passes) + ssim2ScratchBytes(w, least, passes, rawBpp)
		return ssim2StripPlan{}, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: need, Free: budget,
			Detail: fmt.Sprintf("not even a %d-row SSIMULACRA2 strip fits (binding limit %d rows, budget %d bytes)", spec.Align, bindRows, budget)}
	}
	if budget < 0 {
		return keep(rec), nil
	}
	rec.bytes = rec.recBytes
	// Kept: the tallest bands (the fewest halo rows) whose kept state fits,
	// while cheaper than recomputing.
	for b := band; b >= spec.Align; b -= spec.Align {
		p, err := layout(b)
		if err != nil {
			return ssim2StripPlan{}, err
		}
		if float64(p.cropRows) >= ssim2RecomputeCost*float64(rec.cropRows) {
			break
		}
		if p.keptBytes <= budget {
			return keep(p), nil
		}
		if len(p.strips) == 1 { // b ≥ h: go on below h, aligned
			b = (h-1)/spec.Align*spec.Align + spec.Align
		}
	}
	return rec, nil
}

// ssim2StripRef is a SSIMULACRA2 reference prepared in strips.
type ssim2StripRef struct {
	b       *webgpu.Backend
	dev     *webgpu.Device
	w, h    int
	bgs     []float32
	full    []ssim2Scale // the whole image's scales (the final formula's)
	plan    ssim2StripPlan
	scratch *ssim2Scratch
	refs    []*ssim2Ref       // kept: one per strip
	pix     *zenmetrics.Image // recomputed: a private copy of the reference
	mu      sync.Mutex
	closed  bool
}

// stripWindows is the interior of st at each scale of its crop.
func stripWindows(st webgpu.Strip, w, imageH int) [][2]int {
	var win [][2]int
	for s := range ssim2Plan(w, st.Rows()) {
		lo, hi := st.WindowAt(s, imageH)
		win = append(win, [2]int{lo, hi})
	}
	return win
}

// prepareSSIM2Strips prepares ref in strips under the given budget; keep,
// when not nil, forces the reference strategy.
func prepareSSIM2Strips(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options, budget int64, keep *bool) (*ssim2StripRef, error) {
	if opt.DistMap {
		return nil, fmt.Errorf("%w: distance map for %v on %s", zenmetrics.ErrUnsupported, zenmetrics.SSIMULACRA2, b.Name())
	}
	if err := ssim2Check(ref); err != nil {
		return nil, err
	}
	bgs := ssim2Bgs(ref)
	plan, err := planSSIM2Strips(ref.Width, ref.Height, len(bgs), int64(ref.Format.BytesPerPixel()),
		budget, b.Device().Limits().MaxStorageBufferBindingSize, opt.StripHeight)
	if err != nil {
		return nil, err
	}
	if keep != nil {
		plan.keep = *keep
	}
	s := &ssim2StripRef{b: b, dev: b.Device(), w: ref.Width, h: ref.Height, bgs: bgs, full: ssim2Plan(ref.Width, ref.Height), plan: plan}
	err = s.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := kernels(g)
		if err != nil {
			return err
		}
		sc, err := newSSIM2Scratch(g, ssim2Plan(ref.Width, plan.maxCrop), len(bgs), true, k)
		s.scratch = sc
		if err != nil {
			return err
		}
		// The raw upload of the tallest crop (at the reference's layout),
		// so that strips do not grow it one after another.
		return sc.up.Reserve(g, &sc.held, int64(ref.Stride)*int64(plan.maxCrop-1)+int64(ref.Width*ref.Format.BytesPerPixel()))
	})
	if err != nil {
		s.Release()
		return nil, err
	}
	if !plan.keep {
		// A private, tightly packed copy: the caller may reuse its buffer
		// while the reference lives.
		s.pix = zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
		for y := range ref.Height {
			copy(s.pix.Row(y), ref.Row(y))
		}
		return s, nil
	}
	for _, st := range plan.strips {
		r, err := prepareSSIM2(ctx, b, webgpu.StripCrop(ref, st.C0, st.C1), s.scratch, stripWindows(st, ref.Width, ref.Height), plan.maxCrop)
		if err != nil {
			s.Release()
			return nil, err
		}
		s.refs = append(s.refs, r)
	}
	return s, nil
}

// Score implements zenmetrics.Reference: the strips' window sums added,
// then the full image's formula.
func (s *ssim2StripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	if err := dist.Validate(); err != nil {
		return zenmetrics.Score{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	if err := webgpu.SizeMismatch(s.w, s.h, dist); err != nil {
		return zenmetrics.Score{}, err
	}
	maxBinding := s.dev.Limits().MaxStorageBufferBindingSize
	var acc [][]ssim2ScaleSums
	for i, st := range s.plan.strips {
		crop := webgpu.StripCrop(dist, st.C0, st.C1)
		if uint64(ssim2RawBytes(crop)) > maxBinding {
			return zenmetrics.Score{}, &zenmetrics.OutOfMemoryError{Backend: s.b.Name(), Requested: ssim2RawBytes(crop), Free: -1,
				Detail: "a strip of the distorted image exceeds maxStorageBufferBindingSize"}
		}
		r := (*ssim2Ref)(nil)
		if s.plan.keep {
			r = s.refs[i]
		} else {
			r, err = prepareSSIM2(ctx, s.b, webgpu.StripCrop(s.pix, st.C0, st.C1), s.scratch, stripWindows(st, s.w, s.h), s.plan.maxCrop)
		}
		if err == nil {
			err = s.dev.Do(ctx, func(g *webgpu.GPU) error {
				defer g.NoteHeld()
				_, err := r.run(g, crop, false, nil)
				return err
			})
			if err == nil {
				acc = r.addSums(acc)
			}
			if !s.plan.keep {
				r.Release()
			}
		}
		if err != nil {
			return zenmetrics.Score{}, fmt.Errorf("ssimulacra2 strip %d/%d (rows %d-%d): %w", i+1, len(s.plan.strips), st.Y0, st.Y1, err)
		}
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: ssim2Finish(s.full, acc)}, nil
}

// Release implements zenmetrics.Reference (idempotent).
func (s *ssim2StripRef) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, r := range s.refs {
		r.Release()
	}
	s.refs, s.pix = nil, nil
	if sc := s.scratch; sc != nil {
		s.scratch = nil
		s.dev.Free(sc.held.Take())
	}
}

// Strips is the number of bands and whether reference state is kept.
func (s *ssim2StripRef) Strips() (n int, kept bool) { return len(s.plan.strips), s.plan.keep }

// Bytes is the device memory the strip reference holds between Scores:
// the kept strips' planes and the shared scratch.
func (s *ssim2StripRef) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.refs {
		n += r.Bytes()
	}
	if s.scratch != nil {
		n += s.scratch.held.Bytes
	}
	return n
}
