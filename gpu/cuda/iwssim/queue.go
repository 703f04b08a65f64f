package iwssim

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The kernel sequences, written against a launcher and buffers only (no
// device, no uploads), so that the tests replay them without a GPU and
// check every launch (launch_test.go) or run them on the CPU
// (emulate_test.go).

// gaussRad is the Gaussian window's radius: region row i is band row i+5.
const gaussRad = 5

// scaleGeom is one scale: its band w×h and region rw×rh (the centres of
// the 11×11 windows).
type scaleGeom struct{ w, h, rw, rh int }

// geometry is the size of every scale of a w×h image and where each
// scale's row sums go.
type geometry struct {
	w, h   int
	s      [nScales]scaleGeom
	rowOff [nScales]int // offset of each scale's rows in the sums
	rows   int          // Σ rh
}

// newGeometry halves as piq does (⌈n/2⌉, every other sample from the
// first). w and h are at least 161, so every region is at least 1×1.
func newGeometry(w, h int) geometry {
	gm := geometry{w: w, h: h}
	cw, ch := w, h
	for k := 0; k < nScales; k++ {
		gm.s[k] = scaleGeom{w: cw, h: ch, rw: cw - 2*gaussRad, rh: ch - 2*gaussRad}
		gm.rowOff[k] = gm.rows
		gm.rows += ch - 2*gaussRad
		cw, ch = (cw+1)/2, (ch+1)/2
	}
	return gm
}

// weighted reports whether scale k has information-content weights (all
// but the last).
func weighted(k int) bool { return k < nScales-1 }

// mapsAt is the number of region planes the reference keeps at scale k:
// mu, vr and, weighted, bm, bv, ss.
func mapsAt(k int) int {
	if weighted(k) {
		return 5
	}
	return 2
}

// refPlanes are a prepared reference's device buffers: the model (λ/σ²
// and the quadratic forms of every scale, modelLen doubles), and per
// scale the band y and the region planes mu, vr, bm, bv, ss (the last
// three nil at the last scale); how many eigenvalues each weighted scale
// has and whether its band is flat (model decides both).
type refPlanes struct {
	model *cuda.Buffer
	y     [nScales]*cuda.Buffer
	m     [nScales][5]*cuda.Buffer
	nlam  [nScales]int
	flat  [nScales]bool
}

// buffers lists the reference's buffers in refSizes' order.
func (p *refPlanes) buffers() []*cuda.Buffer {
	out := []*cuda.Buffer{p.model}
	for k := range p.y {
		out = append(out, p.y[k])
		out = append(out, p.m[k][:mapsAt(k)]...)
	}
	return out
}

// refSizes is the size of every buffer of a w×h reference, in buffers'
// order.
func refSizes(w, h int) []int64 {
	gm := newGeometry(w, h)
	out := []int64{8 * modelLen}
	for k, s := range gm.s {
		out = append(out, 8*int64(s.w)*int64(s.h))
		for m := 0; m < mapsAt(k); m++ {
			out = append(out, 8*int64(s.rw)*int64(s.rh))
		}
	}
	return out
}

// fillRef allocates a reference's buffers with alloc (the device, or the
// tests' fake allocator), in refSizes' order.
func fillRef(p *refPlanes, w, h int, alloc func(int64) *cuda.Buffer) {
	sizes := refSizes(w, h)
	next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return alloc(n) }
	p.model = next()
	for k := range p.y {
		p.y[k] = next()
		for m := 0; m < mapsAt(k); m++ {
			p.m[k][m] = next()
		}
	}
}

// slot is one scorer's device scratch with its worker (stream, staging):
// the raw upload, the distorted pyramid (x[k] is band k, the low-pass at
// the last scale), the pyramid's intermediate plane, hpass's six planes
// (scale 0's size, reused by every scale) and the row sums.
type slot struct {
	wk         *cuda.Worker
	raw        *cuda.Buffer
	x          [nScales]*cuda.Buffer
	tmp, g, bx *cuda.Buffer
	sums       *cuda.Buffer
}

// slotSizes is the size of every buffer of a slot for a w×h image and
// uploads of raw bytes, in fillSlot's order.
func slotSizes(w, h int, raw int64) []int64 {
	gm := newGeometry(w, h)
	out := []int64{raw}
	for _, s := range gm.s {
		out = append(out, 8*int64(s.w)*int64(s.h))
	}
	s0 := gm.s[0]
	w64, h64 := int64(w), int64(h)
	out = append(out,
		8*max(h64*int64(gm.s[1].w), int64(gm.s[1].h)*w64), // tmp: h×⌈w/2⌉ going down, ⌈h/2⌉×w going up
		8*3*h64*int64(s0.rw),                              // g
		8*3*h64*int64(s0.rw),                              // bx
		8*2*int64(gm.rows))                                // sums
	return out
}

// sumsBytes is a score's read-back: two doubles per region row of every
// scale.
func sumsBytes(gm geometry) int64 { return 16 * int64(gm.rows) }

// outBytes is a slot's page-locked read-back area: a score's sums or a
// preparation's covariance sums, whichever is larger.
func outBytes(gm geometry) int64 {
	_, n := covOffsets(gm)
	return max(sumsBytes(gm), 8*int64(n))
}

// fillSlot allocates a slot's device buffers with alloc, in slotSizes'
// order.
func fillSlot(s *slot, w, h int, raw int64, alloc func(int64) *cuda.Buffer) {
	sizes := slotSizes(w, h, raw)
	next := func() *cuda.Buffer { n := sizes[0]; sizes = sizes[1:]; return alloc(n) }
	s.raw = next()
	for k := range s.x {
		s.x[k] = next()
	}
	s.tmp, s.g, s.bx, s.sums = next(), next(), next(), next()
}

// buffers lists the slot's device buffers.
func (s *slot) buffers() []*cuda.Buffer {
	out := []*cuda.Buffer{s.raw}
	out = append(out, s.x[:]...)
	return append(out, s.tmp, s.g, s.bx, s.sums)
}

// layout describes the raw pixels in the upload buffer.
type layout struct{ stride, channels, bps int }

// queueUnpack converts rows [y0, y1) of the raw image (w wide) in raw
// into scale 0's plane dst.
func queueUnpack(q launch.Launcher, k *kernels, w, y0, y1 int, lay layout, raw, dst *cuda.Buffer) error {
	if y1 <= y0 {
		return nil
	}
	g, b := pxGrid(w, y1-y0)
	return q.Launch(&k.unpack, g, b, raw, w, y0, y1, lay.stride, lay.channels, lay.bps, dst)
}

// unpacker is the callback of an overlapped upload of total raw bytes (a
// h-row image): given the bytes that have arrived (a prefix), it queues
// the unpack of the rows they complete and have not been converted yet.
func unpacker(q launch.Launcher, k *kernels, w, h int, total int64, lay layout, raw, dst *cuda.Buffer) func(end int64) error {
	done := 0
	return func(end int64) error {
		rows := h
		if end < total {
			rows = int(end / int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueUnpack(q, k, w, done, rows, lay, raw, dst); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queuePyramid queues the four pyramid steps on the planes p (p[0]
// holds scale 0): p[k] becomes band k, p[k+1] its low-pass; tmp is the
// intermediate plane.
func queuePyramid(q launch.Launcher, k *kernels, gm geometry, p *[nScales]*cuda.Buffer, tmp *cuda.Buffer) error {
	for l := 0; l < nScales-1; l++ {
		c, n := gm.s[l], gm.s[l+1]
		g, b := pxGrid(n.w, c.h)
		if err := q.Launch(&k.downX, g, b, p[l], c.w, c.h, n.w, tmp); err != nil {
			return err
		}
		g, b = pxGrid(n.w, n.h)
		if err := q.Launch(&k.downY, g, b, tmp, n.w, c.h, n.h, p[l+1]); err != nil {
			return err
		}
		g, b = pxGrid(c.w, n.h)
		if err := q.Launch(&k.upX, g, b, p[l+1], n.w, n.h, c.w, tmp); err != nil {
			return err
		}
		g, b = pxGrid(c.w, c.h)
		if err := q.Launch(&k.upY, g, b, tmp, c.w, c.h, n.h, p[l]); err != nil {
			return err
		}
	}
	return nil
}

// components is the neighbourhood vectors' length at scale k: the 3×3
// block and, below the last two scales, the parent (piq's parent=True);
// 0 at the last scale (no weights).
func components(k int) int {
	switch {
	case k < nScales-2:
		return 10
	case k == nScales-2:
		return 9
	}
	return 0
}

// parentOf is the parent band of scale k (nil without one), its width,
// its rows in the plane and its rows in the image (the interpolation
// weights are the image's; see parent_row_at in iwssim.cu).
func parentOf(c *win, ref *refPlanes, k int) (par *cuda.Buffer, wp, hp, hpi int) {
	if components(k) != 10 {
		return nil, 0, 0, 0
	}
	return ref.y[k+1], c.gm.s[k+1].w, c.gm.s[k+1].h, c.img.s[k+1].h
}

// win is the part of the image that a sequence of launches computes: the
// planes are those of a crop of the image (for a whole image, the image
// itself) whose geometry is gm and whose row 0 at scale k is the image's
// row ro[k]; at scale k the crop owns the band rows [lo[k], hi[k])
// (crop-local), and computes the covariance's block rows, the vᵀC⁻¹v
// planes and the row sums centred there, written where the whole image's
// go (img is the image's geometry). Strips own disjoint rows that tile
// every scale (strip.go), so their launches fill the image's tables
// exactly once.
type win struct {
	gm, img geometry
	ro      [nScales]int
	lo, hi  [nScales]int
}

// wholeWin is the whole image as its own crop: every row owned.
func wholeWin(gm geometry) *win {
	c := &win{gm: gm, img: gm}
	for k, s := range gm.s {
		c.hi[k] = s.h
	}
	return c
}

// owned is the crop-local centre rows [lo, hi) that the crop owns at
// scale k among those at least m rows inside both the crop and the image
// (m = 1: the covariance's block rows; gaussRad: the regions' centres).
func (c *win) owned(k, m int) (lo, hi int) {
	lo = max(c.lo[k], m, m-c.ro[k])
	hi = min(c.hi[k], c.gm.s[k].h-m, c.img.s[k].h-m-c.ro[k])
	return lo, max(lo, hi)
}

// regions is the crop-local region rows [i0, i0+n) owned at scale k.
func (c *win) regions(k int) (i0, n int) {
	lo, hi := c.owned(k, gaussRad)
	return lo - gaussRad, hi - lo
}

// covRowLen is what the cov kernel writes per block row at weighted scale
// k: the nPairs covariance sums, then the largest |y| of the band rows
// that block row covers (the flatness test's input).
func covRowLen(k int) int {
	n := components(k)
	return n*(n+1)/2 + 1
}

// covOffsets is where each weighted scale's per-block-row values
// (covRowLen each) start in the cov buffer, and their total.
func covOffsets(gm geometry) (off [nScales]int, total int) {
	for k := 0; k < nScales-1; k++ {
		off[k] = total
		total += covRowLen(k) * (gm.s[k].h - 2)
	}
	return off, total
}

// queueReference queues the reference's half of a whole image after
// scale 0's unpack into ref.y[0]: its pyramid, every scale's statistics
// (queueRefStats) and the weighted scales' covariance sums and band
// maxima into covBuf (the slot's x[0], free while preparing; covOffsets
// says where). The host then reads them back (model) and queueMahal
// finishes.
func queueReference(q launch.Launcher, k *kernels, gm geometry, s *slot, ref *refPlanes, covBuf *cuda.Buffer) error {
	if err := queuePyramid(q, k, gm, &ref.y, s.tmp); err != nil {
		return err
	}
	if err := queueRefStats(q, k, gm, s, ref); err != nil {
		return err
	}
	return queueCov(q, k, wholeWin(gm), ref, covBuf)
}

// queueRefStats queues every scale's statistics of the reference's bands
// ref.y (a whole image's or a crop's, geometry gm): mu, vr and, weighted,
// bm, bv, through the slot's g and bx.
func queueRefStats(q launch.Launcher, k *kernels, gm geometry, s *slot, ref *refPlanes) error {
	for l := 0; l < nScales; l++ {
		c := gm.s[l]
		box := 0
		if weighted(l) {
			box = 1
		}
		g, b := pxGrid(c.rw, c.h)
		if err := q.Launch(&k.rhpass, g, b, ref.y[l], c.w, c.h, c.rw, box, s.g, s.bx); err != nil {
			return err
		}
		m := ref.m[l]
		g, b = pxGrid(c.rw, c.rh)
		if err := q.Launch(&k.rstats, g, b, s.g, s.bx, c.h, c.rw, c.rh, box, m[0], m[1], m[2], m[3]); err != nil {
			return err
		}
	}
	return nil
}

// queueCov queues the covariance sums and band maxima of the block rows c
// owns at every weighted scale into covBuf, at the image's offsets
// (covOffsets of c.img).
func queueCov(q launch.Launcher, k *kernels, c *win, ref *refPlanes, covBuf *cuda.Buffer) error {
	off, _ := covOffsets(c.img)
	for l := 0; l < nScales-1; l++ {
		r0, r1 := c.owned(l, 1)
		if r1 == r0 {
			continue
		}
		s := c.gm.s[l]
		par, wp, hp, hpi := parentOf(c, ref, l)
		if err := q.Launch(&k.cov, cuda.Dim3{X: uint32(r1 - r0), Y: 1, Z: 1}, cuda.Dim3{X: covThreads, Y: 1, Z: 1},
			ref.y[l], par, s.w, s.h, wp, hp, hpi, components(l), r0, r1-r0, c.ro[l], c.img.s[l].h, c.ro[min(l+1, nScales-1)], off[l], covBuf); err != nil {
			return err
		}
	}
	return nil
}

// queueMahal queues vᵀC⁻¹v/N of the region rows c owns at every weighted
// scale into ref.m[k][4], once the model buffer holds the quadratic
// forms.
func queueMahal(q launch.Launcher, k *kernels, c *win, ref *refPlanes) error {
	for l := 0; l < nScales-1; l++ {
		i0, n := c.regions(l)
		if n == 0 {
			continue
		}
		s := c.gm.s[l]
		par, wp, hp, hpi := parentOf(c, ref, l)
		g, b := pxGrid(s.rw, n)
		if err := q.Launch(&k.mahal, g, b, ref.y[l], par, ref.model, s.w, s.h, wp, hp, hpi, components(l), i0, n,
			c.ro[l], c.ro[min(l+1, nScales-1)], quadBase+maxQuad*l, ref.m[l][4]); err != nil {
			return err
		}
	}
	return nil
}

// model is the host's part of the reference, between queueReference and
// queueMahal: each weighted scale's covariance sums (cov, as covOffsets
// lays them out) added block row by block row in row order, as
// cpu/iwssim's covariance does, the band's flatness (its largest |y|, the
// maximum of the block rows', against cpuiw.FlatBandLimit: the CPU's
// isFlatBand, which compares every sample with the same limit) and the
// eigenvalue step (cpuiw.InverseModel, the CPU reference's own, which
// gives a flat band a zero model); it records the eigenvalue counts in
// ref and returns the model buffer's contents.
func model(gm geometry, cov []float64, ref *refPlanes) ([]float64, error) {
	out := make([]float64, modelLen)
	off, total := covOffsets(gm)
	if len(cov) < total {
		return nil, fmt.Errorf("%w: iwssim: %d covariance sums, want %d", zenmetrics.ErrBadInput, len(cov), total)
	}
	for k := 0; k < nScales-1; k++ {
		n := components(k)
		np := n * (n + 1) / 2
		rl := covRowLen(k)
		c := gm.s[k]
		tot := make([]float64, np)
		top := 0.0
		for i := 0; i < c.h-2; i++ {
			row := cov[off[k]+i*rl : off[k]+(i+1)*rl]
			for p, v := range row[:np] {
				tot[p] += v
			}
			// A NaN maximum (never written) must not pass for flat.
			if m := row[np]; m > top || m != m {
				top = m
			}
		}
		if top != top {
			return nil, fmt.Errorf("%w: iwssim: scale %d: the band's largest magnitude is NaN", zenmetrics.ErrBadInput, k)
		}
		flat := !(top > cpuiw.FlatBandLimit(k))
		lam, quad, err := cpuiw.InverseModel(tot, n, float64(c.h-2)*float64(c.w-2), k, flat)
		if err != nil {
			return nil, err
		}
		if len(lam) != n || len(quad) != np || np > maxQuad || n > maxLam {
			return nil, fmt.Errorf("%w: iwssim: scale %d: %d eigenvalues and %d coefficients for %d components", zenmetrics.ErrBadInput, k, len(lam), len(quad), n)
		}
		copy(out[maxLam*k:], lam)
		copy(out[quadBase+maxQuad*k:], quad)
		ref.nlam[k] = n
		ref.flat[k] = flat
	}
	return out, nil
}

// queueScore queues the distorted half after scale 0's unpack into
// s.x[0]: the four pyramid steps on the crop c (a whole image: wholeWin),
// then per scale hpass and terms against the reference's planes of the
// same crop, for the region rows c owns, whose row sums land in s.sums at
// the image's rows.
func queueScore(q launch.Launcher, k *kernels, c *win, s *slot, ref *refPlanes) error {
	if err := queuePyramid(q, k, c.gm, &s.x, s.tmp); err != nil {
		return err
	}
	for l := 0; l < nScales; l++ {
		i0, n := c.regions(l)
		if n == 0 {
			continue
		}
		sg := c.gm.s[l]
		box, nlam := 0, 0
		if weighted(l) {
			box, nlam = 1, ref.nlam[l]
		}
		g, b := pxGrid(sg.rw, sg.h)
		if err := q.Launch(&k.hpass, g, b, s.x[l], ref.y[l], sg.w, sg.h, sg.rw, box, s.g, s.bx); err != nil {
			return err
		}
		m := ref.m[l]
		if err := q.Launch(&k.terms, cuda.Dim3{X: uint32(n), Y: 1, Z: 1}, cuda.Dim3{X: rowThreads, Y: 1, Z: 1},
			s.g, s.bx, m[0], m[1], m[2], m[3], m[4], ref.model, sg.h, sg.rw, sg.rh, nlam, maxLam*l, i0, c.img.rowOff[l]+c.ro[l], s.sums); err != nil {
			return err
		}
	}
	return nil
}
