package cvvdp

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Strips (zenmetrics.ModeStrip).
//
// What a whole image holds per pixel is, in float32s: the reference's
// R·S·gain and S on every band (6 × ~4/3), the distorted image's Gaussian
// pyramid (3 × ~4/3) and three full-size plane triples for a band's
// per-pixel work (9), besides the raw upload. In strips the Gaussian
// pyramids stay whole on the device (every level is needed to build the
// next, and the base band's background is a mean over the whole level),
// but a band's per-pixel work runs on windows of its rows: the rows a pass
// owns (whose sums it writes) and 6 rows either side, which is the reach
// of the masker's vertical blur, the only vertical filter that work has
// (the expand reads the coarser Gaussian level, which is whole). The
// reference's R·S·gain and S are computed the same way at Prepare, read
// back and kept on the host; each score uploads a window's rows of them
// with the window. So the device holds the pyramid, the raw upload, the
// reduce passes' intermediate and five window-sized plane triples.
//
// Every window computes its rows from the same inputs with the same
// kernels as a whole band, and the owned rows tile the band, so the row
// sums, and the score, are the whole image's bit for bit (TestStrips).

// halo is the rows a window adds either side of its owned rows: the
// vertical blur's radius (pu_dilate · 2).
const halo = 6

// minOwned is the fewest owned rows a window of the finest band may have
// (fewer, and the halos dominate the work).
const minOwned = 16

// strips is a strip reference's state: the window capacity and the
// reference's bands on the host.
type strips struct {
	// winRows is the finest band's window height; a window of band b has
	// at most winRows·W[0] pixels.
	winRows int
	// rp and s are the reference's R·S·gain and S of each band below the
	// base band, three planes of W[b]×H[b] each.
	rp, s [][]float32
	// rpW and sW receive a window of them.
	rpW, sW *webgpu.Buffer
	// pair is set for strip pairs (pair.go): level 0 is a window too.
	pair bool
}

// windows cuts band b of a pyramid with levels ws×hs into windows of at
// most winRows·ws[0] pixels: owned rows in runs of the rows that fit less
// the halos, each computed with halo rows either side (within the band).
func windows(ws, hs []int, winRows, b int) []window {
	h := hs[b]
	rows := winRows * ws[0] / ws[b]
	if rows >= h {
		return []window{whole(h)}
	}
	// The planners keep winRows at least 2·halo + 1 unless the finest
	// band fits whole (then so does every band): step ≥ 1.
	step := max(1, rows-2*halo)
	var out []window
	for o0 := 0; o0 < h; o0 += step {
		o1 := min(o0+step, h)
		out = append(out, window{max(0, o0-halo), min(h, o1+halo), o0, o1})
	}
	return out
}

// reduceTmp is the floats of the reduce passes' intermediate: three
// planes of a level's width by the next level's height, the largest.
func reduceTmp(ws, hs []int) int64 {
	var n int64
	for l := 0; l+1 < len(ws); l++ {
		n = max(n, int64(ws[l])*int64(hs[l+1]))
	}
	return nCh * n
}

// stripSizes lists the device buffers of a strip reference, in
// takeStrip's order, and their total with the uniforms and the raw upload
// (through queue writes: no staging buffer).
func stripSizes(ws, hs []int, winRows int, raw int64) (list []int64, total int64) {
	n := len(ws)
	add := func(v int64) {
		v = max(v, 4)
		list = append(list, v)
		total += v
	}
	add(4 * int64(kCSF+nCh*32*n)) // K
	add(4 * lutLen)               // LUT
	for l := 0; l < n; l++ {
		add(4 * nCh * int64(ws[l]) * int64(hs[l])) // g
	}
	add(4 * (4 + nCh*int64(ws[n-1])*int64(hs[n-1]))) // rb
	add(4 * reduceTmp(ws, hs))                       // rtmp
	win := 4 * nCh * int64(ws[0]) * int64(winRows)
	for i := 0; i < 5; i++ {
		add(win) // ex, mm, hb, rpW, sW
	}
	add(4 * nCh * int64(sumRows(hs))) // sums
	total += int64(n) * paramsSize    // uniforms
	total += (raw + 3) &^ 3           // raw upload
	return list, total
}

// planStrips chooses the window height for a pyramid with levels ws×hs:
// owned rows band (the finest band's; 0: as many as fit the memory
// available now, all of them when that is unknown). It returns the
// window height and the device bytes. reserve is taken off the memory
// available first (the distortion map's planes).
func planStrips(b *webgpu.Backend, ws, hs []int, band int, reserve int64) (winRows int, total int64, err error) {
	lim := b.Device().Limits()
	h0 := hs[0]
	raw := worstRaw(ws[0], h0)
	fits := func(rows int) (int64, bool) {
		list, t := stripSizes(ws, hs, rows, raw)
		for _, n := range append(list, raw) {
			if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
				return t, false
			}
		}
		return t, true
	}
	if band > 0 {
		winRows = min(h0, band+2*halo)
	} else {
		winRows = h0
		if avail := b.Available(); avail >= 0 {
			avail = max(0, avail-reserve)
			fixed, _ := fits(0)
			perRow := 5 * 4 * nCh * int64(ws[0])
			winRows = int(min(int64(h0), max(0, avail-fixed)/perRow))
			if winRows < min(h0, minOwned+2*halo) {
				return 0, fixed, fmt.Errorf("%w: CVVDP strips: not even %d-row windows of a %d-wide image fit next to its pyramids (%d bytes available)",
					zenmetrics.ErrOutOfMemory, minOwned+2*halo, ws[0], avail)
			}
		}
	}
	t, ok := fits(winRows)
	if !ok {
		return 0, t, fmt.Errorf("%w: CVVDP strips: a %d×%d image exceeds the device's buffer limits", zenmetrics.ErrUnsupported, ws[0], h0)
	}
	return winRows, t, nil
}

// takeStrip takes a strip reference's buffers (device thread) and writes
// the constants, and makes the host planes.
func (r *reference) takeStrip(g *webgpu.GPU, raw int64) error {
	sizes, _ := stripSizes(r.plan.W, r.plan.H, r.st.winRows, raw)
	return r.takeWindowed(g, sizes, raw)
}

// takeWindowed takes the buffers of a strip or strip-pair reference, in
// the order of sizes (stripSizes' or pairSizes' list, which differ only
// in the sizes), then the common ones and the upload of raw bytes, and
// makes the host planes of the reference's bands.
func (r *reference) takeWindowed(g *webgpu.GPU, sizes []int64, raw int64) error {
	p := r.plan
	n := p.Levels
	o := &r.own
	next := func() int64 { v := sizes[0]; sizes = sizes[1:]; return v }
	r.kb = o.Storage(g, next())
	r.lut = o.Storage(g, next())
	r.g = make([]*webgpu.Buffer, n)
	for l := range r.g {
		r.g[l] = o.Storage(g, next())
	}
	r.rb = o.Storage(g, next())
	r.rtmp = o.Storage(g, next())
	r.ex = o.Storage(g, next())
	r.mm = o.Storage(g, next())
	r.hb = o.Storage(g, next())
	r.st.rpW = o.Storage(g, next())
	r.st.sW = o.Storage(g, next())
	r.sums = o.Storage(g, next())
	if err := r.takeCommon(g); err != nil {
		return err
	}
	if err := r.up.Ensure(g, o, raw); err != nil {
		return err
	}
	r.st.rp, r.st.s = make([][]float32, n-1), make([][]float32, n-1)
	for b := 0; b+1 < n; b++ {
		r.st.rp[b] = make([]float32, nCh*p.W[b]*p.H[b])
		r.st.s[b] = make([]float32, nCh*p.W[b]*p.H[b])
	}
	return nil
}

// pyramidStrip uploads im (queue writes) and builds its Gaussian pyramid
// in one submission (device thread).
func (r *reference) pyramidStrip(g *webgpu.GPU, im *zenmetrics.Image) error {
	r.setImage(g, im)
	e := g.Encoder()
	if err := r.up.Put(g, nil, &r.own, im); err != nil {
		e.Discard()
		return err
	}
	r.encodePyramid(e)
	return e.Submit()
}

// stripBand runs band b window by window (device thread): for each, it
// writes the band's parameters for the window and, in strip pairs on the
// finest band, records the unpacking of the window's crop of im into level
// 0's window buffer; then do records the window's work on the encoder and
// submits it. Queue writes run in order with the submissions around them,
// so the previous window's work has read what the next one overwrites.
func (r *reference) stripBand(g *webgpu.GPU, im *zenmetrics.Image, b int, do func(e *webgpu.Encoder, win window) error) error {
	p, st := r.plan, r.st
	crop := st.pair && b == 0
	for _, win := range windows(p.W, p.H, st.winRows, b) {
		if err := g.Context().Err(); err != nil {
			return err
		}
		var pr params
		if crop {
			pr = r.levelParams(0, win, im)
			pr.G0, pr.GH = uint32(win.w0), uint32(win.w1-win.w0)
		} else {
			pr = r.levelParams(b, win, nil)
		}
		g.Write(r.pu[b], 0, webgpu.Bytes(&pr))
		e := g.Encoder()
		if crop {
			if err := r.up.Put(g, nil, &r.own, webgpu.StripCrop(im, win.w0, win.w1)); err != nil {
				e.Discard()
				return err
			}
			e.Dispatch(r.k.unpack, webgpu.Groups(p.W[0], wg2), webgpu.Groups(win.w1-win.w0, wg2), 1, r.pu[0], r.kb, r.lut, r.up.Raw, r.g[0])
		}
		if err := do(e, win); err != nil {
			return err
		}
	}
	r.setLevel(g, b, whole(p.H[b]), nil)
	return nil
}

// pyramid builds im's Gaussian pyramid for a strip reference (device
// thread).
func (r *reference) pyramid(g *webgpu.GPU, im *zenmetrics.Image) error {
	if r.st.pair {
		return r.pyramidPair(g, im)
	}
	return r.pyramidStrip(g, im)
}

// prepareStrip computes the reference's bands window by window and reads
// their owned rows back to the host (device thread).
func (r *reference) prepareStrip(g *webgpu.GPU, ref *zenmetrics.Image) error {
	p, st := r.plan, r.st
	if err := r.pyramid(g, ref); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		w, plane := p.W[b], p.W[b]*p.H[b]
		err := r.stripBand(g, ref, b, func(e *webgpu.Encoder, win window) error {
			r.encodeRefBand(e, b, win, st.rpW, st.sW)
			wn := w * (win.w1 - win.w0)
			off, cnt := int64(w*(win.o0-win.w0))*4, int64(w*(win.o1-win.o0))*4
			type read struct {
				rb  *webgpu.Readback
				dst []float32
			}
			var reads []read
			for c := 0; c < nCh; c++ {
				for _, x := range []struct {
					buf  *webgpu.Buffer
					host []float32
				}{{st.rpW, st.rp[b]}, {st.sW, st.s[b]}} {
					rb, err := e.ReadBack(x.buf, int64(c*wn)*4+off, cnt)
					if err != nil {
						e.Discard()
						return err
					}
					o := c*plane + win.o0*w
					reads = append(reads, read{rb, x.host[o : o+w*(win.o1-win.o0)]})
				}
			}
			if err := e.Submit(); err != nil {
				return err
			}
			for _, rd := range reads {
				if err := webgpu.ReadSlice(rd.rb, rd.dst); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	e := g.Encoder()
	e.Dispatch(r.k.baseRef, 1, 1, 1, r.pu[p.Levels-1], r.kb, r.g[p.Levels-1], r.rb)
	return e.SubmitAndWait()
}

// scoreStrip scores dist window by window and reads the row sums into out
// and, with the distortion map, each level's map values into bands
// (device thread).
func (r *reference) scoreStrip(g *webgpu.GPU, dist *zenmetrics.Image, out []float32, bands [][]float32) error {
	p, st := r.plan, r.st
	if err := r.pyramid(g, dist); err != nil {
		return err
	}
	for b := 0; b+1 < p.Levels; b++ {
		w, plane := p.W[b], p.W[b]*p.H[b]
		err := r.stripBand(g, dist, b, func(e *webgpu.Encoder, win window) error {
			wn := w * (win.w1 - win.w0)
			for c := 0; c < nCh; c++ {
				o := c*plane + win.w0*w
				webgpu.WriteSlice(g, st.rpW, int64(c*wn)*4, st.rp[b][o:o+wn])
				webgpu.WriteSlice(g, st.sW, int64(c*wn)*4, st.s[b][o:o+wn])
			}
			r.encodeDistBand(e, b, win, st.rpW, st.sW)
			return e.Submit()
		})
		if err != nil {
			return err
		}
	}
	e := g.Encoder()
	if r.heat == nil {
		e.Dispatch(r.k.baseDist, 1, 1, 1, r.pu[p.Levels-1], r.kb, r.g[p.Levels-1], r.rb, r.sums)
		return webgpu.SubmitRead(e, r.sums, 0, out)
	}
	e.Dispatch(r.k.baseDistMap, 1, 1, 1, r.pu[p.Levels-1], r.kb, r.g[p.Levels-1], r.rb, r.sums, r.heat[p.Levels-1])
	reads := make([]*webgpu.Readback, 0, 1+p.Levels)
	for i, buf := range append([]*webgpu.Buffer{r.sums}, r.heat...) {
		n := int64(len(out))
		if i > 0 {
			n = int64(len(bands[i-1]))
		}
		rb, err := e.ReadBack(buf, 0, 4*n)
		if err != nil {
			e.Discard()
			return err
		}
		reads = append(reads, rb)
	}
	if err := e.Submit(); err != nil {
		return err
	}
	for i, rb := range reads {
		dst := out
		if i > 0 {
			dst = bands[i-1]
		}
		if err := webgpu.ReadSlice(rb, dst); err != nil {
			return err
		}
	}
	return nil
}

// Strips reports the finest band's window count and that the reference
// is not resident on the device (its bands are uploaded per window); a
// whole image is one strip, resident (webgpu.StripInfo).
func (r *reference) Strips() (int, bool) {
	if r.st == nil {
		return 1, true
	}
	return len(windows(r.plan.W, r.plan.H, r.st.winRows, 0)), false
}
