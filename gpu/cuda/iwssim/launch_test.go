package iwssim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// These tests need no GPU: the host's kernel sequences (unpacker and
// queueScore: the very functions Score runs) are recorded over fake
// device buffers, and every launch is checked against iwssim.cu's
// declarations and assumptions: argument kinds, block shape, a grid that
// covers the plane with no block starting outside it, buffers large
// enough for what the kernel indexes, no buffer passed twice, no input
// read before some earlier launch (or an upload) wrote it, the scales in
// piq's sizes, every row unpacked once, every scale's row sums written
// once at their own offset.

// blockOf is the block shape each kernel is written for.
func blockOf(name string) cuda.Dim3 {
	switch name {
	case "terms":
		return cuda.Dim3{X: rowThreads, Y: 1, Z: 1}
	case "cov":
		return cuda.Dim3{X: covThreads, Y: 1, Z: 1}
	}
	return cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// checker follows the launches of one score: the common checks
// (cudatest.Launches), then IW-SSIM's own.
type checker struct {
	cudatest.Launches
	lay   layout
	gm    geometry // the crop's (a whole image: the image's)
	win   *win
	rows  int          // rows unpacked so far
	level int          // pyramid launches seen
	terms map[int]bool // scales whose row sums were written
	stats map[int]bool // scales whose reference statistics were written
	cov   map[int]bool // scales whose covariance sums were written
	mahal map[int]bool // scales whose vᵀC⁻¹v/N was written
	// cover counts, per scale, the image's block rows (cov) and region
	// rows (mahal, terms) each launch computed, over every crop.
	cover *coverage
}

// coverage counts how often each image row of each scale was computed by
// cov, mahal and terms.
type coverage struct{ cov, mahal, terms [nScales]map[int]int }

func newCoverage() *coverage {
	c := &coverage{}
	for k := 0; k < nScales; k++ {
		c.cov[k], c.mahal[k], c.terms[k] = map[int]int{}, map[int]int{}, map[int]int{}
	}
	return c
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, l layout, w *win) *checker {
	c := &checker{lay: l, gm: w.gm, win: w, cover: newCoverage(), terms: map[int]bool{}, stats: map[int]bool{}, cov: map[int]bool{}, mahal: map[int]bool{}}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs,
		Unread: func(kernel, param string, ints map[string]int) bool {
			switch kernel {
			case "terms": // the last scale reads no 3×3 statistics
				return ints["nlam"] == 0 && (param == "bm" || param == "bv" || param == "ss")
			case "rstats": // nor writes them
				return ints["box"] == 0 && (param == "bm" || param == "bv")
			case "cov", "mahal": // no parent at scale 3
				return ints["nn"] == 9 && param == "par"
			}
			return false
		},
		ReadsOut: func(kernel, param string, _ map[string]int) bool { return kernel == "up_y" && param == "p" },
	}
	return c
}

// scaleOf is the scale whose band is w×h.
func (c *checker) scaleOf(name string, w, h int) int {
	for k, s := range c.gm.s {
		if s.w == w && s.h == h {
			return k
		}
	}
	c.T.Errorf("%s: %d×%d is no scale of %d×%d", name, w, h, c.gm.w, c.gm.h)
	return 0
}

func (c *checker) check(i int, l cudaemu.Launch) {
	t := c.T
	a := c.Begin(i, l)
	name, ints := a.Name, a.Ints
	switch l.K.Name {
	case "unpack":
		y0, y1 := ints["y0"], ints["y1"]
		if ints["w"] != c.gm.w || y0 != c.rows || y1 <= y0 || y1 > c.gm.h {
			t.Errorf("%s: rows [%d, %d) of %d×%d after %d rows", name, y0, y1, c.gm.w, c.gm.h, c.rows)
		}
		if ints["stride"] != c.lay.stride || ints["channels"] != c.lay.channels || ints["bps"] != c.lay.bps {
			t.Errorf("%s: layout %v, image %+v", name, ints, c.lay)
		}
		c.rows = y1
		c.Cover(a, ints["w"], y1-y0)
	case "down_x", "down_y", "up_x", "up_y":
		if c.rows != c.gm.h {
			t.Errorf("%s: the pyramid starts after %d of %d rows", name, c.rows, c.gm.h)
		}
		step := c.level / 4
		if step >= nScales-1 || []string{"down_x", "down_y", "up_x", "up_y"}[c.level%4] != l.K.Name {
			t.Fatalf("%s: pyramid launch %d out of order", name, c.level)
		}
		c.level++
		s, n := c.gm.s[step], c.gm.s[step+1]
		switch l.K.Name {
		case "down_x":
			if ints["w"] != s.w || ints["h"] != s.h || ints["wl"] != n.w {
				t.Errorf("%s: %v at level %d", name, ints, step)
			}
			c.Cover(a, n.w, s.h)
		case "down_y":
			if ints["wl"] != n.w || ints["h"] != s.h || ints["hl"] != n.h {
				t.Errorf("%s: %v at level %d", name, ints, step)
			}
			c.Cover(a, n.w, n.h)
		case "up_x":
			if ints["wl"] != n.w || ints["hl"] != n.h || ints["w"] != s.w {
				t.Errorf("%s: %v at level %d", name, ints, step)
			}
			c.Cover(a, s.w, n.h)
		case "up_y":
			if ints["w"] != s.w || ints["h"] != s.h || ints["hl"] != n.h {
				t.Errorf("%s: %v at level %d", name, ints, step)
			}
			c.Cover(a, s.w, s.h)
		}
	case "rhpass", "rstats":
		if c.level != 4*(nScales-1) {
			t.Errorf("%s: statistics before the pyramid is complete", name)
		}
		k := -1
		for j, sc := range c.gm.s {
			if sc.h == ints["h"] && sc.rw == ints["rw"] && (l.K.Name == "rhpass" && sc.w == ints["w"] || l.K.Name == "rstats" && sc.rh == ints["rh"]) {
				k = j
			}
		}
		if k < 0 || ints["box"] != map[bool]int{true: 1, false: 0}[weighted(k)] {
			t.Fatalf("%s: %v is no scale (or the wrong box)", name, ints)
		}
		if l.K.Name == "rhpass" {
			c.Cover(a, ints["rw"], ints["h"])
		} else {
			if c.stats[k] {
				t.Errorf("%s: scale %d twice", name, k)
			}
			c.stats[k] = true
			c.Cover(a, ints["rw"], ints["rh"])
		}
	case "cov", "mahal":
		k := c.scaleOf(name, ints["w"], ints["h"])
		if !weighted(k) || ints["nn"] != components(k) {
			t.Fatalf("%s: %v at scale %d", name, ints, k)
		}
		w := c.win
		if ints["nn"] == 10 && (ints["wp"] != c.gm.s[k+1].w || ints["hp"] != c.gm.s[k+1].h || ints["hpi"] != w.img.s[k+1].h || ints["pro"] != w.ro[k+1]) {
			t.Errorf("%s: parent %v at scale %d", name, ints, k)
		}
		if ints["ro"] != w.ro[k] {
			t.Errorf("%s: crop row %d at scale %d, want %d", name, ints["ro"], k, w.ro[k])
		}
		if l.K.Name == "cov" {
			off, _ := covOffsets(w.img)
			lo, hi := w.owned(k, 1)
			if c.cov[k] || !c.pyramidDone() || ints["off"] != off[k] || ints["himg"] != w.img.s[k].h || ints["r0"] != lo || ints["n"] != hi-lo ||
				l.Grid != (cuda.Dim3{X: uint32(ints["n"]), Y: 1, Z: 1}) {
				t.Errorf("%s: %v, grid %+v at scale %d", name, ints, l.Grid, k)
			}
			c.cov[k] = true
			for r := lo; r < hi; r++ {
				c.cover.cov[k][r+w.ro[k]-1]++
			}
		} else {
			i0, n := w.regions(k)
			if c.mahal[k] || ints["qOff"] != quadBase+maxQuad*k || ints["i0"] != i0 || ints["n"] != n {
				t.Errorf("%s: %v at scale %d", name, ints, k)
			}
			c.mahal[k] = true
			c.Cover(a, c.gm.s[k].rw, n)
			for i := i0; i < i0+n; i++ {
				c.cover.mahal[k][i+w.ro[k]]++
			}
		}
	case "hpass":
		if c.level != 4*(nScales-1) {
			t.Errorf("%s: statistics before the pyramid is complete", name)
		}
		k := c.scaleOf(name, ints["w"], ints["h"])
		if ints["rw"] != c.gm.s[k].rw || ints["box"] != map[bool]int{true: 1, false: 0}[weighted(k)] {
			t.Errorf("%s: %v at scale %d", name, ints, k)
		}
		c.Cover(a, ints["rw"], ints["h"])
	case "terms":
		k := -1
		for j, s := range c.gm.s {
			if s.h == ints["h"] && s.rw == ints["rw"] && s.rh == ints["rh"] {
				k = j
			}
		}
		if k < 0 {
			t.Fatalf("%s: %v is no scale", name, ints)
		}
		w := c.win
		i0, n := w.regions(k)
		if c.terms[k] || ints["rowOff"] != w.img.rowOff[k]+w.ro[k] || ints["lamOff"] != maxLam*k || ints["i0"] != i0 ||
			(ints["nlam"] == 0) == weighted(k) || ints["nlam"] > maxLam {
			t.Errorf("%s: %v at scale %d (done before: %v)", name, ints, k, c.terms[k])
		}
		c.terms[k] = true
		if l.Grid != (cuda.Dim3{X: uint32(n), Y: 1, Z: 1}) || n == 0 {
			t.Errorf("%s: grid %+v for %d rows", name, l.Grid, n)
		}
		for i := i0; i < i0+n; i++ {
			c.cover.terms[k][i+w.ro[k]]++
		}
	}
	c.Buffers(a)
}

// pyramidDone reports whether the crop's four pyramid steps have run.
func (c *checker) pyramidDone() bool { return c.level == 4*(nScales-1) }

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	i := func(n string) int64 { return int64(ints[n]) }
	switch kname {
	case "unpack":
		if pname == "raw" {
			return i("stride")*(i("y1")-1) + i("w")*int64(c.lay.channels*c.lay.bps)
		}
		return 8 * i("w") * i("y1")
	case "down_x":
		if pname == "p" {
			return 8 * i("w") * i("h")
		}
		return 8 * i("wl") * i("h")
	case "down_y":
		if pname == "tmp" {
			return 8 * i("wl") * i("h")
		}
		return 8 * i("wl") * i("hl")
	case "up_x":
		if pname == "lo" {
			return 8 * i("wl") * i("hl")
		}
		return 8 * i("w") * i("hl")
	case "up_y":
		if pname == "tmp" {
			return 8 * i("w") * i("hl")
		}
		return 8 * i("w") * i("h")
	case "hpass":
		switch pname {
		case "x", "y":
			return 8 * i("w") * i("h")
		case "bx":
			if ints["box"] == 0 {
				return 0
			}
		}
		return 8 * 3 * i("h") * i("rw")
	case "rhpass":
		if pname == "y" {
			return 8 * i("w") * i("h")
		}
		if pname == "bx" && ints["box"] == 0 {
			return 0
		}
		return 8 * 2 * i("h") * i("rw")
	case "rstats":
		switch pname {
		case "g":
			return 8 * 2 * i("h") * i("rw")
		case "bx":
			if ints["box"] == 0 {
				return 0
			}
			return 8 * 2 * i("h") * i("rw")
		}
		return 8 * i("rw") * i("rh")
	case "cov", "mahal":
		np := i("nn") * (i("nn") + 1) / 2
		switch pname {
		case "y":
			return 8 * i("w") * i("h")
		case "par":
			return 8 * i("wp") * i("hp")
		case "sums": // np sums and the band's max |y| per image block row, up to the last one computed
			return 8 * (i("off") + (i("ro")+i("r0")+i("n")-1)*(np+1))
		case "quad":
			return 8 * (i("qOff") + np)
		}
		return 8 * (i("w") - 2*gaussRad) * (i("h") - 2*gaussRad)
	case "terms":
		switch pname {
		case "g":
			return 8 * 3 * i("h") * i("rw")
		case "bx":
			if ints["nlam"] == 0 {
				return 0
			}
			return 8 * 3 * i("h") * i("rw")
		case "lam":
			return 8 * (i("lamOff") + i("nlam"))
		case "sums":
			return 16 * (i("rowOff") + i("rh"))
		}
		return 8 * i("rw") * i("rh")
	}
	c.T.Fatalf("no size rule for %s.%s", kname, pname)
	return 0
}

// record runs a side's unpack, the bytes arriving in chunks of chunk
// bytes (checking that only rows whose bytes have all arrived are
// converted), then tail, and checks every launch with c.
func record(t *testing.T, name string, c *checker, k *kernels, w, h int, lay layout, chunk int64, raw, dst *cuda.Buffer, tail func(q launch.Launcher) error) {
	u := cudatest.Rows{H: h, Stride: int64(lay.stride), Row: int64(w * lay.channels * lay.bps), Chunk: chunk, Y1Arg: 3}
	cudatest.Record(t, name, u, func(q launch.Launcher) func(int64) error {
		return unpacker(q, k, w, h, u.Total(), lay, raw, dst)
	}, tail, c.check)
}

// The launches of a preparation (unpack into the reference's band 0,
// queueReference, then, after the host's model, queueMahal) and of a
// score (unpack into the slot, queueScore), checked launch by launch.
func TestLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	k := newKernels()
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.GrayA8, zenmetrics.Gray16}
	sizes := [][2]int{{161, 161}, {162, 161}, {161, 333}, {177, 163}, {1023, 517}, {4096, 2049}}
	for _, sz := range sizes {
		for pad, f := range formats {
			w, h := sz[0], sz[1]
			name := fmt.Sprintf("%dx%d_%v", w, h, f)
			gm := newGeometry(w, h)
			fa := cudatest.NewFake()
			var rp refPlanes
			fillRef(&rp, w, h, fa.Alloc)
			for l := 0; l < nScales-1; l++ {
				rp.nlam[l] = components(l)
			}
			lay := layout{stride: w*f.BytesPerPixel() + pad, channels: f.Channels(), bps: f.BytesPerSample()}
			total := int64(lay.stride)*int64(h-1) + int64(w*f.BytesPerPixel())
			s := &slot{}
			fillSlot(s, w, h, total, fa.Alloc)
			if _, n := covOffsets(gm); 8*int64(n) > s.x[0].Size || 8*int64(n) > outBytes(gm) {
				t.Errorf("%s: %d covariance sums do not fit x[0] (%d bytes) or the read-back", name, n, s.x[0].Size)
			}
			// The preparation, its bytes in chunks of 7 rows and a bit.
			c := newChecker(t, sigs, lay, wholeWin(gm))
			c.Written[s.raw.Ptr] = true
			record(t, name, c, k, w, h, lay, 7*int64(lay.stride)+1, s.raw, rp.y[0], func(q launch.Launcher) error {
				return queueReference(q, k, gm, s, &rp, s.x[0])
			})
			c.Written[rp.model.Ptr] = true // the model's upload
			var r cudaemu.Recorder
			if err := queueMahal(&r, k, wholeWin(gm), &rp); err != nil {
				t.Fatal(err)
			}
			for i, l := range r.L {
				c.check(i, l)
			}
			for _, b := range rp.buffers() {
				if !c.Written[b.Ptr] {
					t.Errorf("%s: a reference plane is never written", name)
				}
			}
			if c.rows != h || c.level != 4*(nScales-1) || len(c.stats) != nScales || len(c.cov) != nScales-1 || len(c.mahal) != nScales-1 {
				t.Errorf("%s: prepare: %d of %d rows, %d pyramid launches, %d/%d/%d scales' statistics/covariances/ss", name,
					c.rows, h, c.level, len(c.stats), len(c.cov), len(c.mahal))
			}
			// Scores: the distorted image in one chunk and in chunks of 5
			// rows and a bit.
			for _, chunk := range []int64{1 << 40, 5*int64(lay.stride) + 3} {
				c := newChecker(t, sigs, lay, wholeWin(gm))
				c.Wrote(append([]*cuda.Buffer{s.raw}, rp.buffers()...)...)
				record(t, name, c, k, w, h, lay, chunk, s.raw, s.x[0], func(q launch.Launcher) error {
					return queueScore(q, k, wholeWin(gm), s, &rp)
				})
				if c.rows != h || c.level != 4*(nScales-1) || len(c.terms) != nScales {
					t.Errorf("%s: %d of %d rows unpacked, %d pyramid launches, %d scales' sums", name, c.rows, h, c.level, len(c.terms))
				}
				if !c.Written[s.sums.Ptr] {
					t.Errorf("%s: the sums are never written", name)
				}
			}
		}
	}
}

// The slot and reference buffer lists agree with the estimate; Estimate
// refuses what the kernels cannot index and sizes below piq's minimum;
// a launch with the wrong number or kind of arguments is refused before
// it reaches the driver.
func TestEstimateAndArgs(t *testing.T) {
	for _, sz := range [][2]int{{161, 161}, {1000, 700}, {4096, 4096}, {7000, 5001}} {
		w, h := sz[0], sz[1]
		fa := cudatest.NewFake()
		var rp refPlanes
		fillRef(&rp, w, h, fa.Alloc)
		s := &slot{}
		fillSlot(s, w, h, worstRaw(w, h), fa.Alloc)
		var held int64
		for _, b := range fa.Bufs {
			held += b.Size
		}
		if est := estimate(w, h, worstRaw(w, h)); est != held {
			t.Errorf("%dx%d: estimate %d, buffers %d", w, h, est, held)
		}
		if n := len(rp.buffers()) + len(s.buffers()); len(fa.Bufs) != n || n != len(refSizes(w, h))+len(slotSizes(w, h, 1)) {
			t.Errorf("%dx%d: %d buffers, lists of %d", w, h, len(fa.Bufs), n)
		}
		// About 64 + 63 bytes a pixel plus the upload, as the package
		// doc says.
		if px := float64(held-worstRaw(w, h)) / float64(w*h); w >= 1000 && (px < 110 || px > 140) {
			t.Errorf("%dx%d: %.1f bytes a pixel", w, h, px)
		}
	}
	if fits(46341, 46341) || !fits(46340, 46340) || fits(200, 8*65535+1) {
		t.Error("fits: the int indexing or grid limit is not where the kernels need it")
	}
	var im impl
	if _, ok := im.Estimate(nil, 160, 1000, zenmetrics.ModeFull); ok {
		t.Error("Estimate accepts 160 wide")
	}
	if _, ok := im.Estimate(nil, 1000, 1000, zenmetrics.ModeStripPair); ok {
		t.Error("Estimate accepts strip pairs")
	}
	if n, ok := im.Estimate(nil, 1000, 1000, zenmetrics.ModeFull); !ok || n <= 0 {
		t.Errorf("Estimate refuses 1 MP: %d %v", n, ok)
	}
	k := newKernels()
	b := &cuda.Buffer{}
	if err := launch.CheckArgs(&k.downX, []any{b, 8, 4, 4, b}); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
	for _, args := range [][]any{{b, 8, 4, 4}, {b, 8, 4, 4, b, b}, {b, 8, 4, float32(4), b}, {b, b, 4, 4, b}} {
		if err := launch.CheckArgs(&k.downX, args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// f64Bytes gives the little-endian doubles the device reads.
func TestF64Bytes(t *testing.T) {
	v := []float64{1, -0.5, math.Pi, math.Inf(-1), math.SmallestNonzeroFloat64, 255 * 16}
	want := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(x))
	}
	var buf []byte
	if got := f64Bytes(&buf, v); !bytes.Equal(got, want) {
		t.Errorf("% x, want % x", got, want)
	}
	if got := f64Bytes(&buf, nil); len(got) != 0 {
		t.Errorf("empty: %d bytes", len(got))
	}
}
