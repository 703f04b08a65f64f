package dssim

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Geometry and memory model. A full image is one strip whose crop is the
// image; ModeStrip cuts it into bands (webgpu.PlanStrips) with a halo wide
// enough that every owned SSIM-map value is the full image's, bit for bit:
//
//   - Scale s of a crop starting at row c0 (a multiple of 16) is rows
//     c0/2^s.. of the full image's scale s, because the 2×2 block means
//     line up; the crop's last rows at each scale are the full image's too
//     (floor division at every step drops the same rows), so the pyramid of
//     a crop is exactly the full pyramid's rows.
//   - Only the blurs read across rows, and they clamp at the crop's edge
//     where the full image has more rows. The chain at one scale is the
//     chroma blur then the mu / squared / cross blurs: four 3×3 passes, so
//     a clamp moves at most the 4 rows nearest a crop edge at that scale.
//     With 2^4 × 4 = 64 halo rows (scale 4 is /16), every scale keeps at
//     least 4 rows of context on each side of the owned window.
//
// So strip and full maps are equal and the scores differ only by the
// order of the f32 partial sums (measured in strip_test.go).

const (
	stripAlign = 1 << (maxScales - 1) // 16
	stripHalo  = 4 * stripAlign       // 64
	stripMin   = 2 * stripAlign       // smallest crop worth a strip

	bytesVec4 = 16 // one vec4<f32> per pixel
	slotPer   = 256 * 16
	slotBytes = 16
)

var stripSpec = webgpu.StripSpec{Halo: stripHalo, Align: stripAlign, MinCrop: stripMin}

// numScales is how many scales dssim-core compares for a w×h image.
func numScales(w, h int) int {
	n := 1
	for n < maxScales && w >= minDownsample && h >= minDownsample {
		w, h = w/2, h/2
		n++
	}
	return n
}

// level is one scale of one strip: the crop's plane at that scale (w ×
// rows) and its owned rows [own0, own1), whose map values the strip
// contributes, in slots [slot, slot+slots).
type level struct {
	w, rows    int
	own0, own1 int
	slot       int
	slots      int
}

func (l level) owned() int { return (l.own1 - l.own0) * l.w }

// band is one strip.
type band struct {
	webgpu.Strip
	lv [maxScales]level
}

// plan is the geometry of one reference.
type plan struct {
	w, h   int
	scales int
	bands  []band
	// slotBase[s], slotCount[s]: scale s's slots over all strips.
	slotBase, slotCount [maxScales]int
	slots               int
	// maxRows is the tallest crop; planes are sized to it.
	maxRows int
}

// newPlan lays out the strips (nil: one strip, the whole image).
func newPlan(w, h int, strips []webgpu.Strip) *plan {
	p := &plan{w: w, h: h, scales: numScales(w, h)}
	if strips == nil {
		strips = []webgpu.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}
	}
	for _, st := range strips {
		b := band{Strip: st}
		rows := st.C1 - st.C0
		sw := w
		for s := 0; s < p.scales; s++ {
			if s > 0 {
				rows, sw = rows/2, sw/2
			}
			c0 := st.C0 >> s
			own0 := st.Y0>>s - c0
			var own1 int
			if st.Y1 == h {
				own1 = rows // the image's last rows at this scale
			} else {
				own1 = st.Y1>>s - c0
			}
			b.lv[s] = level{w: sw, rows: rows, own0: own0, own1: max(own0, own1)}
		}
		p.maxRows = max(p.maxRows, st.C1-st.C0)
		p.bands = append(p.bands, b)
	}
	for s := 0; s < p.scales; s++ {
		p.slotBase[s] = p.slots
		for i := range p.bands {
			l := &p.bands[i].lv[s]
			l.slot = p.slots
			l.slots = (l.owned() + slotPer - 1) / slotPer
			p.slots += l.slots
		}
		p.slotCount[s] = p.slots - p.slotBase[s]
	}
	return p
}

// pixels is the w × rows of scale s of a crop of rows rows (rows and
// width halved s times).
func scalePixels(w, rows, s int) int64 {
	return int64(w>>s) * int64(rows>>s)
}

// pyramidPixels sums scalePixels over the scales.
func pyramidPixels(w, rows, scales int) int64 {
	var n int64
	r, sw := rows, w
	for s := 0; s < scales; s++ {
		if s > 0 {
			r, sw = r/2, sw/2
		}
		n += int64(sw) * int64(r)
	}
	return n
}

// bytes is the model of what a reference of this plan holds on the
// device: exactly the buffers prepare and score take (round4 of each),
// with raw the upload size of the largest crop (8/16-bit, stride
// included) and keep whether every strip's reference planes stay resident.
type memory struct {
	refPlanes int64 // reference img + mu planes (all strips when kept, one strip's otherwise)
	scratch   int64 // lin ×2, lab, the distorted img + mu
	maps      int64 // every strip's owned SSIM map rows, all scales
	raw       int64 // raw upload + staging
	small     int64 // params, slots, scales, results
}

func (m memory) total() int64 { return m.refPlanes + m.scratch + m.maps + m.raw + m.small }

func round4(n int64) int64 { return (n + 3) &^ 3 }

// paramsPerBand is the uniform buffers a strip takes: per side (reference,
// distorted) one for the unpack, one per scale and one per down pass.
func paramsPerBand(scales int) int { return 2 * (2 * scales) }

func (p *plan) memory(rawBytes int64, keep bool) memory {
	var m memory
	rows := p.maxRows
	w := p.w
	// lin: scale 0 and scale 1 sized ping-pong (scales 2, 4 reuse the
	// first, 3 the second).
	m.scratch = round4(bytesVec4*scalePixels(w, rows, 0)) + round4(bytesVec4*max(1, scalePixels(w, rows, 1)))
	m.scratch += round4(bytesVec4 * scalePixels(w, rows, 0)) // lab
	// the distorted side's img and mu per scale
	for s := 0; s < p.scales; s++ {
		m.scratch += 2 * round4(bytesVec4*max(1, scalePixels(w, rows, s)))
	}
	if keep {
		for _, b := range p.bands {
			for s := 0; s < p.scales; s++ {
				m.refPlanes += 2 * round4(bytesVec4*max(1, int64(b.lv[s].w)*int64(b.lv[s].rows)))
			}
		}
	} else {
		for s := 0; s < p.scales; s++ {
			m.refPlanes += 2 * round4(bytesVec4*max(1, scalePixels(w, rows, s)))
		}
	}
	for _, b := range p.bands {
		for s := 0; s < p.scales; s++ {
			m.maps += round4(4 * max(1, int64(b.lv[s].owned())))
		}
	}
	m.raw = round4(rawBytes)
	if rawBytes >= webgpu.StagingMin {
		// Strips: the upload's staging buffer; a whole image: the two
		// slots of pipelined scores (pipe.go).
		if len(p.bands) == 1 {
			m.raw += pipeSlots * round4(rawBytes)
		} else {
			m.raw *= 2
		}
	}
	m.small = int64(len(p.bands)*paramsPerBand(p.scales))*64 + round4(int64(max(1, p.slots))*slotBytes) +
		int64(maxScales)*16 + int64(maxScales)*32
	return m
}

// maxPlane is the largest binding of the plan: a vec4 plane at scale 0.
func (p *plan) maxPlane() int64 { return bytesVec4 * int64(p.w) * int64(p.maxRows) }

// maxGroups is WebGPU's default maxComputeWorkgroupsPerDimension.
const maxGroups = 65535

// dispatchable reports whether every dispatch of the plan stays within
// maxGroups workgroups per dimension: columns and rows of the per-pixel
// kernels, slots of the reductions.
func (p *plan) dispatchable() bool {
	if (p.w+wgX-1)/wgX > maxGroups || (p.maxRows+wgY-1)/wgY > maxGroups {
		return false
	}
	for _, b := range p.bands {
		for s := 0; s < p.scales; s++ {
			if b.lv[s].slots > maxGroups {
				return false
			}
		}
	}
	return true
}

// cropRaw is the upload size of the tallest crop of an image with this
// stride and format (RawBytes of a crop).
func cropRaw(w, rows, stride int, f zenmetrics.PixelFormat) int64 {
	return int64(stride)*int64(rows-1) + int64(w*f.BytesPerPixel())
}

// stripPlan picks the band height for a w×h image (stride, format: the
// reference's; the distorted image is uploaded into the same buffers,
// grown if it needs more) from the memory budget (bytes, -1 unknown) and
// the binding limit, preferring resident reference planes (scores then
// compute only the distorted side) and falling back to recomputing the
// reference per strip. force > 0 forces the band's interior rows.
func stripPlan(w, h, stride int, f zenmetrics.PixelFormat, budget int64, maxBinding uint64, force int) (*plan, bool, error) {
	try := func(bandRows int, keep bool) (*plan, memory, error) {
		strips, err := webgpu.PlanStrips(h, bandRows, stripSpec)
		if err != nil {
			return nil, memory{}, err
		}
		p := newPlan(w, h, strips)
		return p, p.memory(cropRaw(w, p.maxRows, stride, f), keep), nil
	}
	fits := func(p *plan, m memory) bool {
		if uint64(p.maxPlane()) > maxBinding || uint64(cropRaw(w, p.maxRows, stride, f)) > maxBinding || !p.dispatchable() {
			return false
		}
		return budget < 0 || m.total() <= budget
	}
	if force > 0 {
		p, m, err := try(force, true)
		if err != nil {
			return nil, false, err
		}
		if uint64(p.maxPlane()) > maxBinding || !p.dispatchable() {
			return nil, false, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: p.maxPlane(), Free: budget,
				Detail: fmt.Sprintf("DSSIM strips of %d rows of a %dx%d image exceed the binding or dispatch limits", force, w, h)}
		}
		keep := budget < 0 || m.total() <= budget
		return p, keep, nil
	}
	// Largest band first, halving down to the alignment. At each band the
	// kept reference is preferred (a score then computes one image); the
	// recomputed one (two images per score, the reference planes of one
	// band only) is taken only while bands stay long (≥ 4 halos: the crops
	// then hold at most 1.5× the interior rows) or when nothing else fits:
	// strips.Choose, the policy gpu/cuda/dssim follows too.
	ss, keep, ok, err := strips.Choose(h, stripSpec, 0, func(ss []webgpu.Strip, keep bool) bool {
		p := newPlan(w, h, ss)
		return fits(p, p.memory(cropRaw(w, p.maxRows, stride, f), keep))
	})
	if err == nil && ok {
		return newPlan(w, h, ss), keep, nil
	}
	return nil, false, &zenmetrics.OutOfMemoryError{Backend: "webgpu", Requested: -1, Free: budget,
		Detail: fmt.Sprintf("no DSSIM strip of a %dx%d image fits (binding limit %d)", w, h, maxBinding)}
}
