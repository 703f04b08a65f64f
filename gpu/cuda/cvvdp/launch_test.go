package cvvdp

import (
	"fmt"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// These tests need no GPU: the host's kernel sequences (unpacker,
// queueReference, queueDistorted: the very functions Prepare and Score
// run) are recorded over fake device buffers, and every launch is checked
// against cvvdp.cu's declarations and assumptions: argument kinds, block
// shape, a grid that covers the plane with no block starting outside it,
// buffers large enough for what the kernel indexes, no buffer passed
// twice, no input read before some earlier launch (or the upload) wrote
// it, the levels in the plan's order and sizes, every row unpacked once,
// every band's sums written.

// fakeRef allocates a reference's buffers with fa, in prepare's order.
func fakeRef(fa *cudaemu.FakeAlloc, p *cpucv.Plan) *refBufs {
	sizes := refSizes(p)
	next := func() *cuda.Buffer { b := fa.Alloc(sizes[0]); sizes = sizes[1:]; return b }
	r := &refBufs{lut: next(), kb: next()}
	for b := 0; b+1 < p.Levels; b++ {
		r.rp = append(r.rp, next())
		r.s = append(r.s, next())
	}
	r.rb = next()
	return r
}

// blockOf is the block shape each kernel is written for.
func blockOf(name string) cuda.Dim3 {
	switch name {
	case "rows":
		return cuda.Dim3{X: rowThreads, Y: 1, Z: 1}
	case "band_sums", "base_ref", "base_dist":
		return cuda.Dim3{X: sumThreads, Y: 1, Z: 1}
	}
	return cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// checker follows the launches of one scenario.
type checker struct {
	cudatest.Launches
	p    *cpucv.Plan
	lay  layout
	rows int // rows unpacked so far
	// windowed: bands run in windows (strips); otherwise every band
	// launch covers the whole band.
	windowed bool
	band     int // the band of the last dist_band launch
	wh       int // its window's rows
	// owned counts the row sums written per band and row.
	owned [][]int
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, p *cpucv.Plan, l layout) *checker {
	c := &checker{p: p, lay: l, band: -1}
	for b := 0; b+1 < p.Levels; b++ {
		c.owned = append(c.owned, make([]int, p.H[b]))
	}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs,
		Unread: func(k, param string, ints map[string]int) bool {
			// The map's planes are optional; heat_final's coarse level is
			// absent for a one-level pyramid.
			return param == "heat" || (k == "heat_final" && param == "coarse" && ints["cw"] == 0)
		},
		ReadsOut: func(k, param string, _ map[string]int) bool { return k == "heat_add" && param == "fine" }}
	return c
}

// level is the level a w×h plane is, or −1.
func (c *checker) level(w, h int) int {
	for l := range c.p.W {
		if c.p.W[l] == w && c.p.H[l] == h {
			return l
		}
	}
	return -1
}

func (c *checker) check(i int, l cudaemu.Launch) {
	t := c.T
	a := c.Begin(i, l)
	ints := a.Ints
	w, h := ints["w"], ints["h"]
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	switch l.K.Name {
	case "unpack":
		y0, y1 := ints["y0"], ints["y1"]
		if w != c.p.W[0] || h != c.p.H[0] || y0 != c.rows || y1 <= y0 || y1 > h || ints["ry0"] > y0 || (!c.windowed && ints["ry0"] != 0) {
			t.Errorf("%s: rows [%d, %d) of %d×%d after %d rows", a.Name, y0, y1, w, h, c.rows)
		}
		if ints["stride"] != c.lay.stride || ints["channels"] != c.lay.channels || ints["bps"] != c.lay.bps || ints["gray"] != c.lay.gray {
			t.Errorf("%s: layout %v, image %+v", a.Name, ints, c.lay)
		}
		c.rows = y1
		c.Cover(a, w, y1-y0)
	case "reduce":
		lv := c.level(w, h)
		if lv < 0 || lv+1 >= c.p.Levels {
			t.Errorf("%s: %d×%d has no next level", a.Name, w, h)
			break
		}
		a.Grid.Z = 1
		c.Cover(a, c.p.W[lv+1], c.p.H[lv+1])
		if l.Grid.Z != nCh {
			t.Errorf("%s: %d channels", a.Name, l.Grid.Z)
		}
	case "ref_band", "dist_band":
		lv := c.level(w, h)
		if lv < 0 || lv+1 >= c.p.Levels || ints["sw"] != c.p.W[lv+1] || ints["sh"] != c.p.H[lv+1] {
			t.Errorf("%s: band %d×%d with next level %d×%d", a.Name, w, h, ints["sw"], ints["sh"])
		}
		if l.K.Name == "ref_band" && ints["band"] != lv {
			t.Errorf("%s: band %d for level %d", a.Name, ints["band"], lv)
		}
		y0, wh := ints["y0"], ints["wh"]
		if y0 < 0 || wh <= 0 || y0+wh > h || (!c.windowed && (y0 != 0 || wh != h)) {
			t.Errorf("%s: window of rows [%d, %d) of %d", a.Name, y0, y0+wh, h)
		}
		if l.K.Name == "dist_band" {
			r0, rh := ints["r0"], ints["rh"]
			if r0 < 0 || r0 > y0 || y0+wh > r0+rh || r0+rh > h {
				t.Errorf("%s: window [%d, %d) read from reference rows [%d, %d) of %d", a.Name, y0, y0+wh, r0, r0+rh, h)
			}
			c.band, c.wh = lv, wh
		}
		c.Cover(a, w, wh)
	case "blur_h":
		if c.band < 0 || w != c.p.W[c.band] || h != c.wh || !blurs(c.p, c.band) || l.Grid.Z != nCh {
			t.Errorf("%s: %d×%d blurred (z %d) after band %d's window of %d rows", a.Name, w, h, l.Grid.Z, c.band, c.wh)
		}
		a.Grid.Z = 1
		c.Cover(a, w, h)
	case "rows":
		lv := c.level(w, h)
		y0, wh, o0, n := ints["y0"], ints["wh"], ints["o0"], int(l.Grid.X)
		if lv < 0 || lv+1 >= c.p.Levels || lv != c.band || wh != c.wh || l.Grid.Y != 1 || l.Grid.Z != 1 ||
			ints["off"] != rowOff(c.p, lv) || (ints["blur"] == 1) != blurs(c.p, lv) {
			t.Errorf("%s: %d×%d, grid %+v, offset %d, blur %d", a.Name, w, h, l.Grid, ints["off"], ints["blur"])
			break
		}
		// The owned rows lie in the window with the blur's reach (6 rows)
		// of context either side, or the band's own edge.
		lo, hi := o0-y0, y0+wh-(o0+n)
		if n <= 0 || lo < 0 || hi < 0 || (!c.windowed && (y0 != 0 || wh != h || n != h)) ||
			(blurs(c.p, lv) && ((lo < halo && y0 != 0) || (hi < halo && y0+wh != h))) {
			t.Errorf("%s: rows [%d, %d) owned in window [%d, %d) of %d", a.Name, o0, o0+n, y0, y0+wh, h)
			break
		}
		for y := o0; y < o0+n; y++ {
			c.owned[lv][y]++
		}
	case "base_ref", "base_dist":
		n := c.p.Levels
		if l.Grid != one || w != c.p.W[n-1] || h != c.p.H[n-1] || ints["band"] != n-1 {
			t.Errorf("%s: %d×%d band %d, grid %+v", a.Name, w, h, ints["band"], l.Grid)
		}
	case "band_sums":
		if int(l.Grid.X) != c.p.Levels-1 || ints["h0"] != c.p.H[0] {
			t.Errorf("%s: grid %+v, h0 %d", a.Name, l.Grid, ints["h0"])
		}
	case "heat_add", "heat_final":
		lv := c.level(w, h)
		if lv < 0 || (lv+1 < c.p.Levels && (ints["cw"] != c.p.W[lv+1] || ints["ch"] != c.p.H[lv+1])) {
			t.Errorf("%s: %d×%d from %d×%d", a.Name, w, h, ints["cw"], ints["ch"])
		}
		c.Cover(a, w, h)
	}
	c.Buffers(a)
}

// ownedOnce checks that every row of every band below the base band had
// its sums written exactly once.
func (c *checker) ownedOnce(name string) {
	for b, rows := range c.owned {
		for y, n := range rows {
			if n != 1 {
				c.T.Fatalf("%s: band %d row %d: sums written %d times", name, b, y, n)
			}
		}
	}
}

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	plane := int64(ints["w"]) * int64(ints["h"])
	next := int64(ints["sw"]) * int64(ints["sh"])
	switch kname {
	case "unpack":
		switch pname {
		case "raw":
			return int64(c.lay.stride)*int64(ints["y1"]-1-ints["ry0"]) + int64(ints["w"])*int64(c.lay.channels*c.lay.bps)
		case "lut":
			return 4 * lutLen
		case "kb":
			return 4 * kbCSF
		}
		return 12 * plane
	case "reduce":
		if pname == "src" {
			return 12 * plane
		}
		return 12 * int64((ints["w"]+1)/2) * int64((ints["h"]+1)/2)
	case "ref_band", "dist_band":
		win := int64(ints["w"]) * int64(ints["wh"])
		switch pname {
		case "gn":
			return 12 * next
		case "kb":
			return 4 * int64(kbCSF+(3*ints["band"]+3)*lutN)
		case "gb":
			return 12 * plane
		case "rp", "s":
			if kname == "dist_band" {
				return 12 * int64(ints["w"]) * int64(ints["rh"])
			}
		}
		return 12 * win
	case "blur_h":
		return 12 * plane
	case "rows":
		switch pname {
		case "out":
			return 24 * int64(ints["off"]+ints["h"])
		case "heat":
			return 4 * plane
		}
		return 12 * int64(ints["w"]) * int64(ints["wh"])
	case "band_sums":
		if pname == "res" {
			return 24 * int64(c.p.Levels-1)
		}
		return 24 * sumRows(c.p)
	case "base_ref", "base_dist":
		switch pname {
		case "kb":
			return 4 * int64(kbCSF+(3*ints["band"]+3)*lutN)
		case "rb":
			return 4 * (4 + 3*plane)
		case "res":
			return 24 * int64(ints["band"]+1)
		case "heat":
			return 4 * plane
		}
		return 12 * plane
	case "heat_add", "heat_final":
		if pname == "coarse" {
			return 4 * int64(ints["cw"]) * int64(ints["ch"])
		}
		return 4 * plane
	}
	c.T.Fatalf("no size rule for %s.%s", kname, pname)
	return 0
}

func TestLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	k := newKernels()
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.GrayA8}
	sizes := [][2]int{{2, 2}, {2, 100}, {100, 2}, {7, 7}, {8, 8}, {17, 9}, {37, 29}, {64, 48}, {200, 131}, {1023, 517}}
	for _, sz := range sizes {
		for _, disp := range []string{"", "standard_phone", "standard_hdr_hlg"} {
			for _, f := range formats {
				for _, distMap := range []bool{false, true} {
					w, h := sz[0], sz[1]
					name := fmt.Sprintf("%dx%d_%v_%q_map%v", w, h, f, disp, distMap)
					p, err := cpucv.NewPlan(w, h, disp)
					if err != nil {
						t.Fatal(err)
					}
					lay := layout{stride: w*f.BytesPerPixel() + 3, channels: f.Channels(), bps: f.BytesPerSample()}
					if f.IsGray() {
						lay.gray = 1
					}
					raw := int64(lay.stride)*int64(h-1) + int64(w*f.BytesPerPixel())
					fa := cudatest.NewFake()
					rb := fakeRef(fa, p)
					s := &slot{}
					fillSlot(s, p, raw, distMap, fa.Alloc)
					side := func(chunk int64, written []*cuda.Buffer, tail func(q launch.Launcher) error) *checker {
						c := newChecker(t, sigs, p, lay)
						c.Wrote(append([]*cuda.Buffer{s.raw, rb.lut, rb.kb}, written...)...)
						u := cudatest.Rows{H: h, Stride: int64(lay.stride), Row: int64(w * f.BytesPerPixel()), Chunk: chunk, Y1Arg: 7}
						cudatest.Record(t, name, u, func(q launch.Launcher) func(int64) error {
							return unpacker(q, k, p, 0, h, raw, lay, rb, s)
						}, tail, c.check)
						if c.rows != h {
							t.Errorf("%s: %d of %d rows unpacked", name, c.rows, h)
						}
						return c
					}
					c := side(7*int64(lay.stride)+1, nil, func(q launch.Launcher) error { return queueReference(q, k, p, s, rb) })
					refPlanes := append(append([]*cuda.Buffer{rb.rb}, rb.rp...), rb.s...)
					for _, b := range refPlanes {
						if !c.Written[b.Ptr] {
							t.Errorf("%s: a reference plane is never written", name)
						}
					}
					for _, chunk := range []int64{1 << 40, 3*int64(lay.stride) + 5} {
						c := side(chunk, refPlanes, func(q launch.Launcher) error { return queueDistorted(q, k, p, s, rb) })
						if !c.Written[s.res.Ptr] || (distMap && !c.Written[s.mm.Ptr]) {
							t.Errorf("%s: the results or the map are never written", name)
						}
						c.ownedOnce(name)
					}
				}
			}
		}
	}
}

// The slot and reference buffer lists agree with the estimate, and a
// launch with the wrong number or kind of arguments is refused before it
// reaches the driver.
func TestEstimateAndArgs(t *testing.T) {
	for _, sz := range [][2]int{{2, 2}, {7, 40}, {1000, 700}, {4096, 4096}} {
		for _, distMap := range []bool{false, true} {
			w, h := sz[0], sz[1]
			p, err := cpucv.NewPlan(w, h, "")
			if err != nil {
				t.Fatal(err)
			}
			fa := cudatest.NewFake()
			fakeRef(fa, p)
			s := &slot{}
			fillSlot(s, p, worstRaw(w, h), distMap, fa.Alloc)
			var held int64
			for _, b := range fa.Bufs {
				held += b.Size
			}
			if est := estimate(p, worstRaw(w, h), distMap); est != held {
				t.Errorf("%dx%d map %v: estimate %d, buffers %d", w, h, distMap, est, held)
			}
			if got, want := len(fa.Bufs), len(refSizes(p))+len(s.buffers()); got != want {
				t.Errorf("%dx%d: %d buffers, want %d", w, h, got, want)
			}
			if e, ok := (impl{}).Estimate(nil, w, h, zenmetrics.ModeFull); !ok || (!distMap && e != held) {
				t.Errorf("%dx%d: Estimate %d %v, held %d", w, h, e, ok, held)
			}
		}
	}
	for _, c := range []struct {
		w, h int
		mode zenmetrics.Mode
	}{{1, 100, zenmetrics.ModeFull}, {100, 1, zenmetrics.ModeFull}, {1, 100, zenmetrics.ModeStrip}, {64, 64, zenmetrics.ModeStripPair}} {
		if _, ok := (impl{}).Estimate(nil, c.w, c.h, c.mode); ok {
			t.Errorf("Estimate(%d×%d, %v) accepted", c.w, c.h, c.mode)
		}
	}
	if fits(26755, 26755) || !fits(26754, 26754) || fits(1, 8*65535+1) {
		t.Error("fits: the int indexing or grid limit is not where the kernels need it")
	}
	k := newKernels()
	b := &cuda.Buffer{}
	if err := launch.CheckArgs(&k.reduce, []any{b, 8, 4, b}); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
	for _, args := range [][]any{{b, 8, 4}, {b, 8, 4, b, b}, {b, 8, float32(4), b}, {b, b, 4, b}} {
		if err := launch.CheckArgs(&k.reduce, args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
