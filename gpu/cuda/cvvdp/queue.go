package cvvdp

import (
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The kernel sequences, written against a launcher and buffers only (no
// device, no uploads), so that the tests replay them without a GPU and
// check every launch (launch_test.go) or run them on the CPU
// (emulate_test.go).

// layout describes the raw pixels in the upload buffer.
type layout struct {
	stride, channels, bps int
	gray                  int // 1: grey (the luminance in all three channels)
}

// refBufs are a prepared reference's device buffers: the display's
// sample tables and constants, per band below the base band R·S·gain and
// S (three planes each), and the base band's S (3 floats and a pad) and
// contrast R (three planes).
type refBufs struct {
	lut, kb *cuda.Buffer
	rp, s   []*cuda.Buffer
	rb      *cuda.Buffer
}

// px is the pixels of level l.
func px(p *cpucv.Plan, l int) int64 { return int64(p.W[l]) * int64(p.H[l]) }

// refSizes is the size of every reference buffer, in allocation order:
// lut, kb, then rp and s per band below the base band, then rb.
func refSizes(p *cpucv.Plan) []int64 {
	out := []int64{4 * lutLen, 4 * int64(kbCSF+nCh*lutN*p.Levels)}
	for b := 0; b+1 < p.Levels; b++ {
		out = append(out, 12*px(p, b), 12*px(p, b))
	}
	return append(out, 4*(4+3*px(p, p.Levels-1)))
}

// sumRows is the number of row sums: every row of every band below the
// base band.
func sumRows(p *cpucv.Plan) int64 {
	var n int64
	for b := 0; b+1 < p.Levels; b++ {
		n += int64(p.H[b])
	}
	return n
}

// rowOff is where band b's row sums start.
func rowOff(p *cpucv.Plan, b int) int {
	off := 0
	for k := 0; k < b; k++ {
		off += p.H[k]
	}
	return off
}

// resBytes is the results: three doubles (the channels' sums of
// safe_pow(D, 2)) per band.
func resBytes(p *cpucv.Plan) int64 { return 24 * int64(p.Levels) }

// slot is one scorer's device scratch with its worker (stream, staging):
// the raw upload, the Gaussian pyramid (three planes per level), three
// full-size plane triples (du: |T_p − R_p|; mm: the masker, and the map's
// output; hb: the masker blurred along x), the row sums, the results and,
// with a distortion map, its planes per level.
type slot struct {
	wk         *cuda.Worker
	raw        *cuda.Buffer
	g          []*cuda.Buffer
	du, mm, hb *cuda.Buffer
	rows, res  *cuda.Buffer
	heat       []*cuda.Buffer
}

// slotSizes is the size of every buffer of a slot for plan p, uploads of
// up to raw bytes and, with distMap, the map's planes, in fillSlot's
// order.
func slotSizes(p *cpucv.Plan, raw int64, distMap bool) []int64 {
	out := []int64{raw}
	for l := 0; l < p.Levels; l++ {
		out = append(out, 12*px(p, l))
	}
	n0 := px(p, 0)
	out = append(out, 12*n0, 12*n0, 12*n0, 24*sumRows(p), resBytes(p))
	if distMap {
		for l := 0; l < p.Levels; l++ {
			out = append(out, 4*px(p, l))
		}
	}
	return out
}

// fillSlot allocates a slot's device buffers with alloc (the device, or
// the tests' fake allocator; nil after a failure, which the caller
// checks).
func fillSlot(s *slot, p *cpucv.Plan, raw int64, distMap bool, alloc func(int64) *cuda.Buffer) {
	sizes := slotSizes(p, raw, distMap)
	next := func() *cuda.Buffer { b := alloc(sizes[0]); sizes = sizes[1:]; return b }
	s.raw = next()
	s.g = make([]*cuda.Buffer, p.Levels)
	for l := range s.g {
		s.g[l] = next()
	}
	s.du, s.mm, s.hb, s.rows, s.res = next(), next(), next(), next(), next()
	if distMap {
		s.heat = make([]*cuda.Buffer, p.Levels)
		for l := range s.heat {
			s.heat[l] = next()
		}
	}
}

// buffers lists the slot's device buffers (nil ones left out).
func (s *slot) buffers() []*cuda.Buffer {
	all := append([]*cuda.Buffer{s.raw}, s.g...)
	all = append(all, s.du, s.mm, s.hb, s.rows, s.res)
	all = append(all, s.heat...)
	out := all[:0]
	for _, b := range all {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// queueUnpack converts rows [y0, y1) of the raw image, whose upload buffer
// holds its rows from ry0 on, into level 0's DKL planes.
func queueUnpack(q launch.Launcher, k *kernels, p *cpucv.Plan, ry0, y0, y1 int, lay layout, ref *refBufs, s *slot) error {
	if y1 <= y0 {
		return nil
	}
	w, h := p.W[0], p.H[0]
	hlg := 0
	if p.Photometry.HLG {
		hlg = 1
	}
	g, b := pxGrid(w, y1-y0, 1)
	return q.Launch(&k.unpack, g, b, s.raw, ref.lut, ref.kb, w, h, ry0, y0, y1, lay.stride, lay.channels, lay.bps, lay.gray, hlg, s.g[0])
}

// unpacker is the callback of an overlapped upload of total raw bytes,
// the image's rows [c0, c1) (all of them for a whole image, a crop for
// strips): given the bytes that have arrived (a prefix), it queues the
// unpack of the rows they complete and have not been converted yet.
func unpacker(q launch.Launcher, k *kernels, p *cpucv.Plan, c0, c1 int, total int64, lay layout, ref *refBufs, s *slot) func(end int64) error {
	done := c0
	return func(end int64) error {
		rows := c1
		if end < total {
			rows = c0 + int(end/int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueUnpack(q, k, p, c0, done, rows, lay, ref, s); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queuePyramid queues the Gaussian pyramid's levels 1.. from level 0.
func queuePyramid(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot) error {
	for l := 0; l+1 < p.Levels; l++ {
		g, b := pxGrid(p.W[l+1], p.H[l+1], nCh)
		if err := q.Launch(&k.reduce, g, b, s.g[l], p.W[l], p.H[l], s.g[l+1]); err != nil {
			return err
		}
	}
	return nil
}

// window is a band's rows [w0, w1), computed in planes that hold those
// rows, of which the rows [o0, o1) are owned: their sums (and map values)
// are written. A whole image's band is one window of all its rows.
type window struct{ w0, w1, o0, o1 int }

// whole is the window of all h rows of a band.
func whole(h int) window { return window{0, h, 0, h} }

// rows is the window's height.
func (win window) rows() int { return win.w1 - win.w0 }

// queueRefBand queues band b's R·S·gain and S for the window's rows into
// rp and s (which hold those rows), from the pyramid in s.g.
func queueRefBand(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, kb *cuda.Buffer, b int, win window, rp, sb *cuda.Buffer) error {
	g, bl := pxGrid(p.W[b], win.rows(), 1)
	return q.Launch(&k.refBand, g, bl, s.g[b], s.g[b+1], kb, p.W[b], p.H[b], p.W[b+1], p.H[b+1], b, p.Mul[b],
		win.w0, win.rows(), rp, sb)
}

// queueBaseRef queues the base band's S and contrast into ref.rb.
func queueBaseRef(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, ref *refBufs) error {
	n := p.Levels
	one, sb := cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: sumThreads, Y: 1, Z: 1}
	return q.Launch(&k.baseRef, one, sb, s.g[n-1], ref.kb, p.W[n-1], p.H[n-1], n-1, ref.rb)
}

// queueReference queues the reference half after level 0's unpack: the
// pyramid, then every band's R·S·gain and S and the base band's into ref.
func queueReference(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, ref *refBufs) error {
	if err := queuePyramid(q, k, p, s); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		if err := queueRefBand(q, k, p, s, ref.kb, b, whole(p.H[b]), ref.rp[b], ref.s[b]); err != nil {
			return err
		}
	}
	return queueBaseRef(q, k, p, s, ref)
}

// blurs reports whether band b's masker is blurred (pycvvdp blurs bands
// larger than pu_padsize in both directions).
func blurs(p *cpucv.Plan, b int) bool { return p.W[b] > kc.PUPad && p.H[b] > kc.PUPad }

// heatOf is the map's plane of level l, nil without a map.
func (s *slot) heatOf(l int) *cuda.Buffer {
	if s.heat == nil {
		return nil
	}
	return s.heat[l]
}

// queueDistBand queues band b's masking model over the window's rows and
// the row sums (and map values) of the rows it owns, from the pyramid in
// s.g and the reference's rp and s, which hold the band's rows [r0, r0 +
// rh): the window's planes are s.du, s.mm and s.hb.
func queueDistBand(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, b int, win window, rp, sb *cuda.Buffer, r0, rh int) error {
	w, h, wh := p.W[b], p.H[b], win.rows()
	g, bl := pxGrid(w, wh, 1)
	if err := q.Launch(&k.distBand, g, bl, s.g[b], s.g[b+1], rp, sb, w, h, p.W[b+1], p.H[b+1], p.Mul[b],
		win.w0, wh, r0, rh, s.du, s.mm); err != nil {
		return err
	}
	mb, blur := s.mm, 0
	if blurs(p, b) {
		g3, _ := pxGrid(w, wh, nCh)
		if err := q.Launch(&k.blurH, g3, bl, s.mm, w, wh, s.hb); err != nil {
			return err
		}
		mb, blur = s.hb, 1
	}
	hw := p.HeatW[0]
	rg, rb := cuda.Dim3{X: uint32(win.o1 - win.o0), Y: 1, Z: 1}, cuda.Dim3{X: rowThreads, Y: 1, Z: 1}
	return q.Launch(&k.rows, rg, rb, mb, s.du, w, h, win.w0, wh, win.o0, blur, rowOff(p, b), p.Mul[b], hw[0], hw[1], hw[2],
		s.rows, s.heatOf(b))
}

// queueDistorted queues the distorted half after level 0's unpack: the
// pyramid, per band the masking model and its row sums, then
// queueFinish's base band, sums and map (into s.mm's first plane).
func queueDistorted(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, ref *refBufs) error {
	if err := queuePyramid(q, k, p, s); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		if err := queueDistBand(q, k, p, s, b, whole(p.H[b]), ref.rp[b], ref.s[b], 0, p.H[b]); err != nil {
			return err
		}
	}
	return queueFinish(q, k, p, s, ref, s.mm)
}

// queueFinish queues the end of a score once every band's row sums are
// in s.rows: the base band, each band's sums into s.res and, with a map,
// its reconstruction into out (w×h floats).
func queueFinish(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, ref *refBufs, out *cuda.Buffer) error {
	n := p.Levels
	one, sb := cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: sumThreads, Y: 1, Z: 1}
	hb := p.HeatW[n-1]
	if err := q.Launch(&k.baseDist, one, sb, s.g[n-1], ref.rb, p.W[n-1], p.H[n-1], n-1, p.Mul[n-1], hb[0], hb[1], hb[2],
		s.res, s.heatOf(n-1)); err != nil {
		return err
	}
	if n > 1 {
		if err := q.Launch(&k.bandSums, cuda.Dim3{X: uint32(n - 1), Y: 1, Z: 1}, sb, s.rows, p.H[0], s.res); err != nil {
			return err
		}
	}
	if s.heat != nil {
		return queueMap(q, k, p, s, out)
	}
	return nil
}

// queueMap queues the distortion map's reconstruction from the bands'
// planes: each level from the next-to-last up gets the coarser one
// enlarged added in place, and the finest is mapped to the raw heatmap
// into out (w×h).
func queueMap(q launch.Launcher, k *kernels, p *cpucv.Plan, s *slot, out *cuda.Buffer) error {
	n := p.Levels
	for l := n - 2; l >= 1; l-- {
		g, b := pxGrid(p.W[l], p.H[l], 1)
		if err := q.Launch(&k.heatAdd, g, b, s.heat[l+1], p.W[l+1], p.H[l+1], p.W[l], p.H[l], s.heat[l]); err != nil {
			return err
		}
	}
	g, b := pxGrid(p.W[0], p.H[0], 1)
	if n == 1 {
		return q.Launch(&k.heatFinal, g, b, (*cuda.Buffer)(nil), s.heat[0], 0, 0, p.W[0], p.H[0], out)
	}
	return q.Launch(&k.heatFinal, g, b, s.heat[1], s.heat[0], p.W[1], p.H[1], p.W[0], p.H[0], out)
}
