package zensim

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Geometry, strips and the memory model.
//
// Strips (zenmetrics.ModeStrip) give the whole image's features bit for
// bit, because every value the kernels compute is a function of rows that
// a crop holds unchanged:
//
//   - The XYB conversion is per pixel (its cube-root choice depends on the
//     image row, which the kernel is given), the horizontal blur per row.
//   - Crops start at multiples of 128 = 16·2³, so scale s of a crop is rows
//     C0/2^s.. of the image's scale s (the 2×2 means line up) for every
//     one of zensim's 4 scales, and zensim's vertical strips (16 rows at
//     each scale) fall wholly in one band.
//   - A vertical strip reads its own rows and 5 more on each side at its
//     scale, 5·2³ = 40 image rows at scale 3; the 128-row halo holds them
//     (checkCover verifies every band and scale).
//
// Each strip's partial sums go to the slot the whole image gives that
// strip, and the reduction adds the slots in one fixed order, so the score
// is the same bits (TestStrips).

// stripSpec: bands aligned to 128 rows (zensim's strips at the coarsest
// scale), a 128-row halo (≥ 40 needed, a multiple of the alignment).
var stripSpec = webgpu.StripSpec{Halo: 128, Align: 128, MinCrop: 256}

const (
	wgXY  = 16  // xyb, down: 16×16
	wgRow = 32  // hblur: one row per invocation; small groups spread the few rows over more cores
	wgCol = 64  // vstats: columns per workgroup (≤ 64: the WGSL red array)
	wgRed = 128 // reduce (≤ 128)
	nq    = 20  // partial quantities (zensim_common.wgsl NQ)

	maxGroups = 65535 // WebGPU's default maxComputeWorkgroupsPerDimension
)

// geom is the whole image's geometry at every scale.
type geom struct {
	w, h  int
	S     int       // scales used
	pw    [4]int    // plane width per scale
	gh    [4]int    // image rows per scale
	ns    [4]int    // zensim strips per scale
	gx    [4]int    // column workgroups per scale (vstats)
	mode  [4][3]int // cpu/zensim channel modes
	slot  [4]int    // first partial slot of each scale; channel c's start c·ns·gx later
	slots int
}

func newGeom(w, h int) geom {
	g := geom{w: w, h: h}
	for s, d := range cpuz.ScaleSizes(w, h) {
		g.S = s + 1
		g.pw[s], g.gh[s] = d[0], d[1]
		g.ns[s] = (d[1] + cpuz.StripRows - 1) / cpuz.StripRows
		g.gx[s] = (d[0] + wgCol - 1) / wgCol
		for c := 0; c < 3; c++ {
			g.mode[s][c] = cpuz.ChannelMode(s, c)
		}
		g.slot[s] = g.slots
		g.slots += 3 * g.ns[s] * g.gx[s]
	}
	return g
}

// packedModes is scale s's channel modes, one per byte (zensim_common's
// chan_mode); at scale 0 every channel is at least in edge mode, since
// hblur compares every plane there.
func (g *geom) packedModes(s int) uint32 {
	var m uint32
	for c := 0; c < 3; c++ {
		v := g.mode[s][c]
		if s == 0 {
			v = max(v, cpuz.ModeEdge)
		}
		m |= uint32(v) << (8 * c)
	}
	return m
}

// band is one strip of the image (a whole image is one band).
type band struct {
	webgpu.Strip
	rows   [4]int // crop rows per scale
	k0, k1 [4]int // zensim strips owned per scale
}

// layout is a reference's geometry: the image, its bands and the tallest
// crop (buffers are sized to it).
type layout struct {
	g       geom
	bands   []band
	maxRows int
}

func newLayout(w, h int, strips []webgpu.Strip) (*layout, error) {
	l := &layout{g: newGeom(w, h)}
	if strips == nil {
		strips = []webgpu.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}
	}
	for _, st := range strips {
		b := band{Strip: st}
		for s := 0; s < l.g.S; s++ {
			if s == 0 {
				b.rows[0] = st.C1 - st.C0
			} else {
				b.rows[s] = b.rows[s-1] / 2
			}
			b.k0[s] = (st.Y0 >> s) / cpuz.StripRows
			if st.Y1 == h {
				b.k1[s] = l.g.ns[s]
			} else {
				b.k1[s] = (st.Y1 >> s) / cpuz.StripRows
			}
		}
		if err := l.checkCover(&b); err != nil {
			return nil, err
		}
		l.maxRows = max(l.maxRows, st.C1-st.C0)
		l.bands = append(l.bands, b)
	}
	return l, nil
}

// checkCover verifies that a band's crop holds every row its owned strips
// read at every scale, and that the band boundaries fall on strip
// boundaries (an internal error otherwise: the strip spec is wrong).
func (l *layout) checkCover(b *band) error {
	for s := 0; s < l.g.S; s++ {
		if b.k1[s] <= b.k0[s] {
			continue
		}
		c0 := b.C0 >> s
		if b.C0%(1<<s) != 0 || (b.Y0>>s)%cpuz.StripRows != 0 {
			return fmt.Errorf("webgpu: zensim strip %+v is not aligned at scale %d", b.Strip, s)
		}
		top := max(b.k0[s]*cpuz.StripRows-cpuz.BlurRadius, 0)
		end := min(b.k1[s]*cpuz.StripRows, l.g.gh[s])
		bot := min(end+cpuz.BlurRadius, l.g.gh[s])
		if top < c0 || bot > c0+b.rows[s] {
			return fmt.Errorf("webgpu: zensim strip %+v: scale %d needs rows [%d, %d), the crop has [%d, %d)",
				b.Strip, s, top, bot, c0, c0+b.rows[s])
		}
	}
	return nil
}

func round4(n int64) int64 { return (n + 3) &^ 3 }

// scaleBytes is one scale's three planes of a crop of rows rows, in
// whole 16-byte blocks (hblur reads them as vec4).
func (l *layout) scaleBytes(s, rows int) int64 {
	return (12*int64(l.g.pw[s])*int64(max(rows>>s, 1)) + 15) &^ 15
}

// pyramidBytes is one image's three planes at every scale of a crop of
// rows rows (one buffer per scale).
func (l *layout) pyramidBytes(rows int) int64 {
	var n int64
	for s := 0; s < l.g.S; s++ {
		n += l.scaleBytes(s, rows)
	}
	return n
}

// hbBytes is one of the horizontal blur's three outputs (one per
// channel): a vec4 per pixel of scale 0 of the tallest crop.
func (l *layout) hbBytes() int64 { return 16 * int64(l.g.pw[0]) * int64(l.maxRows) }

// uniformsPerBand: xyb of each side, a down per scale after the first,
// and one per scale (hblur, vstats).
func (l *layout) uniformsPerBand() int { return 2 + (l.g.S - 1) + l.g.S }

// memory is exactly what a reference of this layout takes on the device
// (each buffer rounded to 4 bytes as the pool does), with a raw upload of
// raw bytes and, from webgpu.StagingMin on, its staging buffer (strips) or
// the pipelined scores' slots (a resident whole image: pipeSlots, made as
// concurrent scores need them, so this is the most it holds); keep: the
// reference pyramid of every band stays resident, else one crop's is
// recomputed per score.
func (l *layout) memory(raw int64, keep bool) int64 {
	var t int64
	if keep {
		for _, b := range l.bands {
			t += l.pyramidBytes(b.Rows())
		}
	} else {
		t += l.pyramidBytes(l.maxRows)
	}
	t += l.pyramidBytes(l.maxRows)                    // distorted
	t += 3 * round4(l.hbBytes())                      // hblur outputs
	t += round4(int64(max(l.g.slots, 1)) * nq * 4)    // partials
	t += 8*3*4 + 4*(nq*3*4+1) + 4                     // meta, res, flag
	t += int64(len(l.bands)*l.uniformsPerBand()) * 64 // uniforms
	t += round4(raw)                                  // raw upload
	if raw >= webgpu.StagingMin {
		if len(l.bands) == 1 && keep {
			t += pipeSlots * round4(raw) // the ring's slots (pipe.go)
		} else {
			t += round4(raw) // the upload's staging buffer
		}
	}
	return t
}

// fits reports whether every binding and dispatch of the layout stays
// within the device's limits for an upload of raw bytes.
func (l *layout) fits(lim uint64, raw int64) bool {
	if uint64(l.hbBytes()) > lim || uint64(12*int64(l.g.pw[0])*int64(l.maxRows)) > lim || uint64(raw) > lim ||
		uint64(int64(max(l.g.slots, 1))*nq*4) > lim {
		return false
	}
	if webgpu.Groups(l.g.pw[0], wgXY) > maxGroups || webgpu.Groups(l.maxRows, wgXY) > maxGroups ||
		webgpu.Groups(l.maxRows, wgRow) > maxGroups || l.g.gx[0] > maxGroups {
		return false
	}
	for _, b := range l.bands {
		for s := 0; s < l.g.S; s++ {
			if b.k1[s]-b.k0[s] > maxGroups {
				return false
			}
		}
	}
	return true
}

// worstRaw is the upload of a w-wide RGBA16 crop of rows rows, the largest
// format (the buffer is reserved for it).
func worstRaw(w, rows int) int64 { return int64(w) * int64(rows) * 8 }

// bindLimit is the smaller of the binding and buffer size limits.
func bindLimit(b *webgpu.Backend) uint64 {
	lim := b.Device().Limits()
	return min(lim.MaxStorageBufferBindingSize, lim.MaxBufferSize)
}

// plan lays out a reference: the whole image (band = h), or strips of
// band interior rows (band > 0), or (band = 0) the tallest strips whose
// recomputed-reference memory fits avail (-1: unknown) and the limits;
// keep is then whether the resident reference of every band fits too.
// forceKeep (tests) overrides keep.
func plan(b *webgpu.Backend, w, h, band int, avail int64) (l *layout, keep bool, total int64, err error) {
	lim := bindLimit(b)
	try := func(bandRows int, keep bool) (*layout, int64, bool) {
		strips, err := webgpu.PlanStrips(h, bandRows, stripSpec)
		if err != nil {
			return nil, 0, false
		}
		l, err := newLayout(w, h, strips)
		if err != nil {
			return nil, 0, false
		}
		raw := worstRaw(w, l.maxRows)
		return l, l.memory(raw, keep), l.fits(lim, raw)
	}
	if band >= h {
		l, t, ok := try(h, true)
		if !ok {
			return l, true, t, fmt.Errorf("%w: zensim on WebGPU: a %d×%d image exceeds the device's buffer or dispatch limits (use strips)", zenmetrics.ErrUnsupported, w, h)
		}
		return l, true, t, nil
	}
	if band <= 0 {
		// Largest band whose recomputed layout fits, halving from h.
		band = -1
		for bb := h; bb >= stripSpec.Align; bb /= 2 {
			if _, t, ok := try(bb, false); ok && (avail < 0 || t <= avail) {
				band = bb
				break
			}
		}
		if band < 0 {
			return nil, false, 0, fmt.Errorf("%w: zensim strips: no strip of a %d×%d image fits", zenmetrics.ErrOutOfMemory, w, h)
		}
	}
	l, t, ok := try(band, false)
	if l == nil || !ok {
		return nil, false, t, fmt.Errorf("%w: zensim strips of %d rows of a %d×%d image exceed the device's limits", zenmetrics.ErrUnsupported, band, w, h)
	}
	kt := l.memory(worstRaw(w, l.maxRows), true)
	keep = avail < 0 || kt <= avail
	if forceKeep != nil {
		keep = *forceKeep
	}
	if keep {
		t = kt
	}
	return l, keep, t, nil
}
