package zensim

import (
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
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

// checker follows the launches of one scenario: the common checks
// (cudatest.Launches), then zensim's own.
type checker struct {
	cudatest.Launches
	lay   layout
	w, h  int
	dims  [][2]int
	rows  int    // rows converted so far
	next  string // the kernel the per-scale sequence expects next
	scale int    // the scale of that sequence
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, l layout, w, h int, dims [][2]int) *checker {
	c := &checker{lay: l, w: w, h: h, dims: dims, next: "hblur"}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs,
		Unread: func(k, p string, ints map[string]int) bool {
			return k == "xyb" && ints["cmp"] == 0 && (p == "ref" || p == "flag")
		}}
	return c
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
	seq := func() {
		if l.K.Name != c.next {
			t.Errorf("%s: %s expected at scale %d", name, c.next, c.scale)
		}
		if l.K.Name == "merge" {
			pw = c.dims[min(c.scale, len(c.dims)-1)][0] // merge has no width
		}
		if c.scale >= len(c.dims) || pw != c.dims[c.scale][0] || h != c.dims[c.scale][1] {
			t.Fatalf("%s: %d×%d at scale %d of %v", name, pw, h, c.scale, c.dims)
		}
		if l.K.Name != "merge" && ints["modes"] != modesOf(c.scale) {
			t.Errorf("%s: modes %#x at scale %d, want %#x", name, ints["modes"], c.scale, modesOf(c.scale))
		}
	}
	switch l.K.Name {
	case "xyb":
		y0, y1 := ints["y0"], ints["y1"]
		if ints["w"] != c.w || h != c.h || pw != c.dims[0][0] || y0 != c.rows || y1 <= y0 || y1 > c.h {
			t.Errorf("%s: rows [%d, %d) of %d×%d (%d wide) after %d rows", name, y0, y1, ints["w"], h, pw, c.rows)
		}
		if ints["stride"] != c.lay.stride || ints["channels"] != c.lay.channels || ints["bps"] != c.lay.bps || ints["alpha"] != c.lay.alpha {
			t.Errorf("%s: layout %v, image %+v", name, ints, c.lay)
		}
		c.rows = y1
		c.Cover(a, pw, y1-y0)
	case "down":
		sw, sh, dw, dh := ints["sw"], ints["sh"], ints["dw"], ints["dh"]
		ok := false
		for s := 1; s < len(c.dims); s++ {
			ok = ok || (c.dims[s-1] == [2]int{sw, sh} && c.dims[s] == [2]int{dw, dh})
		}
		if !ok || dw != sw/2 || dh != sh/2 {
			t.Errorf("%s: %d×%d to %d×%d is no step of %v", name, sw, sh, dw, dh, c.dims)
		}
		c.Cover(a, dw, dh)
	case "hblur":
		seq()
		grid(cuda.Dim3{X: cuda.Groups(h, hblurRows), Y: 3, Z: 1})
		c.next = "vstats"
	case "vstats":
		seq()
		grid(cuda.Dim3{X: cuda.Groups(pw, vstatsThreads), Y: uint32(strips(h)), Z: 3})
		c.next = "chain"
	case "chain":
		seq()
		grid(cuda.Dim3{X: uint32(strips(h)), Y: 3, Z: 1})
		c.next = "merge"
	case "merge":
		seq()
		if ints["scale"] != c.scale {
			t.Errorf("%s: scale %d, want %d", name, ints["scale"], c.scale)
		}
		grid(cuda.Dim3{X: 1, Y: 1, Z: 1})
		c.next, c.scale = "hblur", c.scale+1
	}
	c.Buffers(a)
}

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	pw, h := int64(ints["pw"]), int64(ints["h"])
	ns, us := int64(strips(int(h))), int64(units(int(pw)))
	switch {
	case kname == "xyb" && pname == "raw":
		return int64(c.lay.stride)*int64(ints["y1"]-1) + int64(ints["w"])*int64(c.lay.channels*c.lay.bps)
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
	case pname == "lanes":
		return 4 * 3 * ns * us * strip * nq
	case pname == "sums" && kname == "merge":
		return 8 * 3 * int64(strips(ints["h"])) * nq
	case pname == "sums":
		return 8 * 3 * ns * nq
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
		dims := scaleDims(w, h)
		fa := cudatest.NewFake()
		tab, rp := fakeRef(fa, dims)
		lay := func(f zenmetrics.PixelFormat, pad int) layout {
			return layoutOf(&zenmetrics.Image{Width: w, Height: h, Format: f, Stride: w*f.BytesPerPixel() + pad})
		}
		rl, dl := lay(rf, 0), lay(df, 3)
		rawOf := func(l layout) int64 { return int64(l.stride)*int64(h-1) + int64(w*l.channels*l.bps) }
		s := &slot{}
		fillSlot(s, dims, max(rawOf(rl), rawOf(dl)), fa.Alloc)
		// side records and checks one side: the conversion as the
		// bytes arrive in chunks of chunk bytes, then tail; written
		// says what holds data before (the uploads, and the
		// reference pyramid when scoring).
		side := func(l layout, chunk int64, cmp, out, flag *cuda.Buffer, written []*cuda.Buffer, tail func(q launch.Launcher) error) *checker {
			c := newChecker(t, sigs, l, w, h, dims)
			c.Wrote(append([]*cuda.Buffer{s.raw, tab}, written...)...)
			u := cudatest.Rows{H: h, Stride: int64(l.stride), Row: int64(w * l.channels * l.bps), Chunk: chunk, Y1Arg: 6}
			cudatest.Record(t, name, u, func(q launch.Launcher) func(int64) error {
				return converter(q, k, w, h, dims[0][0], rawOf(l), l, s.raw, tab, cmp, out, flag)
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
				return queueStats(q, k, dims, s, rp)
			})
			if !c.Written[s.res.Ptr] || !c.Written[s.flag.Ptr] || c.scale != len(dims) || c.next != "hblur" {
				t.Errorf("%s: %d of %d scales merged (next %s); results or flag never written", name, c.scale, len(dims), c.next)
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
		fillSlot(&slot{}, dims, worstRaw(w, h), fa.Alloc)
		var held int64
		for _, b := range fa.Bufs {
			held += b.Size
		}
		if est := estimate(w, h, worstRaw(w, h)); est != held {
			t.Errorf("%dx%d: estimate %d, buffers %d", w, h, est, held)
		}
		if n := len(refSizes(dims)) + len((&slot{dist: make([]*cuda.Buffer, len(dims))}).buffers()); len(fa.Bufs) != n {
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
