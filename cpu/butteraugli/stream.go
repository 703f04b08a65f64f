package butteraugli

import (
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
)

// The streamed pair path: one reference against one distorted image
// without any whole plane (ComparePair).
//
// Prepare keeps 13 float32 planes of the reference per resolution and
// Score adds as many again for the distorted image: about 150 MB at 1 MP,
// every byte of it fresh memory the kernel faults in (a third of a
// one-shot comparison's time was page faults). But every stage of
// Butteraugli reads its input only a few rows away from the row it
// writes (the blurs up to kernLF.off = 16 rows, the erosion 3, the Malta
// lines 4), so the map can be produced top to bottom in bands, each stage
// of both images keeping only a window of rows: the rows its readers
// still need, up to the rows the next band needs from it.
//
// Each chain (one image at one resolution) runs the stages of the whole
// plane pipeline (prepareLevel, diffmapLevel) in their order, as the same
// row functions (linearRows, sep5H/sep5V, opsinRows, blurH/blurV,
// lfSplitRows, mfSplitRows, suppressRows, uhfSplitRows, maskPreRows,
// erosionRows, maskRows, maltaRows, addSupersampledRows): every value is
// computed from the same inputs by the same arithmetic, so the map is the
// whole-plane map bit for bit, whatever the band height
// (TestStreamedEqualsPrepared). For the final band of rows [y0, y1) each
// stage must have computed its output up to y1 plus what its downstream
// readers reach (chain.advance), and a window drops the rows below the
// lowest row any of its readers will still read (win.grow).

// win is a window of rows of one stage's output, rows [lo, hi) held. A
// ring (the default) keeps row y at row y mod its size, so nothing ever
// moves; a linear window (a blur's row pass, which blurV and sep5V read
// at a fixed stride across rows) keeps its rows in order from pl.y0 and
// moves the rows it keeps to the top of its buffer when the next ones
// would not fit after them (at every step, without slack rows).
//
// A window is sized by a dry run of the whole schedule (chain.plan): span
// is the most rows it is asked to hold at once; allocate then makes the
// buffer.
type win struct {
	pl     plane
	lo, hi int
	linear bool
	span   int
	dry    bool
}

// grow readies the window for the rows [hi, n) its stage writes next,
// dropping the rows below lo (no reader needs them any more).
func (w *win) grow(lo, n int) {
	lo = min(max(lo, w.lo), w.hi)
	w.lo = lo
	if w.dry {
		w.span = max(w.span, n-lo)
		w.hi = n
		return
	}
	st := w.pl.w
	if !w.linear {
		if n-lo > w.pl.ring {
			panic("butteraugli: streamed window too small")
		}
		w.hi = n
		return
	}
	if (n-w.pl.y0)*st > len(w.pl.p) {
		if (n-lo)*st > len(w.pl.p) {
			panic("butteraugli: streamed window too small")
		}
		copy(w.pl.p, w.pl.p[(lo-w.pl.y0)*st:(w.hi-w.pl.y0)*st])
		w.pl.y0 = lo
	}
	w.hi = n
}

// allocate ends the dry run: the buffer for span rows (and slack more for
// a linear window), and the window back at row 0.
func (w *win) allocate(slack int) {
	rows := w.span
	if w.linear {
		rows += slack
	} else {
		w.pl.ring = max(1, rows)
	}
	w.pl.p = make([]float32, max(1, rows)*w.pl.w)
	w.pl.y0, w.lo, w.hi, w.dry = 0, 0, 0, false
}

// chain is one image at one resolution, streamed.
type chain struct {
	w, h      int
	im        *zenmetrics.Image
	half      bool // rows are the 2×2 averages of im's (the half-resolution level)
	masks     bool // the reference: compute the mask weights
	intensity float32
	opsin     *cpusimd.BAOpsinConsts
	dry       bool // planning: windows and counters only
	// sub is the half-resolution chain of the same image (of a full
	// chain), src the full chain it averages the linear rows of (of a half
	// chain).
	sub, src *chain

	// Stage outputs. xyb[0] and xyb[1] go through the same rows as the
	// whole-plane path's planes do: XYB, the residual of the LF blur, the
	// HF band, the suppressed HF band, the UHF band. xyb[2] is XYB's B,
	// then its residual. sep, lfA, hfA, uhA and mkA are the blurs' row
	// passes.
	rgb, sep, xyb, lfA, lf, hfA, mf [3]win
	uhA, hf                         [2]win
	mkA, act, mac, mdc              win
	// Temporaries of one step: the opsin blur, the masking activity
	// before its blur, the eroded activity.
	blurred     [3]win
	pre, eroded win

	lfB, hfB, uhB, mkB []rowBorder

	// Rows computed so far by each stage (the last: rows of the map).
	nRGB, nSep, nXYB, nLF, nMF, nUHF, nAct, nMask, nFinal int
}

func newChain(im *zenmetrics.Image, half, masks bool, intensity float32) *chain {
	w, h := im.Width, im.Height
	if half {
		w, h = (w+1)/2, (h+1)/2
	}
	c := &chain{w: w, h: h, im: im, half: half, masks: masks, intensity: intensity,
		lfB: kernLF.rowBorders(w), hfB: kernHF.rowBorders(w), uhB: kernUHF.rowBorders(w), mkB: kernMask.rowBorders(w)}
	if useFast {
		c.opsin = opsinConsts(intensity)
	}
	st := interStride(w)
	ring := win{pl: plane{w: w, h: h}}
	for i := 0; i < 3; i++ {
		c.rgb[i], c.xyb[i], c.lf[i], c.mf[i], c.blurred[i] = ring, ring, ring, ring, ring
		c.sep[i] = win{pl: plane{w: w, h: h}, linear: true}
		c.lfA[i] = win{pl: plane{w: st, h: h}, linear: true}
		c.hfA[i] = c.lfA[i]
	}
	for i := 0; i < 2; i++ {
		c.uhA[i], c.hf[i] = c.lfA[0], ring
	}
	c.mkA = c.lfA[0]
	c.act, c.mac, c.mdc, c.pre, c.eroded = ring, ring, ring, ring, ring
	c.setDry(true)
	return c
}

// wins is every window of the chain.
func (c *chain) wins() []*win {
	ws := []*win{&c.mkA, &c.act, &c.mac, &c.mdc, &c.pre, &c.eroded}
	for i := 0; i < 3; i++ {
		ws = append(ws, &c.rgb[i], &c.sep[i], &c.xyb[i], &c.lfA[i], &c.lf[i], &c.hfA[i], &c.mf[i], &c.blurred[i])
	}
	for i := 0; i < 2; i++ {
		ws = append(ws, &c.uhA[i], &c.hf[i])
	}
	return ws
}

func (c *chain) setDry(dry bool) {
	c.dry = dry
	for _, w := range c.wins() {
		w.dry = dry
	}
}

// allocate ends the chain's dry run: its windows as large as they were
// asked to be (linear ones with slack rows more), the stages back at row
// 0.
func (c *chain) allocate(slack int) {
	for _, w := range c.wins() {
		if w.span > 0 {
			w.allocate(slack)
		}
		w.dry = false
	}
	c.dry = false
	c.nRGB, c.nSep, c.nXYB, c.nLF, c.nMF, c.nUHF, c.nAct, c.nMask, c.nFinal = 0, 0, 0, 0, 0, 0, 0, 0, 0
}

// aheadRGB is how many rows beyond the map rows the first stage runs.
var aheadRGB = erodeReach + kernMask.off + kernUHF.off + kernHF.off + kernLF.off + kernOpsin.off

// targets are the rows each stage must have computed for the map rows
// below y1: y1 plus the rows its readers reach below it (not clipped to
// the image).
func (c *chain) targets(y1 int) (tRGB, tXYB, tLF, tMF, tUHF, tAct int) {
	tAct = y1
	if c.masks {
		tAct += erodeReach
	}
	tUHF = max(tAct+kernMask.off, y1+maltaReach)
	tMF = tUHF + kernUHF.off
	tLF = tMF + kernHF.off
	tXYB = tLF + kernLF.off
	tRGB = tXYB + kernOpsin.off
	return
}

// advance computes every stage far enough for the map rows below y1. A
// full chain's linear rows also run as far as its half-resolution chain
// averages them for its own map rows of the same step, below (y1+1)/2.
func (c *chain) advance(wk workers, y1 int) {
	h := c.h
	tRGB, tXYB, tLF, tMF, tUHF, tAct := c.targets(y1)
	tSep := tRGB
	if c.sub != nil {
		sRGB, _, _, _, _, _ := c.sub.targets((y1 + 1) >> 1)
		tRGB = max(tRGB, 2*min(c.sub.h, sRGB))
	}
	c.rgbTo(wk, min(h, tRGB))
	c.sepTo(wk, min(h, tSep))
	c.xybTo(wk, min(h, tXYB))
	c.lfTo(wk, min(h, tLF))
	c.mfTo(wk, min(h, tMF))
	c.uhfTo(wk, min(h, tUHF))
	c.actTo(wk, min(h, tAct))
	if c.masks {
		c.maskTo(wk, min(h, y1))
	}
}

// In each stage below the windows are readied first (for the rows
// [s, t) the stage writes, dropping what its readers are past: the
// doc comment of each stage names them), then, unless planning, the rows
// are computed.

// rgbTo computes the linear RGB rows below t (a half chain: the 2×2
// averages of its full chain's). Readers: sep5H and opsinRows (this row),
// and (a full chain) the averaging of the half chain (rows 2·y and 2·y+1
// of its row y).
func (c *chain) rgbTo(wk workers, t int) {
	s := c.nRGB
	if t <= s {
		return
	}
	H := c.im.Height
	lo := c.nXYB
	if c.sub != nil {
		lo = min(lo, 2*c.sub.nRGB)
	}
	for i := range c.rgb {
		c.rgb[i].grow(lo, t)
	}
	c.nRGB = t
	if c.dry {
		return
	}
	rgb := image3{c.rgb[0].pl, c.rgb[1].pl, c.rgb[2].pl}
	if !c.half {
		wk.span(s, t, func(y0, y1 int) { linearRows(c.im, rgb, nil, y0, y1) })
	} else {
		lin := image3{c.src.rgb[0].pl, c.src.rgb[1].pl, c.src.rgb[2].pl}
		wk.span(s, t, func(y0, y1 int) {
			for oy := y0; oy < y1; oy++ {
				for i := range rgb {
					var r1 []float32
					if 2*oy+1 < H {
						r1 = lin[i].row(2*oy + 1)
					}
					subsampleRow(lin[i].row(2*oy), r1, rgb[i].row(oy), H&1 != 0 && oy == c.h-1)
				}
			}
		})
	}
}

// sepTo computes the opsin row blur of the rows below t, read by sep5V 2
// rows away.
func (c *chain) sepTo(wk workers, t int) {
	s := c.nSep
	if t <= s {
		return
	}
	for i := range c.sep {
		c.sep[i].grow(c.nXYB-kernOpsin.off, t)
	}
	c.nSep = t
	if c.dry {
		return
	}
	for i := range c.sep {
		sep, in := c.sep[i].pl, c.rgb[i].pl
		wk.span(s, t, func(y0, y1 int) { sep5H(kernOpsin, in, sep, y0, y1) })
	}
}

// xybTo computes the XYB rows below t and their LF row blur. Readers of
// xyb[0] and xyb[1]: every later stage in its own rows, maltaRows 4 rows
// away; of xyb[2]: lfSplitRows and the HF row blur; of lfA: the LF column
// blur (kernLF.off rows away).
func (c *chain) xybTo(wk workers, t int) {
	s := c.nXYB
	if t <= s {
		return
	}
	for i := range c.blurred {
		c.blurred[i].grow(s, t)
		c.lfA[i].grow(c.nLF-kernLF.off, t)
	}
	c.xyb[0].grow(c.nFinal-maltaReach, t)
	c.xyb[1].grow(c.nFinal-maltaReach, t)
	c.xyb[2].grow(c.nLF, t)
	c.nXYB = t
	if c.dry {
		return
	}
	for i := range c.blurred {
		sep, bl := c.sep[i].pl, c.blurred[i].pl
		wk.span(s, t, func(y0, y1 int) { sep5V(kernOpsin, sep, bl, y0, y1) })
	}
	rgb := image3{c.rgb[0].pl, c.rgb[1].pl, c.rgb[2].pl}
	bl := image3{c.blurred[0].pl, c.blurred[1].pl, c.blurred[2].pl}
	xyb := image3{c.xyb[0].pl, c.xyb[1].pl, c.xyb[2].pl}
	wk.span(s, t, func(y0, y1 int) { opsinRows(rgb, bl, xyb, c.intensity, c.opsin, y0, y1) })
	for i := range c.lfA {
		a := c.lfA[i].pl
		wk.span(s, t, func(y0, y1 int) { blurH(kernLF, xyb[i], a, c.lfB, y0, y1) })
	}
}

// lfTo computes the LF band rows below t (read by maltaRows in its rows),
// splits them off XYB, and row-blurs the residual for the HF blur (read
// kernHF.off rows away).
func (c *chain) lfTo(wk workers, t int) {
	s := c.nLF
	if t <= s {
		return
	}
	for i := range c.lf {
		c.lf[i].grow(c.nFinal, t)
		c.hfA[i].grow(c.nMF-kernHF.off, t)
	}
	c.nLF = t
	if c.dry {
		return
	}
	for i := range c.lf {
		a, lf := c.lfA[i].pl, c.lf[i].pl
		wk.span(s, t, func(y0, y1 int) { blurV(kernLF, a, lf, y0, y1) })
	}
	xyb := image3{c.xyb[0].pl, c.xyb[1].pl, c.xyb[2].pl}
	lf := image3{c.lf[0].pl, c.lf[1].pl, c.lf[2].pl}
	wk.span(s, t, func(y0, y1 int) { lfSplitRows(xyb, lf, y0, y1) })
	for i := range c.hfA {
		a := c.hfA[i].pl
		wk.span(s, t, func(y0, y1 int) { blurH(kernHF, xyb[i], a, c.hfB, y0, y1) })
	}
}

// mfTo computes the MF band rows below t (read by maltaRows 4 rows away),
// splits the HF bands off the residual, suppresses X's, and row-blurs
// them for the UHF blur (read kernUHF.off rows away).
func (c *chain) mfTo(wk workers, t int) {
	s := c.nMF
	if t <= s {
		return
	}
	for i := range c.mf {
		c.mf[i].grow(c.nFinal-maltaReach, t)
	}
	for i := range c.uhA {
		c.uhA[i].grow(c.nUHF-kernUHF.off, t)
	}
	c.nMF = t
	if c.dry {
		return
	}
	for i := range c.mf {
		a, mf := c.hfA[i].pl, c.mf[i].pl
		wk.span(s, t, func(y0, y1 int) { blurV(kernHF, a, mf, y0, y1) })
	}
	hx, hy := c.xyb[0].pl, c.xyb[1].pl
	wk.span(s, t, func(y0, y1 int) {
		mfSplitRows(0, hx, c.mf[0].pl, y0, y1)
		mfSplitRows(1, hy, c.mf[1].pl, y0, y1)
		suppressRows(hx, hy, y0, y1)
	})
	for i := range c.uhA {
		a, hf := c.uhA[i].pl, c.xyb[i].pl
		wk.span(s, t, func(y0, y1 int) { blurH(kernUHF, hf, a, c.uhB, y0, y1) })
	}
}

// bands is the chain's bands as a psycho (of the rows its windows hold).
func (c *chain) bands() psycho {
	return psycho{
		uhf: [2]plane{c.xyb[0].pl, c.xyb[1].pl},
		hf:  [2]plane{c.hf[0].pl, c.hf[1].pl},
		mf:  image3{c.mf[0].pl, c.mf[1].pl, c.mf[2].pl},
		lf:  image3{c.lf[0].pl, c.lf[1].pl, c.lf[2].pl},
	}
}

// uhfTo computes the final HF and UHF band rows below t (read by maltaRows
// 4 rows away) and the masking activity before its blur, row-blurred (read
// kernMask.off rows away).
func (c *chain) uhfTo(wk workers, t int) {
	s := c.nUHF
	if t <= s {
		return
	}
	for i := range c.hf {
		c.hf[i].grow(c.nFinal-maltaReach, t)
	}
	c.pre.grow(s, t)
	c.mkA.grow(c.nAct-kernMask.off, t)
	c.nUHF = t
	if c.dry {
		return
	}
	for i := range c.hf {
		a, hf, uhf := c.uhA[i].pl, c.hf[i].pl, c.xyb[i].pl
		wk.span(s, t, func(y0, y1 int) {
			blurV(kernUHF, a, hf, y0, y1)
			uhfSplitRows(i, uhf, hf, y0, y1)
		})
	}
	ps := c.bands()
	pre, a := c.pre.pl, c.mkA.pl
	wk.span(s, t, func(y0, y1 int) {
		maskPreRows(&ps, pre, y0, y1)
		blurH(kernMask, pre, a, c.mkB, y0, y1)
	})
}

// actTo computes the masking activity rows below t, read by maltaRows in
// its rows and (reference) by the erosion erodeReach rows away.
func (c *chain) actTo(wk workers, t int) {
	s := c.nAct
	if t <= s {
		return
	}
	lo := c.nFinal
	if c.masks {
		lo = min(lo, c.nMask-erodeReach)
	}
	c.act.grow(lo, t)
	c.nAct = t
	if c.dry {
		return
	}
	a, act := c.mkA.pl, c.act.pl
	wk.span(s, t, func(y0, y1 int) { blurV(kernMask, a, act, y0, y1) })
}

// maskTo computes the reference's mask weight rows below t, read by
// maltaRows in its rows.
func (c *chain) maskTo(wk workers, t int) {
	s := c.nMask
	if t <= s {
		return
	}
	c.eroded.grow(s, t)
	c.mac.grow(c.nFinal, t)
	c.mdc.grow(c.nFinal, t)
	c.nMask = t
	if c.dry {
		return
	}
	act, er, mac, mdc := c.act.pl, c.eroded.pl, c.mac.pl, c.mdc.pl
	wk.span(s, t, func(y0, y1 int) {
		erosionRows(act, er, y0, y1)
		maskRows(er, mac, mdc, y0, y1)
	})
}

// pairLevel is the two chains of one resolution and the work memory of
// their final stage.
type pairLevel struct {
	r, d *chain
	mu   sync.Mutex
	mbs  []*maltaBuf // free maltaRows buffers, one per worker at most
}

// step advances both chains for the map rows [y0, y1) of the level and,
// unless planning, writes those rows into res.
func (lv *pairLevel) step(wk workers, res plane, y0, y1 int) {
	lv.r.advance(wk, y1)
	lv.d.advance(wk, y1)
	if y1 <= y0 {
		return
	}
	lv.r.nFinal, lv.d.nFinal = y1, y1
	if lv.r.dry {
		return
	}
	p0, p1 := lv.r.bands(), lv.d.bands()
	in := maltaIn{p0: &p0, p1: &p1, act0: lv.r.act.pl, act1: lv.d.act.pl, mac: lv.r.mac.pl, mdc: lv.r.mdc.pl}
	wk.span(y0, y1, func(a, b int) {
		lv.mu.Lock()
		var mb *maltaBuf
		if n := len(lv.mbs); n > 0 {
			mb, lv.mbs = lv.mbs[n-1], lv.mbs[:n-1]
		}
		lv.mu.Unlock()
		if mb == nil {
			mb = newMaltaBuf(res.w, maltaBand)
		}
		maltaRows(&in, res, a, b, mb)
		lv.mu.Lock()
		lv.mbs = append(lv.mbs, mb)
		lv.mu.Unlock()
	})
}

func (lv *pairLevel) allocate(slack int) {
	lv.r.allocate(slack)
	lv.d.allocate(slack)
}

// pairBand is the height of the bands of map rows ComparePair produces at a
// time, per thread: tall enough that the windows' halos (up to 37 rows
// ahead and 4 behind in the earliest stages) are a fraction of a window,
// short enough that the windows of all stages of both images stay a
// fraction of a plane.
const pairBand = 32

// ComparePair is Compare for one pair of opaque images, streamed: no
// prepared reference and no whole plane but the distance map when
// cfg.DistMap asks for it (see above). The results are Compare's bits.
// Images with alpha, and images smaller than 8×8, go to Compare.
func ComparePair(ref, dist *zenmetrics.Image, cfg Config) (Result, error) {
	n := newWorkers(cfg.Threads).n
	return comparePair(ref, dist, cfg, pairBand*n)
}

// comparePair is ComparePair in bands of band rows (rounded up to even).
func comparePair(ref, dist *zenmetrics.Image, cfg Config, band int) (res Result, err error) {
	defer zenmetrics.Recover(&err)
	if ref == nil || dist == nil {
		return Compare(ref, dist, cfg)
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return Result{}, err
	}
	if err := checkConfig(&cfg); err != nil {
		return Result{}, err
	}
	if err := ref.Validate(); err != nil {
		return Result{}, err
	}
	if err := dist.Validate(); err != nil {
		return Result{}, err
	}
	w, h := ref.Width, ref.Height
	if ref.Format.HasAlpha() || dist.Format.HasAlpha() || w < minSize || h < minSize {
		return Compare(ref, dist, cfg)
	}
	band = max(2, band+band&1)
	wk := newWorkers(cfg.Threads)
	intensity := float32(cfg.IntensityTarget)
	full := &pairLevel{r: newChain(ref, false, true, intensity), d: newChain(dist, false, false, intensity)}
	var sub *pairLevel
	sw, sh := (w+1)/2, (h+1)/2
	if sw >= minSize && sh >= minSize {
		sub = &pairLevel{r: newChain(ref, true, true, intensity), d: newChain(dist, true, false, intensity)}
		full.r.sub, sub.r.src = sub.r, full.r
		full.d.sub, sub.d.src = sub.d, full.d
	}
	// The map's rows of the current band (all of it when it is asked for)
	// and the half-resolution map's rows they blend in.
	dm := win{pl: plane{w: w, h: h}, dry: true}
	sdm := win{pl: plane{w: sw, h: sh}, dry: true}
	var m float32
	var tot3, totP [3]float64
	sums := make([][2][3]float64, band)
	// walk runs the schedule: bands of map rows [y0, y1), starting with
	// empty bands (y1 ≤ 0) that only run the earlier stages, so that
	// every stage advances by at most one band (half a band at half
	// resolution) at each step and no window holds more than it does in
	// the middle of the image. Planning (dry) only readies the windows.
	walk := func(dry bool) {
		first := band - (2*aheadRGB+band+2)/band*band
		sy0 := 0
		for y1 := first; y1-band < h; y1 += band {
			y0, y1 := max(0, y1-band), min(h, y1)
			if y1 > y0 {
				dm.grow(y0, y1)
			}
			full.step(wk, dm.pl, y0, y1)
			if sub != nil {
				// The half-resolution rows these map rows blend in: y/2
				// for y in [y0, y1), y0 being even.
				sy1 := min(sh, (y1+1)>>1)
				if sy1 > sy0 {
					sdm.grow(sy0, sy1)
				}
				sub.step(wk, sdm.pl, sy0, sy1)
				if !dry && y1 > y0 {
					sdm := sdm.pl
					wk.span(y0, y1, func(a, b int) { addSupersampledRows(sdm, dm.pl, a, b) })
				}
				sy0 = max(sy0, sy1)
			}
			if dry || y1 <= y0 {
				continue
			}
			// Max and the norms' power sums, per row and then in row
			// order, as Score and distanceP take them.
			dmp := dm.pl
			wk.span(y0, y1, func(a, b int) {
				for y := a; y < b; y++ {
					sums[y-y0][0] = rowPowerSums(dmp.row(y), 3)
					if cfg.PNorm > 0 {
						sums[y-y0][1] = rowPowerSums(dmp.row(y), cfg.PNorm)
					}
				}
			})
			for y := y0; y < y1; y++ {
				for _, v := range dmp.row(y) {
					m = max(m, v)
				}
				add3(&tot3, sums[y-y0][0])
				add3(&totP, sums[y-y0][1])
			}
		}
	}
	walk(true)
	// No slack: a linear window moves its kept rows (a blur's halo) to the
	// top of its buffer at every step; that copy costs less than 0.2% of
	// the instructions, slack rows would cost more memory than they save.
	full.allocate(0)
	if sub != nil {
		sub.allocate(0)
	}
	if cfg.DistMap {
		dm.span = h
	}
	dm.allocate(0)
	sdm.allocate(0)
	walk(false)
	res = Result{Width: w, Height: h, Max: float64(m), PNorm3: finishDistanceP(tot3, w*h, 3)}
	if cfg.PNorm > 0 {
		res.PNorm = finishDistanceP(totP, w*h, cfg.PNorm)
	}
	if cfg.DistMap {
		res.DistMap = dm.pl.p
	}
	return res, nil
}
