package zensim

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// The kernel sequences, written against a launcher and buffers only (no
// device, no uploads), so that the tests replay them without a GPU and
// check every launch (launch_test.go) or run them on the CPU
// (emulate_test.go).

// layout describes the raw pixels in the upload buffer.
type layout struct {
	stride, channels, bps int
	alpha                 int // 1: the last sample is alpha
}

// units is the column units of a pw-wide plane: pw/8 groups of 8 columns
// (zensim's vector loop), then pw mod 8 single columns (its scalar tail).
func units(pw int) int { return pw/8 + pw%8 }

// nstrips is the number of zensim strips (16 output rows) of h rows.
func nstrips(h int) int { return (h + strip - 1) / strip }

// band is what one pass of the kernels computes: the crop rows [C0, C1)
// of the image (a whole image is one band, C0 = 0, C1 = h), its planes
// at every scale (dims: the image's padded width, the crop's rows halved
// as the image's are, as many scales as the image has: a crop alone
// might allow more or fewer), and per scale the image's zensim strips
// [k0, k1) whose values and sums the band owns (strip.go says why they
// are the whole image's bits).
type band struct {
	strips.Strip
	dims   [][2]int
	k0, k1 []int
}

// geom is a reference's geometry: the image's scales and its bands, and
// the tallest crop, which a slot's planes are sized to.
type geom struct {
	w, h  int
	img   [][2]int // the image's scales (padded width, rows)
	bands []band
	rows  int
}

// cropDims is the scales of a crop of rows rows of an image whose scales
// are img: the image's widths, rows halved.
func cropDims(img [][2]int, rows int) [][2]int {
	out := make([][2]int, len(img))
	for s, d := range img {
		out[s] = [2]int{d[0], rows >> s}
	}
	return out
}

// newGeom lays out a w×h image over the strips ss (nil: the whole image
// as one band). A band owns, at scale s, the strips that start in its
// interior: from (Y0>>s)/16 to (Y1>>s)/16, or to the scale's last strip
// for the band that ends the image; band boundaries are multiples of
// 2^s·16 (stripSpec.Align), so every strip of every scale has one owner.
func newGeom(w, h int, ss []strips.Strip) *geom {
	g := &geom{w: w, h: h, img: scaleDims(w, h)}
	if ss == nil {
		ss = []strips.Strip{{Y0: 0, Y1: h, C0: 0, C1: h}}
	}
	for _, st := range ss {
		b := band{Strip: st, dims: cropDims(g.img, st.Rows())}
		for s, d := range g.img {
			k0, k1 := (st.Y0>>s)/strip, nstrips(d[1])
			if st.Y1 != h {
				k1 = (st.Y1 >> s) / strip
			}
			b.k0, b.k1 = append(b.k0, k0), append(b.k1, max(k0, k1))
		}
		g.rows = max(g.rows, st.Rows())
		g.bands = append(g.bands, b)
	}
	return g
}

// slot is one scorer's device scratch with its worker (stream, staging):
// the raw upload, the distorted pyramid of the tallest crop (one buffer
// of three planes per scale), the horizontal blur of a scale (three
// channels, float4 per pixel, scale 0's size, reused), the records of a
// scale (vstats → chain, reused), the strip sums of every scale (chain →
// merge; a band fills its strips' slots, merge reads them all), the
// results and the identical-image flag.
type slot struct {
	wk    *cuda.Worker
	raw   *cuda.Buffer
	dist  []*cuda.Buffer
	hb    *cuda.Buffer
	lanes *cuda.Buffer
	sums  []*cuda.Buffer
	res   *cuda.Buffer
	flag  *cuda.Buffer
}

// resBytes is the results: NQ doubles per channel and scale.
const resBytes = int64(8 * nq * 3 * 4)

// outBytes is the read-back: the results, then the flag.
const outBytes = resBytes + 4

// pyramidSizes is the size of each scale's buffer (three planes).
func pyramidSizes(dims [][2]int) []int64 {
	out := make([]int64, len(dims))
	for s, d := range dims {
		out[s] = 12 * max(1, int64(d[0])*int64(d[1]))
	}
	return out
}

// slotSizes is the size of every buffer of a slot of g for uploads of up
// to raw bytes, in fillSlot's order: raw, the pyramid, hb, lanes, the
// sums of every scale, res, flag.
func slotSizes(g *geom, raw int64) []int64 {
	dims := cropDims(g.img, g.rows)
	out := append([]int64{raw}, pyramidSizes(dims)...)
	var lanes int64
	for _, b := range g.bands {
		for s, d := range b.dims {
			lanes = max(lanes, 4*3*int64(b.k1[s]-b.k0[s])*int64(units(d[0]))*strip*nq)
		}
	}
	out = append(out, 48*int64(dims[0][0])*int64(dims[0][1]), max(lanes, 4))
	for _, d := range g.img {
		out = append(out, 8*3*int64(nstrips(d[1]))*nq)
	}
	return append(out, resBytes, 4)
}

// fillSlot allocates a slot's device buffers with alloc (the device, or
// the tests' fake allocator), in slotSizes' order.
func fillSlot(s *slot, g *geom, raw int64, alloc func(int64) *cuda.Buffer) {
	sz := slotSizes(g, raw)
	n := len(g.img)
	s.raw = alloc(sz[0])
	s.dist = make([]*cuda.Buffer, n)
	for i := range n {
		s.dist[i] = alloc(sz[1+i])
	}
	s.hb, s.lanes = alloc(sz[1+n]), alloc(sz[2+n])
	s.sums = make([]*cuda.Buffer, n)
	for i := range n {
		s.sums[i] = alloc(sz[3+n+i])
	}
	s.res, s.flag = alloc(sz[3+2*n]), alloc(sz[4+2*n])
}

// buffers lists the slot's device buffers.
func (s *slot) buffers() []*cuda.Buffer {
	out := append([]*cuda.Buffer{s.raw}, s.dist...)
	out = append(out, s.hb, s.lanes)
	out = append(out, s.sums...)
	return append(out, s.res, s.flag)
}

// queueXYB converts rows [y0, y1) of band b's raw crop (w wide, of an
// image of ih rows) into scale 0's planes out; with cmp (ref not nil) it
// also compares them with ref's and sets flag where any bit differs.
func queueXYB(q launch.Launcher, k *kernels, w, ih int, b *band, y0, y1 int, lay layout, raw, tab, ref, out, flag *cuda.Buffer) error {
	if y1 <= y0 {
		return nil
	}
	cmp := 0
	if ref != nil {
		cmp = 1
	}
	pw, rows := b.dims[0][0], b.Rows()
	g, bl := pxGrid(pw, y1-y0)
	return q.Launch(&k.xyb, g, bl, raw, tab, w, pw, rows, ih, b.C0, y0, y1, lay.stride, lay.channels, lay.bps, lay.alpha, cmp, ref, out, flag)
}

// converter is the callback of an overlapped upload of total raw bytes
// (band b's crop of a w×ih image): given the bytes that have arrived (a
// prefix), it queues the conversion of the rows they complete and have
// not been converted yet.
func converter(q launch.Launcher, k *kernels, w, ih int, b *band, total int64, lay layout, raw, tab, ref, out, flag *cuda.Buffer) func(end int64) error {
	done := 0
	return func(end int64) error {
		rows := b.Rows()
		if end < total {
			rows = int(end / int64(lay.stride)) // rows whose bytes have all arrived
		}
		if err := queueXYB(q, k, w, ih, b, done, rows, lay, raw, tab, ref, out, flag); err != nil {
			return err
		}
		done = max(done, rows)
		return nil
	}
}

// queuePyramid queues the scales 1.. of pyramid p from its scale 0.
func queuePyramid(q launch.Launcher, k *kernels, dims [][2]int, p []*cuda.Buffer) error {
	for s := 1; s < len(dims); s++ {
		g, b := pxGrid(dims[s][0], dims[s][1])
		if err := q.Launch(&k.down, g, b, p[s-1], dims[s-1][0], dims[s-1][1], dims[s][0], dims[s][1], p[s]); err != nil {
			return err
		}
	}
	return nil
}

// queueScale queues, after both pyramids of band b, scale sc's blurs,
// records and the sums of the strips the band owns there (none: nothing
// to queue) into their slots of s.sums[sc].
func queueScale(q launch.Launcher, k *kernels, g *geom, b *band, sc int, s *slot, ref []*cuda.Buffer) error {
	pw, h, gh, m := b.dims[sc][0], b.dims[sc][1], g.img[sc][1], modesOf(sc)
	k0, n := b.k0[sc], b.k1[sc]-b.k0[sc]
	if n <= 0 {
		return nil
	}
	if err := q.Launch(&k.hblur, cuda.Dim3{X: cuda.Groups(h, hblurRows), Y: 3, Z: 1}, cuda.Dim3{X: hblurThreads, Y: 1, Z: 1},
		ref[sc], s.dist[sc], pw, h, m, s.hb); err != nil {
		return err
	}
	if err := q.Launch(&k.vstats, cuda.Dim3{X: cuda.Groups(pw, vstatsThreads), Y: uint32(n), Z: 3}, cuda.Dim3{X: vstatsThreads, Y: 1, Z: 1},
		ref[sc], s.dist[sc], s.hb, pw, h, gh, b.C0>>sc, k0, m, s.lanes); err != nil {
		return err
	}
	return q.Launch(&k.chain, cuda.Dim3{X: uint32(n), Y: 3, Z: 1}, cuda.Dim3{X: chainThreads, Y: 1, Z: 1},
		s.lanes, pw, gh, k0, m, s.sums[sc])
}

// queueMerge queues the merge of scale sc's strip sums (every band's) in
// strip order into s.res.
func queueMerge(q launch.Launcher, k *kernels, g *geom, sc int, s *slot) error {
	return q.Launch(&k.merge, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: mergeThreads, Y: 1, Z: 1},
		s.sums[sc], g.img[sc][1], sc, s.res)
}

// queueStats queues, after the distorted pyramid of a whole image (g's
// one band), every scale's blurs, records, strip sums and their merge
// into s.res.
func queueStats(q launch.Launcher, k *kernels, g *geom, s *slot, ref []*cuda.Buffer) error {
	for sc := range g.img {
		if err := queueScale(q, k, g, &g.bands[0], sc, s, ref); err != nil {
			return err
		}
		if err := queueMerge(q, k, g, sc, s); err != nil {
			return err
		}
	}
	return nil
}
