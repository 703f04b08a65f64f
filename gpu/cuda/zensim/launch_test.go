package zensim

import (
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// fakeRef allocates a reference's buffers (the tables, one per scale)
// with fa, in prepare's order.
func fakeRef(fa *cudaemu.FakeAlloc, dims [][2]int) (tab *cuda.Buffer, ref []*cuda.Buffer) {
	sizes := refSizes(dims)
	tab = fa.Alloc(sizes[0])
	for s := range dims {
		ref = append(ref, fa.Alloc(sizes[1+s]))
	}
	return tab, ref
}

// These tests need no GPU: the host's kernel sequences (converter,
// queuePyramid, queueStats: the very functions Prepare and Score run) are
// recorded over fake device buffers, and every launch is checked against
// zensim.cu's declarations and assumptions: argument kinds, block shape,
// a grid that covers what the kernel indexes with no block starting
// outside it, buffers large enough for what the kernel reaches, no buffer
// passed twice, no input read before some earlier launch (or an upload)
// wrote it, every row converted once, the scales in zensim's order and
// sizes with their channel modes, and each scale's results merged.

// blockOf is the block shape each kernel is written for.
func blockOf(name string) cuda.Dim3 {
	switch name {
	case "hblur":
		return cuda.Dim3{X: hblurThreads, Y: 1, Z: 1}
	case "vstats":
		return cuda.Dim3{X: vstatsThreads, Y: 1, Z: 1}
	case "chain":
		return cuda.Dim3{X: chainThreads, Y: 1, Z: 1}
	case "merge":
		return cuda.Dim3{X: mergeThreads, Y: 1, Z: 1}
	}
	return cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// checker follows the launches of one scenario over a geometry (a whole
// image: one band; strips: every band): the common checks
// (cudatest.Launches), then zensim's own. Conversions name their band by
// order: each side's conversions go through g's bands in order, the
// reference's (cmp 0) and the distorted image's (cmp 1) each, and the
// blurs and stats that follow are the last distorted band's.
type checker struct {
	cudatest.Launches
	g      *geom
	lays   [2]layout                     // the reference's and the distorted image's uploads
	refOf  func(band int) []*cuda.Buffer // the reference pyramid a band's stats read (nil: unchecked)
	conv   [2]int                        // conversions started per side
	cur    *band                         // the band of the last conversion
	rows   int                           // its rows converted so far
	next   string                        // the kernel the per-scale sequence expects next ("" any)
	scale  int                           // the scale of that sequence in the current band
	grid   cuda.Dim3                     // the launch being checked
	owned  [][]int                       // per scale, the bands that summed each strip
	merged []int                         // per scale, its merges
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, g *geom, refLay, distLay layout) *checker {
	c := &checker{g: g, lays: [2]layout{refLay, distLay}, scale: -1, merged: make([]int, len(g.img))}
	for _, d := range g.img {
		c.owned = append(c.owned, make([]int, nstrips(d[1])))
	}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs,
		Unread: func(k, p string, ints map[string]int) bool {
			return k == "xyb" && ints["cmp"] == 0 && (p == "ref" || p == "flag")
		}}
	return c
}

// scaleOf is the scale of band b whose planes are pw×h (-1: none).
func scaleOf(b *band, pw, h int) int {
	for s, d := range b.dims {
		if d == [2]int{pw, h} {
			return s
		}
	}
	return -1
}

func (c *checker) check(i int, l cudaemu.Launch) {
	t := c.T
	a := c.Begin(i, l)
	name, ints := a.Name, a.Ints
	pw, h := ints["pw"], ints["h"]
	grid := func(want cuda.Dim3) {
		if l.Grid != want {
			t.Errorf("%s: grid %+v, want %+v", name, l.Grid, want)
		}
	}
	// stats checks a blur or stats launch: its scale in the current
	// band, in sequence, with the scale's modes and the band's reference.
	stats := func(pw, h int) (*band, int) {
		if c.next != "" && l.K.Name != c.next {
			t.Errorf("%s: %s expected at scale %d", name, c.next, c.scale)
		}
		b := c.cur
		if b == nil || c.conv[1] == 0 {
			t.Fatalf("%s: before any distorted band", name)
		}
		sc := scaleOf(b, pw, h)
		if sc < 0 || (l.K.Name == "hblur" && sc <= c.scale) || (l.K.Name != "hblur" && sc != c.scale) {
			t.Fatalf("%s: %d×%d at scale %d of band %+v (%v)", name, pw, h, sc, b.Strip, b.dims)
		}
		if ints["modes"] != modesOf(sc) {
			t.Errorf("%s: modes %#x at scale %d, want %#x", name, ints["modes"], sc, modesOf(sc))
		}
		if c.refOf != nil && l.K.Name != "chain" && a.Args[0].(*cuda.Buffer) != c.refOf(c.conv[1] - 1)[sc] {
			t.Errorf("%s: not band %d's reference at scale %d", name, c.conv[1]-1, sc)
		}
		c.scale = sc
		return b, sc
	}
	switch l.K.Name {
	case "xyb":
		side := ints["cmp"]
		y0, y1 := ints["y0"], ints["y1"]
		if y0 == 0 {
			if c.cur != nil && c.rows != c.cur.Rows() {
				t.Errorf("%s: a new conversion after %d of %d rows", name, c.rows, c.cur.Rows())
			}
			if c.conv[side] >= len(c.g.bands) {
				t.Fatalf("%s: conversion %d of side %d, %d bands", name, c.conv[side], side, len(c.g.bands))
			}
			c.cur, c.rows = &c.g.bands[c.conv[side]], 0
			c.conv[side]++
			if side == 1 {
				c.next, c.scale = "", -1
			}
		}
		b, lay := c.cur, c.lays[side]
		if b == nil || ints["w"] != c.g.w || ints["ih"] != c.g.h || ints["oy"] != b.C0 || h != b.Rows() || pw != b.dims[0][0] ||
			y0 != c.rows || y1 <= y0 || y1 > h {
			t.Errorf("%s: rows [%d, %d) of %d×%d (%d wide) at image row %d of %d after %d rows; band %+v", name, y0, y1,
				ints["w"], h, pw, ints["oy"], ints["ih"], c.rows, b)
		}
		if ints["stride"] != lay.stride || ints["channels"] != lay.channels || ints["bps"] != lay.bps || ints["alpha"] != lay.alpha {
			t.Errorf("%s: layout %v, image %+v", name, ints, lay)
		}
		if c.refOf != nil && side == 1 && a.Args[14].(*cuda.Buffer) != c.refOf(c.conv[1] - 1)[0] {
			t.Errorf("%s: compared with another band's reference", name)
		}
		if c.refOf != nil && side == 0 && a.Args[15].(*cuda.Buffer) != c.refOf(c.conv[0] - 1)[0] {
			t.Errorf("%s: the reference's conversion is not into its band's pyramid", name)
		}
		c.rows = y1
		c.Cover(a, pw, y1-y0)
	case "down":
		sw, sh, dw, dh := ints["sw"], ints["sh"], ints["dw"], ints["dh"]
		ok := false
		for s := 1; c.cur != nil && s < len(c.cur.dims); s++ {
			ok = ok || (c.cur.dims[s-1] == [2]int{sw, sh} && c.cur.dims[s] == [2]int{dw, dh})
		}
		if !ok || dw != sw/2 || dh != sh/2 || c.rows != c.cur.Rows() {
			t.Errorf("%s: %d×%d to %d×%d is no step of the converted band's %v", name, sw, sh, dw, dh, c.cur.dims)
		}
		c.Cover(a, dw, dh)
	case "hblur":
		stats(pw, h)
		grid(cuda.Dim3{X: cuda.Groups(h, hblurRows), Y: 3, Z: 1})
		c.next = "vstats"
	case "vstats":
		b, sc := stats(pw, h)
		gh, oy, k0, n := ints["gh"], ints["oy"], ints["k0"], b.k1[sc]-b.k0[sc]
		if gh != c.g.img[sc][1] || oy != b.C0>>sc || k0 != b.k0[sc] || n <= 0 {
			t.Errorf("%s: image rows %d, crop at %d, strips from %d; band %+v at scale %d owns [%d, %d)", name, gh, oy, k0, b.Strip, sc, b.k0[sc], b.k1[sc])
		}
		// Every row a strip reads (its rows and 5 on either side, clipped
		// to the image) is in the crop.
		for k := k0; k < k0+n; k++ {
			top, bot := max(k*strip-cpuz.BlurRadius, 0), min(min(k*strip+strip, gh)+cpuz.BlurRadius, gh)
			if top < oy || bot > oy+h {
				t.Errorf("%s: strip %d reads rows [%d, %d), the crop holds [%d, %d)", name, k, top, bot, oy, oy+h)
			}
		}
		grid(cuda.Dim3{X: cuda.Groups(pw, vstatsThreads), Y: uint32(n), Z: 3})
		c.next = "chain"
	case "chain":
		gh := ints["gh"]
		b, sc := stats(pw, c.cur.dims[max(c.scale, 0)][1])
		k0, n := ints["k0"], b.k1[sc]-b.k0[sc]
		if gh != c.g.img[sc][1] || k0 != b.k0[sc] {
			t.Errorf("%s: image rows %d, strips from %d; band %+v at scale %d owns [%d, %d)", name, gh, k0, b.Strip, sc, b.k0[sc], b.k1[sc])
		}
		for k := k0; k < k0+n && k < len(c.owned[sc]); k++ {
			c.owned[sc][k]++
		}
		grid(cuda.Dim3{X: uint32(n), Y: 3, Z: 1})
		c.next = ""
	case "merge":
		sc := ints["scale"]
		if sc < 0 || sc >= len(c.g.img) || h != c.g.img[sc][1] || c.next != "" {
			t.Fatalf("%s: scale %d of %d rows (next %q), the image's scales %v", name, sc, h, c.next, c.g.img)
		}
		for k, n := range c.owned[sc] {
			if n != 1 {
				t.Errorf("%s: strip %d of scale %d summed by %d bands before the merge", name, k, sc, n)
			}
		}
		c.merged[sc]++
		grid(cuda.Dim3{X: 1, Y: 1, Z: 1})
	}
	c.grid = l.Grid
	c.Buffers(a)
}

// done checks the end of a score: every band's distorted crop converted
// whole, every scale merged once.
func (c *checker) done(name string) {
	if c.conv[1] != len(c.g.bands) || c.rows != c.cur.Rows() {
		c.T.Errorf("%s: %d of %d bands converted (the last %d of %d rows)", name, c.conv[1], len(c.g.bands), c.rows, c.cur.Rows())
	}
	for sc, n := range c.merged {
		if n != 1 {
			c.T.Errorf("%s: scale %d merged %d times", name, sc, n)
		}
	}
}

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	pw, h := int64(ints["pw"]), int64(ints["h"])
	us := int64(units(int(pw)))
	switch {
	case kname == "xyb" && pname == "raw":
		l := c.lays[ints["cmp"]]
		return int64(l.stride)*int64(ints["y1"]-1) + int64(ints["w"])*int64(l.channels*l.bps)
	case kname == "xyb" && pname == "tab":
		return 4 * tabLen
	case kname == "xyb" && pname == "flag":
		return 4
	case kname == "down" && pname == "src":
		return 12 * int64(ints["sw"]) * int64(ints["sh"])
	case kname == "down":
		return 12 * int64(ints["dw"]) * int64(ints["dh"])
	case pname == "ref" || pname == "dist" || pname == "out":
		return 12 * pw * h
	case pname == "hb":
		return 48 * pw * h
	case pname == "lanes" && kname == "vstats":
		return 4 * 3 * int64(c.grid.Y) * us * strip * nq
	case pname == "lanes":
		return 4 * 3 * int64(c.grid.X) * us * strip * nq
	case pname == "sums" && kname == "merge":
		return 8 * 3 * int64(nstrips(ints["h"])) * nq
	case pname == "sums":
		return 8 * 3 * int64(nstrips(ints["gh"])) * nq
	case pname == "res":
		return 8 * 3 * nq * int64(ints["scale"]+1)
	}
	c.T.Fatalf("no size rule for %s.%s", kname, pname)
	return 0
}

func TestLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	k := newKernels()
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.Gray8}
	sizes := [][2]int{{8, 8}, {8, 100}, {100, 8}, {9, 13}, {15, 17}, {37, 29}, {64, 48}, {97, 70}, {500, 20}, {200, 131}, {1023, 517}}
	cudatest.FormatPairs(sizes, formats, func(name string, w, h int, rf, df zenmetrics.PixelFormat) {
		g := newGeom(w, h, nil)
		dims := g.img
		fa := cudatest.NewFake()
		tab, rp := fakeRef(fa, dims)
		lay := func(f zenmetrics.PixelFormat, pad int) layout {
			return layoutOf(&zenmetrics.Image{Width: w, Height: h, Format: f, Stride: w*f.BytesPerPixel() + pad})
		}
		rl, dl := lay(rf, 0), lay(df, 3)
		rawOf := func(l layout) int64 { return int64(l.stride)*int64(h-1) + int64(w*l.channels*l.bps) }
		s := &slot{}
		fillSlot(s, g, max(rawOf(rl), rawOf(dl)), fa.Alloc)
		// side records and checks one side: the conversion as the
		// bytes arrive in chunks of chunk bytes, then tail; written
		// says what holds data before (the uploads, and the
		// reference pyramid when scoring).
		side := func(l layout, chunk int64, cmp, out, flag *cuda.Buffer, written []*cuda.Buffer, tail func(q launch.Launcher) error) *checker {
			c := newChecker(t, sigs, g, l, l)
			c.refOf = func(int) []*cuda.Buffer { return rp }
			c.Wrote(append([]*cuda.Buffer{s.raw, tab}, written...)...)
			u := cudatest.Rows{H: h, Stride: int64(l.stride), Row: int64(w * l.channels * l.bps), Chunk: chunk, Y1Arg: 8}
			cudatest.Record(t, name, u, func(q launch.Launcher) func(int64) error {
				return converter(q, k, w, h, &g.bands[0], rawOf(l), l, s.raw, tab, cmp, out, flag)
			}, tail, c.check)
			if c.rows != h {
				t.Errorf("%s: %d of %d rows converted", name, c.rows, h)
			}
			return c
		}
		// The reference, its bytes arriving in chunks of 7 rows.
		c := side(rl, 7*int64(rl.stride)+1, nil, rp[0], nil, nil, func(q launch.Launcher) error {
			return queuePyramid(q, k, dims, rp)
		})
		for _, b := range rp {
			if !c.Written[b.Ptr] {
				t.Errorf("%s: a reference scale is never written", name)
			}
		}
		// The distorted image, in one chunk and in chunks of 3
		// rows and a bit.
		for _, chunk := range []int64{1 << 40, 3*int64(dl.stride) + 5} {
			c := side(dl, chunk, rp[0], s.dist[0], s.flag, rp, func(q launch.Launcher) error {
				if err := queuePyramid(q, k, dims, s.dist); err != nil {
					return err
				}
				return queueStats(q, k, g, s, rp)
			})
			c.done(name)
			if !c.Written[s.res.Ptr] || !c.Written[s.flag.Ptr] {
				t.Errorf("%s: results or flag never written", name)
			}
		}
	})
}

// The slot and reference buffer lists agree with the estimate, the
// geometry with cpu/zensim's, and a launch with the wrong number or kind
// of arguments is refused before it reaches the driver.
func TestEstimateAndArgs(t *testing.T) {
	for _, sz := range [][2]int{{8, 8}, {37, 29}, {1000, 700}, {4096, 4096}} {
		w, h := sz[0], sz[1]
		fa := cudatest.NewFake()
		dims := scaleDims(w, h)
		fakeRef(fa, dims)
		fillSlot(&slot{}, newGeom(w, h, nil), worstRaw(w, h), fa.Alloc)
		var held int64
		for _, b := range fa.Bufs {
			held += b.Size
		}
		if est := estimate(w, h, worstRaw(w, h)); est != held {
			t.Errorf("%dx%d: estimate %d, buffers %d", w, h, est, held)
		}
		if n := len(refSizes(dims)) + len((&slot{dist: make([]*cuda.Buffer, len(dims)), sums: make([]*cuda.Buffer, len(dims))}).buffers()); len(fa.Bufs) != n {
			t.Errorf("%dx%d: %d buffers, want %d", w, h, len(fa.Bufs), n)
		}
		t.Logf("%dx%d: %d scales, %.1f bytes per pixel with an RGBA16 upload", w, h, len(dims), float64(held)/float64(w*h))
	}
	if fits(7, 100) || fits(100, 7) || !fits(8, 8) || fits(8, 8*65535+1) || !fits(20000, 20000) || fits(47000, 47000) {
		t.Error("fits: the minimum, the int indexing or the grid limit is not where the kernels need it")
	}
	k := newKernels()
	b := &cuda.Buffer{}
	if err := launch.CheckArgs(&k.down, []any{b, 16, 16, 8, 8, b}); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
	for _, args := range [][]any{{b, 16, 16, 8, 8}, {b, 16, 16, 8, 8, b, b}, {b, 16, 16, 8, float32(8), b}, {b, b, 16, 8, 8, b}} {
		if err := launch.CheckArgs(&k.down, args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
