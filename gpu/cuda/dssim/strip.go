package dssim

import (
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Strips (zenmetrics.ModeStrip): the geometry and memory model. The rows
// are cut by internal/strips with gpu/webgpu/dssim's spec, and for the
// same reasons every interior SSIM-map value is the full image's, bit for
// bit:
//
//   - A crop starts at a multiple of 16 rows, so its scale s (2×2 means,
//     s ≤ 4) is rows c0/2^s.. of the full image's scale s, and its last
//     rows there are the full image's too (floor division drops the same
//     rows); the linear and L*a*b* planes of a crop are the full image's
//     rows exactly (the alpha background pattern is indexed by image row:
//     the kernels take the crop's first row).
//   - Only the blurs read across rows, and they clamp at the crop's edge
//     where the full image has more rows. At one scale the chain is the
//     chroma blur, then the mu / squared / cross blurs, each two 3×3
//     passes: a clamp moves at most the 4 rows nearest a crop edge at
//     that scale. 64 halo rows keep 64/2^s ≥ 4 rows of context at every
//     scale.
//
// Unlike WebGPU, which adds per-strip partial sums in float, the strips
// here write their interiors into one map per scale at the image's rows
// (the ssim kernel's window), and the pooling then runs over those maps
// exactly as for a whole image: the maps and so the scores equal the
// whole-image CUDA result bit for bit. The cost is the maps of every
// scale, 4 bytes per pixel × 4/3, beside the crop-sized scratch.

const (
	stripAlign = 1 << (maxScales - 1) // 16: scale 4's 2×2 blocks line up
	stripHalo  = 4 * stripAlign       // 64: ≥ 4 rows of context at every scale
	stripMin   = 2 * stripAlign       // every scale of a crop has ≥ 2 rows
)

var stripSpec = strips.Spec{Halo: stripHalo, Align: stripAlign, MinCrop: stripMin}

// forceKeep, when not nil, makes a forced strip height (Options.
// StripHeight) keep or recompute the reference planes: the tests run both
// on one device.
var forceKeep *bool

// cropDims are the n scales of a w×rows plane: halved n−1 times, as many
// as the full image has (a crop alone might allow fewer or more).
func cropDims(w, rows, n int) [][2]int {
	dims := [][2]int{{w, rows}}
	for len(dims) < n {
		d := dims[len(dims)-1]
		dims = append(dims, [2]int{d[0] / 2, d[1] / 2})
	}
	return dims
}

// band is one strip: its crop's scales, and per scale the crop-local rows
// [lo, hi) it owns (written into the image's map at row c0>>s + lo).
type band struct {
	strips.Strip
	dims   [][2]int
	lo, hi [maxScales]int
}

// stripPlan is the geometry of a strip reference.
type stripPlan struct {
	w, h  int
	dims  [][2]int // the image's scales
	bands []band
	rows  int  // the tallest crop, which the slot's planes are sized to
	keep  bool // every strip's reference planes stay resident
}

// newStripPlan lays out the bands of a w×h image over ss.
func newStripPlan(w, h int, ss []strips.Strip, keep bool) *stripPlan {
	p := &stripPlan{w: w, h: h, dims: scaleDims(w, h), keep: keep}
	for _, st := range ss {
		b := band{Strip: st, dims: cropDims(w, st.Rows(), len(p.dims))}
		for sc, d := range b.dims {
			c0 := st.C0 >> sc
			b.lo[sc] = st.Y0>>sc - c0
			if st.Y1 == h {
				b.hi[sc] = d[1] // the image's last rows at this scale
			} else {
				b.hi[sc] = st.Y1>>sc - c0
			}
			b.hi[sc] = max(b.lo[sc], b.hi[sc])
		}
		p.rows = max(p.rows, st.Rows())
		p.bands = append(p.bands, b)
	}
	return p
}

// cropRaw is the upload of a crop of rows rows with this stride and
// format (cuda.RawBytes of the crop).
func cropRaw(w, rows, stride int, f zenmetrics.PixelFormat) int64 {
	return int64(stride)*int64(rows-1) + int64(w)*int64(f.BytesPerPixel())
}

// planeSizes is an img + mu pair per scale of dims.
func planeSizes(dims [][2]int) []int64 {
	var out []int64
	for _, d := range dims {
		n := 16 * max(1, int64(d[0])*int64(d[1]))
		out = append(out, n, n)
	}
	return out
}

// stripRefSizes is every buffer of a strip reference, in prepareStrips'
// order: the decoding tables, then (kept) every band's img and mu planes.
func (p *stripPlan) refSizes() []int64 {
	out := []int64{4 * lutLen}
	if p.keep {
		for _, b := range p.bands {
			out = append(out, planeSizes(b.dims)...)
		}
	}
	return out
}

// slotSizes is every buffer of a strip slot for uploads of raw bytes, in
// fillStripSlot's order: the full-image slot's scratch for the tallest
// crop (raw, lin ×2, lab, img, mu), the map of every image scale, the
// pooling's row sums and counts (the image's rows), the results, and
// (recomputed reference) one crop's reference img and mu per scale.
func (p *stripPlan) slotSizes(raw int64) []int64 {
	n0 := int64(p.w) * int64(p.rows)
	n1 := max(1, int64(p.w/2)*int64(p.rows/2))
	out := []int64{raw, 16 * n0, 16 * n1, 16 * n0, 16 * n0, 16 * n0}
	for _, d := range p.dims {
		out = append(out, 4*max(1, int64(d[0])*int64(d[1])))
	}
	out = append(out, 8*int64(p.h), 8*int64(p.h), resBytes)
	if !p.keep {
		out = append(out, planeSizes(cropDims(p.w, p.rows, len(p.dims)))...)
	}
	return out
}

// memory is the device bytes of a strip reference and its first slot, as
// the allocator rounds them.
func (p *stripPlan) memory(raw int64) int64 {
	return cuda.AllocSizes(p.refSizes()) + cuda.AllocSizes(p.slotSizes(raw))
}

// indexable reports whether the kernels' int indexing and grid limits
// hold: the image's maps (written at image rows) and the tallest crop.
func (p *stripPlan) indexable() bool {
	return int64(p.w)*int64(p.h) <= math.MaxInt32 && fits(p.w, p.rows)
}

// planStrips picks the strip plan of a w×h image whose crops upload
// rawOf(rows) bytes, within budget bytes (< 0: unknown, anything goes),
// by the shared policy (strips.Choose: the largest band first, the
// resident reference preferred). force > 0 forces the band's interior
// rows (keeping the reference when it fits, or as forceKeep says).
func planStrips(w, h int, rawOf func(rows int) int64, budget int64, force int) (*stripPlan, error) {
	fitsIn := func(ss []strips.Strip, keep bool) bool {
		p := newStripPlan(w, h, ss, keep)
		return p.indexable() && (budget < 0 || p.memory(rawOf(p.rows)) <= budget)
	}
	ss, keep, err := cuda.ChooseStrips("DSSIM", w, h, stripSpec, force, budget, forceKeep, fitsIn)
	if err != nil {
		return nil, err
	}
	p := newStripPlan(w, h, ss, keep)
	if !p.indexable() {
		return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("DSSIM strips of %d rows of a %dx%d image exceed the kernels' indexing", p.rows, w, h)}
	}
	return p, nil
}
