package cvvdp

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Strip pairs (zenmetrics.ModeStripPair), the ladder's rung between
// strips and the CPU.
//
// Strips keep both images' finest Gaussian level whole on the device
// (12 bytes a pixel) and the raw upload (up to 8), which is most of what
// they hold. Strip pairs keep neither: the reference and the distorted
// image are each taken through the pyramid band by band, the finest
// level only ever as a window of rows unpacked from that crop of the
// image (uploaded per window), and level 1 is built from crops in chunks
// of its rows (a row of level 1 needs rows 2i−2..2i+2 of level 0); the
// coarser levels (a third of the finest one's size, all of them
// together) are whole. As in strips, the reference's bands wait on the
// host between scores, so the two pyramids are never on the device
// together. Every value is computed by the same kernels from the same
// inputs as for a whole image, so the score is the whole image's bit for
// bit (TestStripPairs).
//
// An image with a single level (its base band) has nothing to pair: it is
// prepared as strips.

// StripPairs marks the metric as handling ModeStripPair
// (webgpu.StripPairer).
func (impl) StripPairs() bool { return true }

// reduceTmpFrom is reduceTmp over the levels from l0 on.
func reduceTmpFrom(ws, hs []int, l0 int) int64 {
	var n int64
	for l := l0; l+1 < len(ws); l++ {
		n = max(n, int64(ws[l])*int64(hs[l+1]))
	}
	return nCh * n
}

// pairSizes lists the device buffers of a strip-pair reference, in
// takePair's order, and their total with the uniforms and the raw upload
// of a window's crop (through queue writes: no staging buffer).
func pairSizes(ws, hs []int, winRows int, raw int64) (list []int64, total int64) {
	n := len(ws)
	add := func(v int64) {
		v = max(v, 4)
		list = append(list, v)
		total += v
	}
	win := 4 * nCh * int64(ws[0]) * int64(winRows)
	add(4 * int64(kCSF+nCh*32*n)) // K
	add(4 * lutLen)               // LUT
	add(win)                      // level 0's window
	for l := 1; l < n; l++ {
		add(4 * nCh * int64(ws[l]) * int64(hs[l])) // g
	}
	add(4 * (4 + nCh*int64(ws[n-1])*int64(hs[n-1]))) // rb
	add(4 * reduceTmpFrom(ws, hs, 1))                // rtmp
	for i := 0; i < 5; i++ {
		add(win) // ex, mm, hb, rpW, sW
	}
	add(4 * nCh * int64(sumRows(hs))) // sums
	total += int64(n) * paramsSize    // uniforms
	total += (raw + 3) &^ 3           // raw upload of a crop
	return list, total
}

// pairRaw is the worst-case (RGBA16) upload of a crop of rows rows.
func pairRaw(w, rows int) int64 { return worstRaw(w, rows) }

// planPairs chooses the window height of a strip-pair reference for a
// pyramid with levels ws×hs: band owned rows of the finest band, or (0)
// the most that fit the memory available now (all rows when unknown),
// less reserve (the distortion map's planes). It returns the window
// height and the device bytes.
func planPairs(b *webgpu.Backend, ws, hs []int, band int, reserve int64) (winRows int, total int64, err error) {
	lim := b.Device().Limits()
	h0 := hs[0]
	fits := func(rows int) (int64, bool) {
		raw := pairRaw(ws[0], rows)
		list, t := pairSizes(ws, hs, rows, raw)
		for _, n := range append(list, raw) {
			if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
				return t, false
			}
		}
		return t, true
	}
	lo := min(h0, minOwned+2*halo)
	switch {
	case band > 0:
		winRows = min(h0, band+2*halo)
	default:
		winRows = h0
		if avail := b.Available(); avail >= 0 {
			avail = max(0, avail-reserve)
			if t, ok := fits(lo); !ok || t > avail {
				return 0, t, fmt.Errorf("%w: CVVDP strip pairs: not even %d-row windows of a %d-wide image fit (%d bytes available)",
					zenmetrics.ErrOutOfMemory, lo, ws[0], avail)
			}
			hi := h0 // the largest window that fits
			winRows = lo
			for winRows < hi {
				mid := (winRows + hi + 1) / 2
				if t, ok := fits(mid); ok && t <= avail {
					winRows = mid
				} else {
					hi = mid - 1
				}
			}
		}
	}
	t, ok := fits(winRows)
	if !ok {
		return 0, t, fmt.Errorf("%w: CVVDP strip pairs: a %d×%d image exceeds the device's buffer limits", zenmetrics.ErrUnsupported, ws[0], h0)
	}
	return winRows, t, nil
}

// takePair takes a strip-pair reference's buffers (device thread) and
// writes the constants, and makes the host planes.
func (r *reference) takePair(g *webgpu.GPU) error {
	raw := pairRaw(r.plan.W[0], r.st.winRows)
	sizes, _ := pairSizes(r.plan.W, r.plan.H, r.st.winRows, raw)
	return r.takeWindowed(g, sizes, raw)
}

// pyramidPair builds im's Gaussian levels from 1 on (device thread):
// level 1 in chunks of its rows, each from the crop of im it needs,
// unpacked into level 0's window buffer (the reduce's intermediate in hb),
// then the coarser levels whole.
func (r *reference) pyramidPair(g *webgpu.GPU, im *zenmetrics.Image) error {
	p, k := r.plan, r.k
	h0, h1 := p.H[0], p.H[1]
	// A chunk of c level-1 rows needs at most 2c + 3 rows of level 0.
	chunk := max(1, (r.st.winRows-3)/2)
	for i0 := 0; i0 < h1; i0 += chunk {
		if err := g.Context().Err(); err != nil {
			return err
		}
		i1 := min(i0+chunk, h1)
		c0, c1 := max(0, 2*i0-2), min(h0, 2*i1+1)
		pr := r.levelParams(0, whole(h0), im)
		pr.G0, pr.GH = uint32(c0), uint32(c1-c0)
		pr.RSrc0, pr.RSrcH, pr.ROut0, pr.ROutH = uint32(c0), uint32(c1-c0), uint32(i0), uint32(i1-i0)
		g.Write(r.pu[0], 0, webgpu.Bytes(&pr))
		e := g.Encoder()
		if err := r.up.Put(g, nil, &r.own, webgpu.StripCrop(im, c0, c1)); err != nil {
			e.Discard()
			return err
		}
		e.Dispatch(k.unpack, webgpu.Groups(p.W[0], wg2), webgpu.Groups(c1-c0, wg2), 1, r.pu[0], r.kb, r.lut, r.up.Raw, r.g[0])
		e.Dispatch(k.reduceV, webgpu.Groups(p.W[0], wg2), webgpu.Groups(i1-i0, wg2), nCh, r.pu[0], r.kb, r.g[0], r.hb)
		e.Dispatch(k.reduceH, webgpu.Groups(p.W[1], wg2), webgpu.Groups(i1-i0, wg2), nCh, r.pu[0], r.kb, r.hb, r.g[1])
		if err := e.Submit(); err != nil {
			return err
		}
	}
	r.setLevel(g, 0, whole(h0), nil)
	e := g.Encoder()
	for l := 1; l+1 < p.Levels; l++ {
		e.Dispatch(k.reduceV, webgpu.Groups(p.W[l], wg2), webgpu.Groups(p.H[l+1], wg2), nCh, r.pu[l], r.kb, r.g[l], r.rtmp)
		e.Dispatch(k.reduceH, webgpu.Groups(p.W[l+1], wg2), webgpu.Groups(p.H[l+1], wg2), nCh, r.pu[l], r.kb, r.rtmp, r.g[l+1])
	}
	return e.Submit()
}
