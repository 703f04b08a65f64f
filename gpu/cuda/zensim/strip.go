package zensim

import (
	"fmt"
	"math"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Strips (zenmetrics.ModeStrip): the geometry and the memory model. The
// rows are cut by internal/strips with gpu/webgpu/zensim's spec (the same
// bands, the same crops), and for the same reasons every value the
// kernels compute for a band is the whole image's, bit for bit:
//
//   - The XYB conversion is per pixel; the two things in it that depend
//     on the row (which pixels of an opaque 8-bit image take the vector
//     cube root, by zensim's 64-row chunks of the image, and the alpha
//     background pattern) are computed from the image row, which the xyb
//     kernel is given (the crop's first row and the image's height).
//     The horizontal blur is per row.
//   - Crops start at multiples of 128 = 16·2³, so scale s of a crop is
//     rows C0/2^s.. of the image's scale s for each of zensim's 4 scales
//     (the 2×2 means line up, and a crop that ends the image drops the
//     same odd rows as the image), and zensim's 16-row vertical strips at
//     every scale fall wholly inside one band's interior.
//   - A strip's vertical running sums restart at the strip and read its
//     rows and 5 more on either side, mirrored at the image's ends: the
//     vstats kernel takes the image's rows and the crop's offset, so it
//     mirrors where the image does; 5·2³ = 40 image rows at scale 3, which
//     the 128-row halo holds (checkCover verifies every band and scale).
//
// Each band's strip sums go to the slot the whole image gives that strip
// (chain), and the merge adds every scale's slots in strip order once all
// bands are done, the whole image's float64 chain: the 228 features and
// the score are the whole image's bits (TestEmulatedStrips, TestStripsGPU).
// The cost of a band beyond its interior is its halo: crops of 384 rows
// for the smallest bands (128), about 1.5× their interiors from 512 on.

// stripSpec: bands aligned to 128 rows (zensim's strips at the coarsest
// scale), a 128-row halo (≥ 40 needed, a multiple of the alignment), crops
// of at least 256 rows; gpu/webgpu/zensim's spec, so that both runtimes
// cut an image alike.
var stripSpec = strips.Spec{Halo: stripAlign, Align: stripAlign, MinCrop: 2 * stripAlign}

// stripAlign is 16 rows at zensim's coarsest scale.
const stripAlign = strip << (cpuz.NumScales - 1)

// forceKeep, when not nil, makes a forced strip height (Options.
// StripHeight) keep or recompute the reference pyramids: the tests run
// both on one device.
var forceKeep *bool

// stripPlan is the geometry of a strip reference.
type stripPlan struct {
	*geom
	keep bool // every band's reference pyramid stays resident
}

// newStripPlan lays out a w×h image over ss and checks that each band's
// crop holds what its strips read (an error: the spec is wrong).
func newStripPlan(w, h int, ss []strips.Strip, keep bool) (*stripPlan, error) {
	p := &stripPlan{geom: newGeom(w, h, ss), keep: keep}
	for i := range p.bands {
		if err := p.checkCover(&p.bands[i]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkCover verifies that band b's crop holds, at every scale, every row
// its strips read (the strip's rows and 5 more on either side, clipped to
// the image), and that the crop starts on a row of that scale (an
// internal error otherwise: the strip spec is wrong).
func (g *geom) checkCover(b *band) error {
	for s, d := range g.img {
		if b.k1[s] <= b.k0[s] {
			continue
		}
		c0 := b.C0 >> s
		top := max(b.k0[s]*strip-cpuz.BlurRadius, 0)
		bot := min(min(b.k1[s]*strip, d[1])+cpuz.BlurRadius, d[1])
		if b.C0%(1<<s) != 0 || (b.Y0>>s)%strip != 0 || top < c0 || bot > c0+b.dims[s][1] {
			return fmt.Errorf("zensim on CUDA: strip %+v: scale %d needs rows [%d, %d), the crop has [%d, %d)",
				b.Strip, s, top, bot, c0, c0+b.dims[s][1])
		}
	}
	return nil
}

// refSizes is every buffer of a strip reference, in prepareStrips' order:
// the decoding tables, then (kept) every band's pyramid, one buffer per
// scale.
func (p *stripPlan) refSizes() []int64 {
	out := []int64{4 * tabLen}
	if p.keep {
		for _, b := range p.bands {
			out = append(out, pyramidSizes(b.dims)...)
		}
	}
	return out
}

// slotSizes is every buffer of a strip slot for uploads of raw bytes, in
// fillStripSlot's order: the whole-image slot's buffers for the tallest
// crop (slotSizes), then (recomputed) one crop's reference pyramid.
func (p *stripPlan) slotSizes(raw int64) []int64 {
	out := slotSizes(p.geom, raw)
	if !p.keep {
		out = append(out, pyramidSizes(cropDims(p.img, p.rows))...)
	}
	return out
}

// memory is the device bytes of a strip reference and its first slot, as
// the allocator rounds them.
func (p *stripPlan) memory(raw int64) int64 {
	return cuda.AllocSizes(p.refSizes()) + cuda.AllocSizes(p.slotSizes(raw))
}

// indexable reports whether the kernels' indexing and grid limits hold for
// the tallest crop (as fits does for a whole image).
func (p *stripPlan) indexable() bool { return fits(p.w, p.rows) }

// cropRaw is the upload of a crop of rows rows with this stride and
// format (cuda.RawBytes of the crop).
func cropRaw(w, rows, stride int, f zenmetrics.PixelFormat) int64 {
	return int64(stride)*int64(rows-1) + int64(w)*int64(f.BytesPerPixel())
}

// planStrips picks the strip plan of a w×h image whose crops upload
// rawOf(rows) bytes, within budget bytes (< 0: unknown, anything goes),
// by the shared policy (strips.Choose: the largest band first, the
// resident reference preferred). force > 0 forces the band's interior
// rows (keeping the reference when it fits, or as forceKeep says). No
// plan within the budget is an OutOfMemoryError (ErrOutOfMemory: the
// ladder goes on to the CPU).
func planStrips(w, h int, rawOf func(rows int) int64, budget int64, force int) (*stripPlan, error) {
	fitsIn := func(ss []strips.Strip, keep bool) bool {
		p, err := newStripPlan(w, h, ss, keep)
		return err == nil && p.indexable() && (budget < 0 || p.memory(rawOf(p.rows)) <= budget)
	}
	ss, keep, err := cuda.ChooseStrips("zensim", w, h, stripSpec, force, budget, forceKeep, fitsIn)
	if err != nil {
		return nil, err
	}
	p, err := newStripPlan(w, h, ss, keep)
	if err != nil {
		return nil, err
	}
	if !p.indexable() {
		return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("zensim strips of %d rows of a %dx%d image exceed the kernels' indexing", p.rows, w, h)}
	}
	return p, nil
}

// estimateStrips is the memory of the strip plan of a w×h RGBA16 image
// within budget, and whether there is one.
func estimateStrips(w, h int, budget int64) (int64, bool) {
	if w < cpuz.MinSize || h < cpuz.MinSize || int64(cpuz.PaddedWidth(w)) > math.MaxInt32 {
		return 0, false
	}
	rawOf := func(rows int) int64 { return worstRaw(w, rows) }
	p, err := planStrips(w, h, rawOf, budget, 0)
	if err != nil {
		return 0, false
	}
	return p.memory(rawOf(p.rows)), true
}
