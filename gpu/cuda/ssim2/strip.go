package ssim2

import (
	"fmt"
	"math"
	"strings"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// SSIMULACRA2 in strips (zenmetrics.ModeStrip).
//
// libjxl's blur is a recursive Gaussian whose vertical recursion never
// forgets (gpu/webgpu/ssim2/halo.go measures its undamped ring): a crop
// that restarted it a few rows above its interior would score visibly
// away from the whole image. So, as on WebGPU, the vertical recursion is
// not restarted: each strip resumes at its first interior row with the
// state the previous strip left (vblur_*_strip in ssim2.cu), which is
// exactly the whole image's state there. A halo is still needed for the
// recursion's inputs: resuming at row n reads row n − N − 1, and the last
// interior row reads row n + N − 1, so N + 1 = 6 rows of each scale above
// the interior and N − 1 below must be the whole image's. Scale s is the
// 2×2 box mean of scale s − 1, so with crop starts on multiples of 2^5 =
// 32 every row of every scale is the same block of image rows as in the
// whole image, except a partial last row where a crop ends short of the
// image, which lies below the rows read; the coarsest scale dominates:
// 6·32 = 192 rows. Horizontal blurs, colour conversion and downsampling
// are per row or per pixel.
//
// Beyond WebGPU: the vertical pass walks the whole image's tile grid and
// carries each thread's partial sums from strip to strip too, so every
// term is added by the same thread in the same order as in the whole
// image, and the per-column sums after the last strip are the whole
// image's bit for bit; the final reduction is then the whole image's
// too. Strips and the whole image give the same score, exactly.

const (
	stripAlign = 1 << (numScales - 1) // 32: the coarsest scale's rows line up
	iirN       = 5                    // libjxl's N for sigma 1.5 (RADIUS in ssim2.cu)
	warps      = tileThreads / 32     // the vertical pass's warps (TB/32)
)

// stripSpec: N + 1 coarse rows of halo (192), crops of at least 8 coarse
// rows so a crop keeps every scale.
var stripSpec = strips.Spec{Halo: (iirN + 1) * stripAlign, Align: stripAlign, MinCrop: minSide * stripAlign}

// forceKeep, when not nil, makes a forced strip height keep or recompute
// the reference pyramids (tests).
var forceKeep *bool

// cropScales are n scales of a w×rows plane (halved up, as plan does,
// however small the crop): a crop has the image's scales.
func cropScales(w, rows, n int) []scale {
	out := []scale{{w, rows}}
	for len(out) < n {
		l := out[len(out)-1]
		out = append(out, scale{(l.w + 1) / 2, (l.h + 1) / 2})
	}
	return out
}

// band is one strip: its crop's scales, and per scale the crop-local rows
// [lo, hi) it owns and the image row of its crop row 0.
type band struct {
	strips.Strip
	sc         []scale
	lo, hi, r0 [numScales]int
}

// stripPlan is the geometry of a strip reference.
type stripPlan struct {
	w, h  int
	full  []scale // the image's scales
	bands []band
	rows  int  // the tallest crop: slot planes are sized to it
	pyrs  int  // reference pyramids (2: transparency on two backgrounds)
	keep  bool // every band's reference pyramids stay resident
}

func newStripPlan(w, h, pyrs int, ss []strips.Strip, keep bool) *stripPlan {
	p := &stripPlan{w: w, h: h, full: plan(w, h), pyrs: pyrs, keep: keep}
	for _, st := range ss {
		b := band{Strip: st, sc: cropScales(w, st.Rows(), len(p.full))}
		for k := range b.sc {
			b.lo[k], b.hi[k] = st.WindowAt(k, h)
			b.r0[k] = st.C0 >> k
		}
		p.rows = max(p.rows, st.Rows())
		p.bands = append(p.bands, b)
	}
	return p
}

// pyrBytes is one pyramid of a crop's scales: img, mu, vr (3 channels).
func pyrBytes(sc []scale) int64 {
	var b int64
	for _, s := range sc {
		b += 3 * cuda.AllocSize(4*3*s.n())
	}
	return b
}

// stateSizes are one slot's per-scale buffers of the strip recursion: the
// reference's state (2 signals), the score's (3) and its per-thread sums.
func (p *stripPlan) stateSizes() []int64 {
	var out []int64
	for _, s := range p.full {
		cols := 3 * int64(s.w)
		out = append(out, 4*cols*2*6, 4*cols*3*6, 8*cols*warps*6)
	}
	return out
}

// slotSizes is every buffer of a strip slot for uploads of raw bytes, in
// fillStripSlot's order.
func (p *stripPlan) slotSizes(raw int64) []int64 {
	sc := cropScales(p.w, p.rows, len(p.full))
	n := sc[0].n()
	var n1, n2 int64 = 1, 1
	if len(sc) > 1 {
		n1 = sc[1].n()
	}
	if len(sc) > 2 {
		n2 = sc[2].n()
	}
	sumStep := 3 * int64(p.w) * numTerms
	out := []int64{raw, 4 * 3 * n1, 4 * 3 * n2, 4 * 3 * n, 4 * 9 * n, 8 * numScales * sumStep, 8 * 2 * numScales * 3 * numTerms}
	out = append(out, p.stateSizes()...)
	if !p.keep {
		for v := 0; v < p.pyrs; v++ {
			for _, s := range sc {
				out = append(out, 4*3*s.n(), 4*3*s.n(), 4*3*s.n())
			}
		}
	}
	return out
}

// memory is the device bytes of a strip reference and its first slot.
func (p *stripPlan) memory(raw int64) int64 {
	b := cuda.AllocSizes(p.slotSizes(raw))
	if p.keep {
		for _, bd := range p.bands {
			b += int64(p.pyrs) * pyrBytes(bd.sc)
		}
	}
	return b
}

// indexable: the kernels index a crop's planes in int (three channels of
// the tallest crop; hb holds nine).
func (p *stripPlan) indexable() bool {
	return 9*int64(p.w)*int64(p.rows) <= math.MaxInt32
}

// planStrips picks the plan of a w×h image (pyrs reference pyramids,
// crops uploading rawOf(rows) bytes) within budget (< 0: anything goes),
// by the shared policy (strips.Choose). force > 0 forces the band rows.
func planStrips(w, h, pyrs int, rawOf func(rows int) int64, budget int64, force int) (*stripPlan, error) {
	fitsIn := func(ss []strips.Strip, keep bool) bool {
		p := newStripPlan(w, h, pyrs, ss, keep)
		return p.indexable() && (budget < 0 || p.memory(rawOf(p.rows)) <= budget)
	}
	ss, keep, err := cuda.ChooseStrips("SSIMULACRA2", w, h, stripSpec, force, budget, forceKeep, fitsIn)
	if err != nil {
		return nil, err
	}
	p := newStripPlan(w, h, pyrs, ss, keep)
	if !p.indexable() {
		return nil, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("SSIMULACRA2 strips of %d rows of a %dx%d image exceed the kernels' indexing", p.rows, w, h)}
	}
	return p, nil
}

// estimateStrips is the memory of the plan of a w×h image in the worst
// case (transparency: two pyramids; RGBA16 uploads) within budget.
func estimateStrips(w, h int, budget int64) (int64, bool) {
	rawOf := func(rows int) int64 { return 8 * int64(w) * int64(rows) }
	p, err := planStrips(w, h, 2, rawOf, budget, 0)
	if err != nil {
		return 0, false
	}
	return p.memory(rawOf(p.rows)), true
}

// kern is one kernel with its signature (launch.Kernel: checked at every
// launch, and against ssim2.cu by the strip tests).
type kern = launch.Kernel

// kernels are the kernels the whole image and the strips launch, through
// launch.Launcher so that the tests record and replay them (cudaemu).
// vRef and vTerms are the strip passes; the whole image's reference uses
// vRefWhole and its scores the every-scale passes hDistAll and vTermsAll.
type kernels struct {
	first, xyb, down, hRef, hDist, vRef, vTerms, reduce kern
	vRefWhole, hDistAll, vTermsAll                      kern
}

func (k *kernels) list() []*kern {
	return []*kern{&k.first, &k.xyb, &k.down, &k.hRef, &k.hDist, &k.vRef, &k.vTerms, &k.reduce, &k.vRefWhole, &k.hDistAll, &k.vTermsAll}
}

func newKernels() *kernels {
	return &kernels{
		first:  kern{Name: "first_scale", Sig: "piiiiiifppiiii"},
		xyb:    kern{Name: "xyb_planes", Sig: "ppi"},
		down:   kern{Name: "downsample", Sig: "piipii"},
		hRef:   kern{Name: "hblur_ref", Sig: "ppiiii"},
		hDist:  kern{Name: "hblur_dist", Sig: "pppiiii"},
		vRef:   kern{Name: "vblur_ref_strip", Sig: "ppppiiiiii"},
		vTerms: kern{Name: "vblur_terms_strip", Sig: "ppppppppiiiiii"},
		reduce: kern{Name: "reduce_sums", Sig: "ppii"},

		vRefWhole: kern{Name: "vblur_ref", Sig: "pppii"},
		hDistAll:  kern{Name: "hblur_dist_all", Sig: "ppppppppiiii"},
		vTermsAll: kern{Name: "vblur_terms_all", Sig: "pppiiii" + strings.Repeat("p", 3*numScales)},
	}
}

// module loads them, once per device.
var module = launch.Module[kernels]{Name: "ssim2", Source: source, Table: newKernels, List: (*kernels).list}

// pyramid is one crop's reference planes per scale.
type pyramid []refScale

// stripSlot is one strip scorer's device scratch: the whole-image slot's
// buffers for the tallest crop (sums and tot for the whole image), the
// recursion's state per scale and, recomputed, the crop's pyramids.
type stripSlot struct {
	slot
	refSt, distSt, acc []*cuda.Buffer // per scale
	pyrs               []pyramid      // recomputed: per reference pyramid
	all                []*cuda.Buffer
}

// fillStripSlot allocates a strip slot's buffers with alloc, in
// slotSizes' order (all lists them but raw, which the pool may replace).
func fillStripSlot(s *stripSlot, p *stripPlan, raw int64, alloc func(int64) *cuda.Buffer) {
	sizes := p.slotSizes(raw)
	s.raw = alloc(sizes[0])
	sizes = sizes[1:]
	next := func() *cuda.Buffer {
		b := alloc(sizes[0])
		sizes = sizes[1:]
		s.all = append(s.all, b)
		return b
	}
	s.lin[0], s.lin[1], s.img2, s.hb, s.sums, s.tot = next(), next(), next(), next(), next(), next()
	s.sumStep = 3 * int64(p.w) * numTerms
	for range p.full {
		s.refSt = append(s.refSt, next())
		s.distSt = append(s.distSt, next())
		s.acc = append(s.acc, next())
	}
	if !p.keep {
		for v := 0; v < p.pyrs; v++ {
			var py pyramid
			for range p.full {
				py = append(py, refScale{img: next(), mu: next(), vr: next()})
			}
			s.pyrs = append(s.pyrs, py)
		}
	}
}

// newPyramid allocates one crop's reference planes with alloc.
func newPyramid(sc []scale, alloc func(int64) *cuda.Buffer) pyramid {
	var py pyramid
	for _, s := range sc {
		n := 4 * 3 * s.n()
		py = append(py, refScale{img: alloc(n), mu: alloc(n), vr: alloc(n)})
	}
	return py
}

// sideOf is how an image is decoded for one view: its format, and
// whether it is composited on the view's background.
type sideOf struct {
	stride, ch, bps int
	blend           bool
	bg              float32
}

func side(im *zenmetrics.Image, blend bool, bg float32) sideOf {
	return sideOf{stride: im.Stride, ch: im.Format.Channels(), bps: im.Format.BytesPerSample(), blend: blend, bg: bg}
}

// queueXYB queues the crop's positive XYB of scale k into xyb from the
// raw crop in s.raw (scale 0) or the previous scale's linear planes (cur
// is the lin buffer holding scale k−1 for k ≥ 2); it returns the lin
// buffer now holding scale k.
func queueXYB(q launch.Launcher, k *kernels, sc []scale, kk, cur int, sd sideOf, s *slot, xyb *cuda.Buffer) (int, error) {
	if kk == 0 {
		bl := 0
		if sd.blend {
			bl = 1
		}
		s1 := sc[1]
		g, b := groups2(s1.w, s1.h)
		return cur, q.Launch(&k.first, g, b, s.raw, sc[0].w, sc[0].h, sd.stride, sd.ch, sd.bps, bl, sd.bg, xyb, s.lin[0], s1.w, s1.h, 0, s1.h)
	}
	if kk >= 2 {
		pv, c := sc[kk-1], sc[kk]
		g, b := groups2(c.w, c.h)
		if err := q.Launch(&k.down, g, b, s.lin[cur], pv.w, pv.h, s.lin[1-cur], c.w, c.h); err != nil {
			return cur, err
		}
		cur = 1 - cur
	}
	n := int(sc[kk].n())
	return cur, q.Launch(&k.xyb, cuda.Dim3{X: cuda.Groups(n, 256), Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, s.lin[cur], xyb, n)
}

// queueBandRef queues band i's reference pyramid (one view) into py from
// the reference crop already in s.raw, the vertical recursion resuming
// from the previous band's state.
func queueBandRef(q launch.Launcher, k *kernels, b *band, i int, sd sideOf, s *stripSlot, py pyramid) error {
	cur := 0
	for kk, c := range b.sc {
		var err error
		if cur, err = queueXYB(q, k, b.sc, kk, cur, sd, &s.slot, py[kk].img); err != nil {
			return err
		}
		if err := q.Launch(&k.hRef, tiles(c.h), tb, py[kk].img, s.hb, c.w, c.h, 0, c.h); err != nil {
			return err
		}
		if err := q.Launch(&k.vRef, tiles(c.w), tb, s.hb, py[kk].mu, py[kk].vr, s.refSt[kk], c.w, c.h, b.r0[kk], b.lo[kk], b.hi[kk], b2i(i == 0)); err != nil {
			return err
		}
	}
	return nil
}

// queueBandDist queues band i of a score against py from the distorted
// crop already in s.raw: per scale its XYB, horizontal pass and the
// vertical pass's terms over the band's rows, resumed from the previous
// band.
func queueBandDist(q launch.Launcher, k *kernels, b *band, i int, sd sideOf, s *stripSlot, py pyramid) error {
	cur := 0
	for kk, c := range b.sc {
		var err error
		if cur, err = queueXYB(q, k, b.sc, kk, cur, sd, &s.slot, s.img2); err != nil {
			return err
		}
		if err := q.Launch(&k.hDist, tiles(c.h), tb, py[kk].img, s.img2, s.hb, c.w, c.h, 0, c.h); err != nil {
			return err
		}
		sums := &cuda.Buffer{Ptr: s.sums.Ptr + cuda.DevPtr(8*int64(kk)*s.sumStep), Size: 8 * s.sumStep}
		if err := q.Launch(&k.vTerms, tiles(c.w), tb, s.hb, py[kk].img, py[kk].mu, py[kk].vr, s.img2, sums,
			s.distSt[kk], s.acc[kk], c.w, c.h, b.r0[kk], b.lo[kk], b.hi[kk], b2i(i == 0)); err != nil {
			return err
		}
	}
	return nil
}

// queueReduce adds the per-column sums of every scale into run j's
// results (reduce_sums, as the whole image).
func queueReduce(q launch.Launcher, k *kernels, p *stripPlan, s *stripSlot, j int) error {
	return queueSums(q, k, p.w, len(p.full), &s.slot, j)
}

// queueSums adds the per-column sums (s.sums) of nk scales of an image w
// wide into s.tot's run j: reduce_sums, one block per term, channel and
// scale, in a fixed order.
func queueSums(q launch.Launcher, k *kernels, w, nk int, s *slot, j int) error {
	tot := &cuda.Buffer{Ptr: s.tot.Ptr + cuda.DevPtr(int64(j)*numScales*3*numTerms*8), Size: numScales * 3 * numTerms * 8}
	return q.Launch(&k.reduce, cuda.Dim3{X: numTerms, Y: 3, Z: uint32(nk)}, cuda.Dim3{X: 256, Y: 1, Z: 1}, s.sums, tot, w, int(s.sumStep))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
