package iwssim

import (
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Strips (zenmetrics.ModeStrip): the geometry and memory model. The rows
// are cut by internal/strips with gpu/webgpu/iwssim's spec (a 160-row
// halo, crops starting at multiples of 16, at least 176 rows), and every
// value a strip owns is the whole image's, bit for bit:
//
//   - A crop starts at a multiple of 16 = 2^(scales−1) rows, so its scale
//     k is rows C0/2^k.. of the image's scale k (piq's decimation keeps
//     every other row from the first), and a crop that ends at the image's
//     end ends as the image's scales do (⌈n/2⌉ rows).
//   - Only the 5-tap pyramid filters, the 11×11 window, the 3×3 blocks and
//     the parent's enlargement read across rows, and only the first
//     reflect at the crop's edges where the image has more rows: at most
//     2 rows of a low-pass level and 7 of a band next to an interior crop
//     edge differ from the image's. A value centred on row r of scale k
//     reads rows r ± 5 there (the parent's rows near r/2 at scale k+1):
//     (7 + 5)·2^k rows of the image at the bands' scales (96 at scale 3),
//     (2 + 5)·16 = 112 at the low-pass scale 4. The 160-row halo covers
//     both with a margin.
//   - The parent's enlargement weights depend on the parent's height in
//     the image, not the crop's: cov and mahal take the image's height and
//     the crop's row offsets and interpolate at the image's rows
//     (iwssim.cu's parent_row_at).
//
// The global steps stay whole-image steps. The covariance of every
// weighted scale sums over all its block rows: each strip writes the sums
// of the block rows it owns into the image's table (cov), the host adds
// the table in row order as for a whole image (model) and solves the four
// 10×10 eigenvalue problems once; vᵀC⁻¹v then is per block again
// (mahal, a strip's owned rows). The score's row sums go to the image's
// rows and are pooled as a whole image's (pool). So a strip score is the
// whole image's bit for bit (TestEmulatedStrips, TestStripsGPU).
//
// A plan keeps every strip's reference planes resident (keep: a score
// runs the distorted side only) or recomputes one crop's reference per
// strip at every score from a host copy of the reference (then the device
// holds one crop's planes per slot, and the model).

const (
	stripAlign = 1 << (nScales - 1) // 16: every scale's decimation lines up
	stripHalo  = 10 * stripAlign    // 160: see above (112 needed)
	stripMin   = 11 * stripAlign    // 176: scale 4 keeps an 11-row window
)

var stripSpec = strips.Spec{Halo: stripHalo, Align: stripAlign, MinCrop: stripMin}

// forceKeep, when not nil, makes a forced strip height (Options.
// StripHeight) keep or recompute the reference planes: the tests run both
// on one device.
var forceKeep *bool

// band is one strip: its crop and the rows it owns at every scale.
type band struct {
	strips.Strip
	win
}

// stripPlan is the geometry of a strip reference.
type stripPlan struct {
	w, h  int
	gm    geometry // the image's
	bands []band
	rows  int  // the tallest crop, which the slot's planes are sized to
	keep  bool // every strip's reference planes stay resident
}

// newStripPlan lays out the bands of a w×h image over ss: per scale the
// crop's first row in the image and the window (strips.Strip.WindowAt)
// of rows it owns.
func newStripPlan(w, h int, ss []strips.Strip, keep bool) *stripPlan {
	p := &stripPlan{w: w, h: h, gm: newGeometry(w, h), keep: keep}
	for _, st := range ss {
		b := band{Strip: st, win: win{gm: newGeometry(w, st.Rows()), img: p.gm}}
		for k := 0; k < nScales; k++ {
			b.ro[k] = st.C0 >> k
			b.lo[k], b.hi[k] = st.WindowAt(k, h)
			b.hi[k] = max(b.lo[k], b.hi[k])
		}
		p.rows = max(p.rows, st.Rows())
		p.bands = append(p.bands, b)
	}
	return p
}

// cropPlanes is the sizes of one crop's reference planes (refSizes
// without the model, which a strip reference holds once).
func cropPlanes(w, rows int) []int64 { return refSizes(w, rows)[1:] }

// refSizes is every buffer of a strip reference, in prepareStrips'
// order: the model, then (kept) every band's planes.
func (p *stripPlan) refSizes() []int64 {
	out := []int64{8 * modelLen}
	if p.keep {
		for _, b := range p.bands {
			out = append(out, cropPlanes(p.w, b.Rows())...)
		}
	}
	return out
}

// slotSizes is every buffer of a strip slot for uploads of raw bytes, in
// fillStripSlot's order: the whole-image slot's scratch for the tallest
// crop with the row sums of the image's rows, then (recomputed
// reference) one crop's reference planes.
func (p *stripPlan) slotSizes(raw int64) []int64 {
	out := slotSizes(p.w, p.rows, raw)
	out[len(out)-1] = sumsBytes(p.gm)
	if !p.keep {
		out = append(out, cropPlanes(p.w, p.rows)...)
	}
	return out
}

// covBytes is the image's covariance table (covOffsets), which a
// preparation fills strip by strip and reads back once.
func (p *stripPlan) covBytes() int64 {
	_, n := covOffsets(p.gm)
	return 8 * int64(n)
}

// memory is the device bytes of a strip reference and its first slot, as
// the allocator rounds them, with the covariance table that a
// preparation holds besides (the peak).
func (p *stripPlan) memory(raw int64) int64 {
	return cuda.AllocSizes(p.refSizes()) + cuda.AllocSizes(p.slotSizes(raw)) + cuda.AllocSize(p.covBytes())
}

// outBytes is a strip slot's page-locked read-back: the image's row sums
// or its covariance table.
func (p *stripPlan) outBytes() int64 { return max(sumsBytes(p.gm), p.covBytes()) }

// indexable reports whether the kernels' int indexing and grid limits
// hold: the tallest crop's planes, and the image's tables (indexed by
// image row).
func (p *stripPlan) indexable() bool {
	_, n := covOffsets(p.gm)
	return fits(p.w, p.rows) && int64(n) <= math.MaxInt32 && 2*int64(p.gm.rows) <= math.MaxInt32
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
	ss, keep, err := cuda.ChooseStrips("IW-SSIM", w, h, stripSpec, force, budget, forceKeep, fitsIn)
	if err != nil {
		return nil, err
	}
	p := newStripPlan(w, h, ss, keep)
	if !p.indexable() {
		return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("IW-SSIM strips of %d rows of a %dx%d image exceed the kernels' indexing", p.rows, w, h)}
	}
	return p, nil
}
