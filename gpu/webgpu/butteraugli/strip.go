package butteraugli

import (
	"context"
	"fmt"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Butteraugli in strips.
//
// Halo. Every filter of Butteraugli is an FIR, so a value depends on a
// bounded neighbourhood: per resolution level the chain is the opsin blur
// (reach 2) → LF blur (16) → MF blur (7) → UHF blur (3) → masking blur (6)
// → fuzzy erosion (3) → Malta filters (4): at most R = 41 rows. The half
// resolution level doubles that and adds one row of its 2×2 subsampling
// and one of the combine's upsampling: 2R + 2 = 84 full rows, which
// dominates. Crops start on even rows so the half level's rows are the
// full image's. Blurs cut the kernel off at the crop's edge exactly as at
// the image's, so every value at least 84 rows from a crop edge that is not
// an image edge is computed by the same arithmetic from the same inputs as
// in the full image: the interior of the map is bit-identical, its maximum
// is the full image's, and the power sums differ only by summation order.
//
// Reference state. Two ways to keep a prepared reference in strips:
//
//   - kept: each strip's reference decomposition stays resident (13
//     planes per alpha background and level, ~65 B/px for an opaque image
//     over all strips, halos counted twice) and the per-score scratch
//     (~80 B/px of one strip plus the upload) is shared through the pool;
//   - recomputed: only a host copy of the reference's bytes is kept and
//     each Score prepares every strip again (upload, decomposition,
//     erosion), so the device holds one strip's full working set.
//
// Kept is chosen whenever the resident state fits the memory budget; it
// does per Score only what a full-image cached reference does. Measured on
// lavapipe (2 cores, TestButteraugliStripKeptVsRecomputed, best of 3
// Scores of a cached reference): 512² in 128-row strips kept 623 ms /
// 52.8 MiB held vs recomputed 930 ms / 36.7 MiB; 1024² in 256-row strips
// kept 1.87 s / 160 MiB vs recomputed 3.08 s / 112 MiB. Recomputed is the
// fallback that lets any size run in one strip's memory.

// Reaches (rows) of the two non-blur neighbourhoods of the chain.
const (
	bfErodeReach = 3 // fuzzy erosion looks 3 rows away
	bfMaltaReach = 4 // the Malta lines are 9 taps long
)

// bfStripSpec is the strip geometry of Butteraugli (see the comment above).
func bfStripSpec() webgpu.StripSpec {
	reach := bfKernOpsin.off + bfKernLF.off + bfKernHF.off + bfKernUHF.off + bfKernMask.off +
		bfErodeReach + bfMaltaReach
	halo := 2*reach + 2
	halo = (halo + 1) &^ 1
	return webgpu.StripSpec{Halo: halo, Align: 2, MinCrop: 2 * bfMinSize}
}

// bfPlaneBytesPerPx is the device bytes per crop pixel of the float planes
// of one strip: per level 13 resident planes per background and 16 scratch
// planes, the half level a quarter of the full one.
func bfPlaneBytesPerPx(variants int, resident, scratch bool) float64 {
	planes := 0
	if resident {
		planes += 13 * variants
	}
	if scratch {
		planes += 16
	}
	return 4 * float64(planes) * 1.25
}

// bfStripPlan is the band layout and reference strategy for a w×h image.
type bfStripPlan struct {
	strips []webgpu.Strip
	keep   bool
	bytes  int64 // predicted device bytes (what Estimate reports)
}

// planButteraugliStrips chooses the band height and the strategy from the
// budget (bytes this reference may use), the binding limit and the
// bytes-per-pixel model. forced > 0 sets the band height (tests).
func planButteraugliStrips(w, h, variants int, rawBpp int64, budget int64, maxBinding uint64, forced int) (bfStripPlan, error) {
	spec := bfStripSpec()
	// Binding: the widest binding is a float plane (4 B/px) or the raw
	// upload (rawBpp B/px), both per crop row.
	bindRows := int64(maxBinding) / (int64(w) * max(4, rawBpp))
	scratchRow := int64(float64(w)*bfPlaneBytesPerPx(variants, true, true)) + 2*rawBpp*int64(w)
	band := forced
	if band <= 0 {
		var ok bool
		band, ok = webgpu.StripBand(h, spec, min(bindRows, webgpu.RowsWithin(budget, scratchRow)))
		if !ok {
			return bfStripPlan{}, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: scratchRow * int64(spec.MinCrop+2*spec.Halo), Free: budget,
				Detail: fmt.Sprintf("not even a %d-row Butteraugli strip fits (binding limit %d rows, budget %d bytes)", spec.Align, bindRows, budget)}
		}
	}
	strips, err := webgpu.PlanStrips(h, band, spec)
	if err != nil {
		return bfStripPlan{}, err
	}
	maxCrop := 0
	var cropRows int64
	for _, s := range strips {
		maxCrop = max(maxCrop, s.Rows())
		cropRows += int64(s.Rows())
	}
	if int64(maxCrop) > bindRows {
		return bfStripPlan{}, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: int64(maxCrop) * int64(w) * max(4, rawBpp), Free: -1,
			Detail: "a strip's plane exceeds maxStorageBufferBindingSize"}
	}
	recompute := int64(maxCrop) * scratchRow
	resident := int64(float64(cropRows) * float64(w) * bfPlaneBytesPerPx(variants, true, false))
	shared := int64(maxCrop) * (int64(float64(w)*bfPlaneBytesPerPx(variants, false, true)) + 2*rawBpp*int64(w))
	p := bfStripPlan{strips: strips, bytes: recompute}
	if budget <= 0 || resident+shared <= budget {
		p.keep, p.bytes = true, resident+shared
	}
	return p, nil
}

// bfStripRef is a Butteraugli reference prepared in strips.
type bfStripRef struct {
	dev    *webgpu.Device
	w, h   int
	opt    zenmetrics.Options
	plan   bfStripPlan
	refs   []*butteraugliRef // kept: one per strip
	pix    *zenmetrics.Image // recomputed: a private copy of the reference
	mu     sync.Mutex
	closed bool
}

// prepareButteraugliStrips prepares ref in strips under the given budget.
func prepareButteraugliStrips(ctx context.Context, dev *webgpu.Device, ref *zenmetrics.Image, opt zenmetrics.Options, budget int64, keep *bool) (*bfStripRef, error) {
	if _, err := bfCheckOptions(opt); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	plan, err := planButteraugliStrips(ref.Width, ref.Height, variants, int64(ref.Format.BytesPerPixel()),
		budget, dev.Limits().MaxStorageBufferBindingSize, opt.StripHeight)
	if err != nil {
		return nil, err
	}
	if keep != nil {
		plan.keep = *keep
	}
	inner := opt
	inner.Mode = zenmetrics.ModeFull
	s := &bfStripRef{dev: dev, w: ref.Width, h: ref.Height, opt: inner, plan: plan}
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
		r, err := prepareButteraugli(ctx, dev, webgpu.StripCrop(ref, st.C0, st.C1), inner)
		if err != nil {
			s.Release()
			return nil, err
		}
		s.refs = append(s.refs, r)
		if len(r.levels) > 0 {
			err = dev.Do(ctx, func(g *webgpu.GPU) error {
				r.dropScratch()
				r.shared = true
				return nil
			})
			if err != nil {
				s.Release()
				return nil, err
			}
		}
	}
	return s, nil
}

// Score implements zenmetrics.Reference: the strips' window sums added,
// then the full image's formula; the distance map (when asked for) is the
// interiors stacked.
func (s *bfStripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
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
	var total bfSums
	if s.opt.DistMap {
		total.dm = make([]float32, 0, s.w*s.h)
	}
	for i, st := range s.plan.strips {
		lo, hi := st.Window()
		crop := webgpu.StripCrop(dist, st.C0, st.C1)
		var ws bfSums
		if s.plan.keep {
			ws, err = s.refs[i].scoreWindow(ctx, crop, lo, hi)
		} else {
			var r *butteraugliRef
			r, err = prepareButteraugli(ctx, s.dev, webgpu.StripCrop(s.pix, st.C0, st.C1), s.opt)
			if err == nil {
				ws, err = r.scoreWindow(ctx, crop, lo, hi)
				r.Release()
			}
		}
		if err != nil {
			return zenmetrics.Score{}, fmt.Errorf("butteraugli strip %d/%d (rows %d-%d): %w", i+1, len(s.plan.strips), st.Y0, st.Y1, err)
		}
		total.add(ws)
		if total.dm != nil {
			total.dm = append(total.dm, ws.dm...)
		}
	}
	res := total.result(s.opt.PNorm)
	sc = zenmetrics.Score{Metric: zenmetrics.Butteraugli, Value: res.max,
		Extras: map[string]float64{"pnorm3": res.pnorm3}}
	if s.opt.PNorm > 0 {
		sc.Extras["pnorm"] = res.pnorm
	}
	if s.opt.DistMap {
		sc.DistMap = &zenmetrics.FloatPlane{Width: s.w, Height: s.h, Pix: total.dm}
	}
	return sc, nil
}

// Release implements zenmetrics.Reference (idempotent).
func (s *bfStripRef) Release() {
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
}

// Strips is the number of bands and whether reference state is kept.
func (s *bfStripRef) Strips() (n int, kept bool) { return len(s.plan.strips), s.plan.keep }
