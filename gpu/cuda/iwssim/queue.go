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

// refPlanes are a prepared reference's device buffers: λ/σ² of every
// scale (maxLam doubles each), and per scale the band y and the region
// planes mu, vr, bm, bv, ss (the last three nil at the last scale); and
// how many eigenvalues each weighted scale has.
type refPlanes struct {
	lam  *cuda.Buffer
	y    [nScales]*cuda.Buffer
	m    [nScales][5]*cuda.Buffer
	nlam [nScales]int
}

// buffers lists the reference's buffers in refSizes' order.
func (p *refPlanes) buffers() []*cuda.Buffer {
	out := []*cuda.Buffer{p.lam}
	for k := range p.y {
		out = append(out, p.y[k])
		out = append(out, p.m[k][:mapsAt(k)]...)
	}
	return out
}

// check compares the CPU reference's scales with the geometry and
// records each weighted scale's number of eigenvalues.
func (p *refPlanes) check(gm geometry, data []cpuiw.ScaleData) error {
	if len(data) != nScales {
		return fmt.Errorf("%w: iwssim: the CPU reference has %d scales", zenmetrics.ErrBadInput, len(data))
	}
	for k, sd := range data {
		if g := gm.s[k]; sd.W != g.w || sd.H != g.h || sd.RW != g.rw || sd.RH != g.rh {
			return fmt.Errorf("%w: iwssim: scale %d is %dx%d on the CPU, %dx%d here", zenmetrics.ErrBadInput, k, sd.W, sd.H, g.w, g.h)
		}
		if weighted(k) {
			if n := len(sd.LamScaled); n == 0 || n > maxLam || sd.SS == nil {
				return fmt.Errorf("%w: iwssim: scale %d has %d eigenvalues", zenmetrics.ErrBadInput, k, n)
			}
			p.nlam[k] = len(sd.LamScaled)
		}
	}
	return nil
}

// uploadRef copies the CPU reference's planes and λ/σ² into the device
// buffers with put (a worker's staged Upload; the emulation's upload),
// which may reuse its argument once it returns.
func uploadRef(put func(*cuda.Buffer, []byte) error, p *refPlanes, data []cpuiw.ScaleData) error {
	lam := make([]float64, maxLam*nScales)
	for k, sd := range data {
		if weighted(k) {
			copy(lam[maxLam*k:], sd.LamScaled)
		}
	}
	var buf []byte
	if err := put(p.lam, f64Bytes(&buf, lam)); err != nil {
		return err
	}
	for k, sd := range data {
		planes := [][]float64{sd.Y, sd.Mu, sd.Vr, sd.Bm, sd.Bv, sd.SS}
		dst := append([]*cuda.Buffer{p.y[k]}, p.m[k][:mapsAt(k)]...)
		for i, d := range dst {
			if err := put(d, f64Bytes(&buf, planes[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

// refSizes is the size of every buffer of a w×h reference, in buffers'
// order.
func refSizes(w, h int) []int64 {
	gm := newGeometry(w, h)
	out := []int64{8 * maxLam * nScales}
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
	p.lam = next()
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

// sumsBytes is the read-back: two doubles per region row of every scale.
func sumsBytes(gm geometry) int64 { return 16 * int64(gm.rows) }

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

// queueUnpack converts rows [y0, y1) of the raw image (w wide) into scale
// 0's plane.
func queueUnpack(q launch.Launcher, k *kernels, w, y0, y1 int, lay layout, s *slot) error {
	if y1 <= y0 {
		return nil
	}
	g, b := pxGrid(w, y1-y0)
	return q.Launch(&k.unpack, g, b, s.raw, w, y0, y1, lay.stride, lay.channels, lay.bps, s.x[0])
}

// unpacker is the callback of an overlapped upload of total raw bytes (a
// h-row image): given the bytes that have arrived (a prefix), it queues
// the unpack of the rows they complete and have not been converted yet.
func unpacker(q launch.Launcher, k *kernels, w, h int, total int64, lay layout, s *slot) func(end int64) error {
	done := 0
	return func(end int64) error {
		rows := h
		if end < total {
			rows = int(end / int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueUnpack(q, k, w, done, rows, lay, s); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queueScore queues the distorted half after scale 0's unpack: the four
// pyramid steps (x[k] becomes band k, x[k+1] its low-pass), then per
// scale hpass and terms against the reference, whose row sums land in
// s.sums.
func queueScore(q launch.Launcher, k *kernels, gm geometry, s *slot, ref *refPlanes) error {
	for l := 0; l < nScales-1; l++ {
		c, n := gm.s[l], gm.s[l+1]
		g, b := pxGrid(n.w, c.h)
		if err := q.Launch(&k.downX, g, b, s.x[l], c.w, c.h, n.w, s.tmp); err != nil {
			return err
		}
		g, b = pxGrid(n.w, n.h)
		if err := q.Launch(&k.downY, g, b, s.tmp, n.w, c.h, n.h, s.x[l+1]); err != nil {
			return err
		}
		g, b = pxGrid(c.w, n.h)
		if err := q.Launch(&k.upX, g, b, s.x[l+1], n.w, n.h, c.w, s.tmp); err != nil {
			return err
		}
		g, b = pxGrid(c.w, c.h)
		if err := q.Launch(&k.upY, g, b, s.tmp, c.w, c.h, n.h, s.x[l]); err != nil {
			return err
		}
	}
	for l := 0; l < nScales; l++ {
		c := gm.s[l]
		box, nlam := 0, 0
		if weighted(l) {
			box, nlam = 1, ref.nlam[l]
		}
		g, b := pxGrid(c.rw, c.h)
		if err := q.Launch(&k.hpass, g, b, s.x[l], ref.y[l], c.w, c.h, c.rw, box, s.g, s.bx); err != nil {
			return err
		}
		m := ref.m[l]
		if err := q.Launch(&k.terms, cuda.Dim3{X: uint32(c.rh), Y: 1, Z: 1}, cuda.Dim3{X: rowThreads, Y: 1, Z: 1},
			s.g, s.bx, m[0], m[1], m[2], m[3], m[4], ref.lam, c.h, c.rw, c.rh, nlam, maxLam*l, gm.rowOff[l], s.sums); err != nil {
			return err
		}
	}
	return nil
}
