// Package strips is the strip planner (zenmetrics.ModeStrip) that the GPU
// backends share: an image too large for the device is scored as
// horizontal bands. Each band's interior rows are computed from a crop
// that adds a halo of context rows above and below, wide enough that every
// interior value equals the full-image value (exactly for finite filters,
// within a stated bound for recursive ones); the per-pixel sums a metric
// reduces are taken over interiors only, so that adding the strips'
// partial sums (or pooling the interiors laid back into one map) gives the
// full image's sums and the usual final formula gives the full image's
// score.
//
// The planner is metric- and runtime-agnostic: a metric states its halo,
// the alignment of band boundaries (2^(levels-1) for a pyramid, so that
// every level's 2×2 downsampling lines up with the full image's) and its
// smallest crop; the planner cuts the rows. It lives here, below both
// gpu/webgpu and gpu/cuda, so that the two runtimes cut an image the same
// way (gpu/webgpu re-exports it under its old names).
package strips

import (
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Spec is what a metric tells the planner.
type Spec struct {
	// Halo is the number of context rows on each side of a band, at full
	// resolution; a multiple of Align.
	Halo int
	// Align: band boundaries and crop starts are multiples of it.
	Align int
	// MinCrop is the smallest crop height the metric computes the same
	// way as the full image (e.g. every pyramid level still present).
	MinCrop int
}

// Strip is one band: interior rows [Y0, Y1) of the image, computed from
// crop rows [C0, C1).
type Strip struct {
	Y0, Y1 int
	C0, C1 int
}

// Rows is the crop height.
func (s Strip) Rows() int { return s.C1 - s.C0 }

// Window is the interior as crop-local rows [lo, hi).
func (s Strip) Window() (lo, hi int) { return s.Y0 - s.C0, s.Y1 - s.C0 }

// WindowAt is the interior at pyramid level l (rows halved l times, the
// last strip ending at the level's ceil height), as crop-local rows of that
// level. C0, Y0 and Y1 (unless Y1 is the image end) are multiples of 2^l
// when Align is, so the windows of all strips tile every level exactly.
func (s Strip) WindowAt(l, imageH int) (lo, hi int) {
	c0 := s.C0 >> l
	lo = s.Y0>>l - c0
	if s.Y1 == imageH {
		hi = (imageH+(1<<l)-1)>>l - c0
	} else {
		hi = s.Y1>>l - c0
	}
	return lo, hi
}

// Plan cuts h rows into bands of about band interior rows (rounded to the
// alignment, then evened out so the last band is not a sliver).
func Plan(h, band int, spec Spec) ([]Strip, error) {
	if spec.Align <= 0 || spec.Halo%spec.Align != 0 {
		return nil, fmt.Errorf("strips: spec %+v: halo must be a multiple of the alignment", spec)
	}
	if h <= 0 {
		return nil, fmt.Errorf("strips: no rows to cut")
	}
	if band >= h {
		return []Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}, nil
	}
	band = band / spec.Align * spec.Align
	if band < spec.Align {
		band = spec.Align
	}
	n := (h + band - 1) / band
	// Even out: the same number of bands, each as short as it can be.
	band = ((h+n-1)/n + spec.Align - 1) / spec.Align * spec.Align
	var out []Strip
	for y := 0; y < h; y += band {
		s := Strip{Y0: y, Y1: min(h, y+band)}
		s.C0 = max(0, s.Y0-spec.Halo)
		s.C1 = min(h, s.Y1+spec.Halo)
		// A crop below the metric's minimum (a short last band) takes more
		// context: rows above first (aligned), then below.
		if short := spec.MinCrop - s.Rows(); short > 0 {
			s.C0 = max(0, (s.C0-short)/spec.Align*spec.Align)
			s.C1 = min(h, s.C0+max(spec.MinCrop, s.C1-s.C0))
		}
		out = append(out, s)
	}
	// Uniform crops: every crop as tall as the tallest (more context is
	// harmless), so that strips share pooled buffers of one size instead of
	// holding one set per size. An aligned start may leave the last crop
	// up to Align−1 rows taller.
	tallest := 0
	for _, s := range out {
		tallest = max(tallest, s.Rows())
	}
	for i := range out {
		s := &out[i]
		if s.Rows() < tallest {
			s.C1 = min(h, s.C0+tallest)
		}
		if s.Rows() < tallest {
			s.C0 = max(0, (s.C1-tallest)/spec.Align*spec.Align)
		}
	}
	for i, s := range out {
		if s.Rows() < spec.MinCrop && s.Rows() < h {
			return nil, fmt.Errorf("strips: strip %d has %d rows, fewer than the %d the metric needs", i, s.Rows(), spec.MinCrop)
		}
	}
	return out, nil
}

// Band picks the interior rows per band: the largest band whose crop
// (band + 2·halo rows) needs at most maxCropRows rows, the tighter of the
// binding limit and the memory budget. ok is false when not even one
// aligned band fits.
func Band(h int, spec Spec, maxCropRows int64) (band int, ok bool) {
	if maxCropRows >= int64(h) {
		return h, true // one strip holds the whole image
	}
	b := maxCropRows - 2*int64(spec.Halo)
	b = b / int64(spec.Align) * int64(spec.Align)
	if b < int64(spec.Align) || maxCropRows < int64(spec.MinCrop) {
		return 0, false
	}
	return int(b), true
}

// RowsWithin is how many rows of rowBytes fit in budget bytes (≥ 0).
func RowsWithin(budget, rowBytes int64) int64 {
	if rowBytes <= 0 {
		return math.MaxInt32
	}
	if budget <= 0 {
		return 0
	}
	return budget / rowBytes
}

// Crop is the rows [c0, c1) of im as an image sharing im's pixels.
func Crop(im *zenmetrics.Image, c0, c1 int) *zenmetrics.Image {
	return &zenmetrics.Image{Width: im.Width, Height: c1 - c0, Format: im.Format, Stride: im.Stride,
		Pix: im.Pix[c0*im.Stride:]}
}

// Choose picks the bands of an h-row image and whether the reference's
// per-strip state stays resident (keep), the policy both GPU runtimes
// follow: the largest band first (the whole image as one band), halving
// down to the alignment; at each band the resident reference is
// preferred (a score then computes the distorted side only), and the
// recomputed one (both sides per score, one crop's reference state at a
// time) is taken while bands stay long (≥ 4 halos: crops hold at most
// 1.5× their interior rows) or when nothing else fits. fits says whether
// a plan stays within the memory budget and the runtime's limits. force >
// 0 forces the band's interior rows; keep is then whether the resident
// plan fits, and the caller checks the rest. ok is false when no plan
// fits.
func Choose(h int, spec Spec, force int, fits func(ss []Strip, keep bool) bool) (ss []Strip, keep, ok bool, err error) {
	if force > 0 {
		ss, err := Plan(h, force, spec)
		if err != nil {
			return nil, false, false, err
		}
		return ss, fits(ss, true), true, nil
	}
	for _, long := range []bool{true, false} {
		for band := h; ; band = band / 2 / spec.Align * spec.Align {
			band = max(band, spec.Align)
			if long == (band >= 4*spec.Halo || band == h) {
				if ss, err := Plan(h, band, spec); err == nil {
					for _, keep := range []bool{true, false} {
						if fits(ss, keep) {
							return ss, keep, true, nil
						}
					}
				}
			}
			if band == spec.Align {
				break
			}
		}
	}
	return nil, false, false, nil
}
