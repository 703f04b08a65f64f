package dssim

import (
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// These tests need no GPU: the host's kernel sequences (unpacker,
// queueReference, queueDistorted: the very functions Prepare and Score
// run) are recorded over fake device buffers, and every launch is checked
// against dssim.cu's declarations and assumptions: argument kinds, block
// shape, a grid that covers the plane with no block starting outside it
// (the blur tiles rely on that), buffers large enough for what the kernel
// indexes, no buffer passed twice, no input read before some earlier
// launch (or the upload) wrote it, the scales in dssim-core's order and
// sizes, every row unpacked once, scale 0's map never overwritten.

// blockOf is the block shape each kernel is written for.
func blockOf(name string) cuda.Dim3 {
	switch name {
	case "row_sums", "row_devs":
		return cuda.Dim3{X: rowThreads, Y: 1, Z: 1}
	case "mean", "finish":
		return cuda.Dim3{X: sumThreads, Y: 1, Z: 1}
	}
	return cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// fakeRef allocates a reference's buffers (the decoding tables, img and
// mu per scale) with fa, in prepare's order.
func fakeRef(fa *cudaemu.FakeAlloc, w, h int) (lut *cuda.Buffer, ref planes) {
	sizes := refSizes(w, h)
	lut = fa.Alloc(sizes[0])
	for sc := range scaleDims(w, h) {
		ref.img = append(ref.img, fa.Alloc(sizes[1+2*sc]))
		ref.mu = append(ref.mu, fa.Alloc(sizes[2+2*sc]))
	}
	return lut, ref
}

// checker follows the launches of one scenario: the common checks
// (cudatest.Launches), then dssim's own.
type checker struct {
	cudatest.Launches
	lay   layout
	w, h  int
	dims  [][2]int
	rows  int // rows unpacked so far
	scale int // the scale of the last mean
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, l layout, w, h int, dims [][2]int) *checker {
	c := &checker{lay: l, w: w, h: h, dims: dims}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs}
	return c
}

func (c *checker) check(i int, l cudaemu.Launch) {
	t := c.T
	a := c.Begin(i, l)
	name, ints, dbl := a.Name, a.Ints, a.Dbl
	w, h := ints["w"], ints["h"]
	cover := func(w, h int) { c.Cover(a, w, h) }
	isScale := func(w, h int) int {
		for sc, d := range c.dims {
			if d[0] == w && d[1] == h {
				return sc
			}
		}
		t.Errorf("%s: %d×%d is no scale of %d×%d", name, w, h, c.w, c.h)
		return 0
	}
	switch l.K.Name {
	case "unpack":
		y0, y1 := ints["y0"], ints["y1"]
		if w != c.w || y0 != c.rows || y1 <= y0 || y1 > c.h {
			t.Errorf("%s: rows [%d, %d) of %d×%d after %d rows", name, y0, y1, c.w, c.h, c.rows)
		}
		if ints["stride"] != c.lay.stride || ints["channels"] != c.lay.channels || ints["bps"] != c.lay.bps || ints["alpha"] != c.lay.alpha {
			t.Errorf("%s: layout %v, image %+v", name, ints, c.lay)
		}
		c.rows = y1
		cover(w, y1-y0)
	case "down":
		sc := isScale(ints["dw"], ints["dh"])
		if sc == 0 || ints["sw"] != c.dims[sc-1][0] || ints["dw"] != ints["sw"]/2 || ints["dh"] != c.dims[sc-1][1]/2 {
			t.Errorf("%s: %d wide to %d×%d", name, ints["sw"], ints["dw"], ints["dh"])
		}
		cover(ints["dw"], ints["dh"])
	case "lab", "chroma", "stats", "ssim":
		isScale(w, h)
		if l.K.Name == "lab" && ints["alpha"] != c.lay.alpha {
			t.Errorf("%s: alpha %d, image %d", name, ints["alpha"], c.lay.alpha)
		}
		cover(w, h)
	case "row_sums", "row_devs":
		sc := isScale(w, h)
		if int(l.Grid.X) != h || l.Grid.Y != 1 || l.Grid.Z != 1 {
			t.Errorf("%s: grid %+v for %d rows", name, l.Grid, h)
		}
		if l.K.Name == "row_devs" && ints["scale"] != sc {
			t.Errorf("%s: scale %d for a %d×%d map", name, ints["scale"], w, h)
		}
	case "mean", "finish":
		if l.Grid != (cuda.Dim3{X: 1, Y: 1, Z: 1}) {
			t.Errorf("%s: grid %+v", name, l.Grid)
		}
		sc := ints["scale"]
		if sc < 0 || sc >= len(c.dims) || ints["h"] != c.dims[sc][1] {
			t.Fatalf("%s: scale %d, %d rows", name, sc, ints["h"])
		}
		if l.K.Name == "mean" {
			if dbl["n"] != float64(c.dims[sc][0]*c.dims[sc][1]) || dbl["expo"] != math.Pow(0.5, float64(sc)) {
				t.Errorf("%s: n %v expo %v at scale %d", name, dbl["n"], dbl["expo"], sc)
			}
			c.scale = sc
		} else if sc != c.scale {
			t.Errorf("%s: scale %d after mean of scale %d", name, sc, c.scale)
		}
	}
	c.Buffers(a)
}

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	plane := int64(ints["w"]) * int64(ints["h"])
	rows := 8 * int64(ints["h"])
	switch kname {
	case "unpack":
		switch pname {
		case "raw":
			return int64(c.lay.stride)*int64(ints["y1"]-1) + int64(ints["w"])*int64(c.lay.channels*c.lay.bps)
		case "lut":
			return 4 * lutLen
		}
		return 16 * int64(ints["w"]) * int64(ints["y1"])
	case "down":
		if pname == "src" {
			return 16 * int64(ints["sw"]) * int64(2*ints["dh"])
		}
		return 16 * int64(ints["dw"]) * int64(ints["dh"])
	case "lab", "chroma", "stats", "ssim":
		if pname == "map" {
			return 4 * plane
		}
		return 16 * plane
	case "row_sums", "row_devs":
		switch pname {
		case "map":
			return 4 * plane
		case "res":
			return 64 * int64(ints["scale"]+1)
		}
		return rows
	case "mean", "finish":
		if pname == "res" {
			return 64 * int64(ints["scale"]+1)
		}
		return rows
	}
	c.T.Fatalf("no size rule for %s.%s", kname, pname)
	return 0
}

func TestLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	k := newKernels()
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.Gray8}
	sizes := [][2]int{{1, 1}, {1, 100}, {100, 1}, {7, 40}, {8, 8}, {17, 8}, {15, 17}, {37, 29}, {64, 48}, {200, 131}, {1023, 517}}
	cudatest.FormatPairs(sizes, formats, func(name string, w, h int, rf, df zenmetrics.PixelFormat) {
		dims := scaleDims(w, h)
		fa := cudatest.NewFake()
		lut, ref := fakeRef(fa, w, h)
		lay := func(f zenmetrics.PixelFormat, pad int) layout {
			return layoutOf(&zenmetrics.Image{Width: w, Height: h, Format: f, Stride: w*f.BytesPerPixel() + pad})
		}
		rl, dl := lay(rf, 0), lay(df, 3)
		rawOf := func(l layout) int64 { return int64(l.stride)*int64(h-1) + int64(w*l.channels*l.bps) }
		s := &slot{}
		fillSlot(s, w, h, max(rawOf(rl), rawOf(dl)), fa.Alloc)
		// side records and checks one side: the unpack as the bytes
		// arrive in chunks of chunk bytes, then tail; written says
		// what holds data before (the uploads, and the reference
		// planes when scoring).
		side := func(l layout, chunk int64, written []*cuda.Buffer, tail func(q launch.Launcher) error) *checker {
			c := newChecker(t, sigs, l, w, h, dims)
			c.Wrote(append([]*cuda.Buffer{s.raw, lut}, written...)...)
			u := cudatest.Rows{H: h, Stride: int64(l.stride), Row: int64(w * l.channels * l.bps), Chunk: chunk, Y1Arg: 4}
			cudatest.Record(t, name, u, func(q launch.Launcher) func(int64) error {
				return unpacker(q, k, w, h, 0, rawOf(l), l, lut, s)
			}, tail, c.check)
			if c.rows != h {
				t.Errorf("%s: %d of %d rows unpacked", name, c.rows, h)
			}
			return c
		}
		// The reference, its bytes arriving in chunks of 7 rows.
		c := side(rl, 7*int64(rl.stride)+1, nil, func(q launch.Launcher) error {
			return queueReference(q, k, dims, rl.alpha, 0, s, &ref)
		})
		for _, b := range append(ref.img, ref.mu...) {
			if !c.Written[b.Ptr] {
				t.Errorf("%s: a reference plane is never written", name)
			}
		}
		// The distorted image, in one chunk and in chunks of 3
		// rows and a bit.
		for _, chunk := range []int64{1 << 40, 3*int64(dl.stride) + 5} {
			var maps0 int
			c := side(dl, chunk, append(ref.img, ref.mu...), func(q launch.Launcher) error {
				return queueDistorted(q, k, dims, dl.alpha, s, &ref)
			})
			if !c.Written[s.res.Ptr] || !c.Written[s.maps[0].Ptr] {
				t.Errorf("%s: the results or the map are never written", name)
			}
			var r cudaemu.Recorder
			_ = unpacker(&r, k, w, h, 0, rawOf(dl), dl, lut, s)(rawOf(dl))
			_ = queueDistorted(&r, k, dims, dl.alpha, s, &ref)
			means, finishes := 0, 0
			for _, l := range r.L {
				switch l.K.Name {
				case "ssim":
					if l.Args[9].(*cuda.Buffer) == s.maps[0] {
						maps0++
					}
				case "mean":
					means++
				case "finish":
					finishes++
				}
			}
			if maps0 != 1 || means != len(dims) || finishes != len(dims) {
				t.Errorf("%s: scale 0's map written %d times; %d means, %d finishes for %d scales", name, maps0, means, finishes, len(dims))
			}
		}
	})
}

// The slot and reference buffer lists agree with the estimate, and a
// launch with the wrong number or kind of arguments is refused before it
// reaches the driver.
func TestEstimateAndArgs(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {7, 40}, {1000, 700}, {4096, 4096}} {
		w, h := sz[0], sz[1]
		fa := cudatest.NewFake()
		fakeRef(fa, w, h)
		fillSlot(&slot{}, w, h, worstRaw(w, h), fa.Alloc)
		var held int64
		for _, b := range fa.Bufs {
			held += b.Size
		}
		if est := estimate(w, h, worstRaw(w, h)); est != held {
			t.Errorf("%dx%d: estimate %d, buffers %d", w, h, est, held)
		}
		if len(fa.Bufs) != len(refSizes(w, h))+len((&slot{}).buffers()) {
			t.Errorf("%dx%d: %d buffers", w, h, len(fa.Bufs))
		}
	}
	if fits(46341, 46341) || !fits(46340, 46340) || fits(1, 8*65535+1) {
		t.Error("fits: the int indexing or grid limit is not where the kernels need it")
	}
	k := newKernels()
	b := &cuda.Buffer{}
	if err := launch.CheckArgs(&k.down, []any{b, 8, 4, 4, b}); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
	for _, args := range [][]any{{b, 8, 4, 4}, {b, 8, 4, 4, b, b}, {b, 8, 4, float32(4), b}, {b, b, 4, 4, b}} {
		if err := launch.CheckArgs(&k.down, args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
