package butteraugli

import (
	"context"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestButteraugliHeadEnds checks the band windows of the head against
// what makes them safe, for band plans of every alignment down to 2 rows
// and both levels: a band's opsin window only reads rows the band has
// unpacked (2 rows of reach), the row blur never writes a linear-plane
// row a later opsin window reads, ends rise to the level's height, and
// with the real plan (256-row bands) every early band's windows hold
// rows at both levels. A 4096-row image's ends are pinned.
func TestButteraugliHeadEnds(t *testing.T) {
	for _, align := range []int{2, 4, 16, 64, 256} {
		for h := 2 * align; h <= 4200; h += 1 + h/7 {
			for n := 2; n <= 4 && n <= h/align; n++ {
				plan := upband.Plan{Bytes: 1, Max: 4, Align: align}
				rows := plan.Rows(h, n)
				for shift, lh := range []int{h, (h + 1) / 2} {
					name := fmt.Sprintf("align %d h %d bands %v level %d", align, h, rows, shift)
					ops, blur := bfHeadEnds(rows, shift, lh)
					if len(ops) != n || len(blur) != n || ops[n-1] != lh || blur[n-1] != lh {
						t.Fatalf("%s: ends %v %v, want %d each ending at %d", name, ops, blur, n, lh)
					}
					po, pb := 0, 0
					for b := 0; b < n-1; b++ {
						avail := rows[b+1] >> shift
						switch {
						case ops[b] < po || blur[b] < pb:
							t.Fatalf("%s: ends fall: %v %v", name, ops, blur)
						case ops[b] > 0 && ops[b]+bfHeadReach > avail:
							t.Fatalf("%s: band %d's opsin reads past its %d rows: %v", name, b, avail, ops)
						case blur[b] > max(0, ops[b]-bfHeadReach):
							t.Fatalf("%s: band %d's row blur overwrites rows opsin still reads: %v %v", name, b, ops, blur)
						case ops[b]%bfHeadAlign != 0 || blur[b]%bfHeadAlign != 0:
							t.Fatalf("%s: ends off the %d-row tiles: %v %v", name, bfHeadAlign, ops, blur)
						case align == 256 && (ops[b] <= po || blur[b] <= pb):
							t.Fatalf("%s: band %d has an empty window: %v %v", name, b, ops, blur)
						}
						po, pb = ops[b], blur[b]
					}
				}
			}
		}
	}
	rows := bfBandPlan.Rows(4096, 4)
	for shift, want := range [][2][]int{
		{{1008, 2032, 3056, 4096}, {992, 2016, 3040, 4096}},
		{{496, 1008, 1520, 2048}, {480, 992, 1504, 2048}},
	} {
		ops, blur := bfHeadEnds(rows, shift, 4096>>shift)
		if fmt.Sprint(ops, blur) != fmt.Sprint(want[0], want[1]) {
			t.Errorf("4096 rows, level %d: ends %v %v, want %v %v", shift, ops, blur, want[0], want[1])
		}
	}
}

// headRun unpacks dist on r and runs the head of level li in windows:
// opsin over each of ops in turn, then the LF row blur over each of rows
// (row windows [y0, y1) of the level, in any order, tile-aligned or
// not). The XYB planes start out holding sentinel. It returns the XYB
// planes, the linear planes before the row blur (linear RGB) and after.
func headRun(t *testing.T, r *butteraugliRef, dist *zenmetrics.Image, li int, ops, rows [][2]int, sentinel float32) (x, lin, blur [3][]float32) {
	t.Helper()
	lv := r.levels[li]
	n := lv.w * lv.h
	for c := 0; c < 3; c++ {
		x[c], lin[c], blur[c] = make([]float32, n), make([]float32, n), make([]float32, n)
	}
	fill := make([]float32, n)
	for i := range fill {
		fill[i] = sentinel
	}
	var made webgpu.Buffers // the windows' parameter blocks
	defer func() { r.dev.Free(made.Take()) }()
	err := r.dev.Do(context.Background(), func(g *webgpu.GPU) error {
		wins := func(ws [][2]int) []bfWin {
			var out []bfWin
			for _, w := range ws {
				out = append(out, r.rowWin(g, &made, lv, w[0], w[1]))
			}
			return out
		}
		ow, rw := wins(ops), wins(rows)
		if made.Err != nil {
			return made.Err
		}
		xp := lv.dist.xyb(lv)
		for c := range xp {
			webgpu.WriteSlice(g, xp[c], 0, fill)
		}
		read := func(e *webgpu.Encoder, bufs [3]*webgpu.Buffer, dst [3][]float32) func() error {
			var rbs []*webgpu.Readback
			for _, b := range bufs {
				rb, err := e.ReadBack(b, 0, 4*int64(n))
				if err != nil {
					t.Fatal(err)
				}
				rbs = append(rbs, rb)
			}
			return func() error {
				for c, rb := range rbs {
					if err := webgpu.ReadSlice(rb, dst[c]); err != nil {
						return err
					}
				}
				return nil
			}
		}
		e := g.Encoder()
		if err := r.upload(g, e, dist); err != nil {
			e.Discard()
			return err
		}
		r.encodeUnpack(g, e, dist, 0)
		for _, w := range ow {
			r.encodeHead(e, lv, xp, bfHead{opsin: w})
		}
		readX, readLin := read(e, xp, x), read(e, lv.lin, lin)
		if err := e.Submit(); err != nil {
			return err
		}
		if err := readX(); err != nil {
			return err
		}
		if err := readLin(); err != nil {
			return err
		}
		e = g.Encoder()
		for _, w := range rw {
			r.encodeHead(e, lv, xp, bfHead{rows: w})
		}
		readBlur := read(e, lv.lin, blur)
		if err := e.Submit(); err != nil {
			return err
		}
		return readBlur()
	})
	if err != nil {
		t.Fatal(err)
	}
	return x, lin, blur
}

// TestButteraugliHeadWindows is the row-window contract of the head's
// kernels (opsin and the LF row blur; a row kernel that replaces one must
// pass it too): windows of any rows, tile-aligned or not, the bottom
// ones mirroring at the image's edge, give the whole-level dispatch's
// bits in their rows and write no other row, at both levels, with
// partial blocks along x.
func TestButteraugliHeadWindows(t *testing.T) {
	dev := gputest.Device(t)
	sentinel := float32(math.Float32frombits(0x7fc0dead)) // a NaN no kernel writes
	defer func() { bfLFKnob.force = "" }()
	// Both LF row kernels (the vec4 default, on planes of f32 and, at
	// 136×45 whose levels are multiples of 4 wide, of vec4; and old's),
	// at sizes whose levels end inside a 16-row block.
	for _, c := range []struct {
		lf string
		sz [2]int
	}{{bfVersionNew, [2]int{45, 77}}, {bfVersionNew, [2]int{130, 41}}, {bfVersionNew, [2]int{136, 45}}, {bfVersionOld, [2]int{45, 77}}, {bfVersionOld, [2]int{130, 41}}} {
		sz := c.sz
		bfLFKnob.force = c.lf
		ref, dist := metrictest.Synthetic(sz[0], sz[1], int64(sz[0]), zenmetrics.RGB8)
		r, err := prepareButteraugli(context.Background(), dev, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for li, lv := range r.levels {
			h := lv.h
			whole := [][2]int{{0, h}}
			wx, wlin, wblur := headRun(t, r, dist, li, whole, whole, sentinel)
			cuts := [][2]int{{0, 5}, {5, 18}, {18, h - 3}, {h - 3, h}}
			rev := [][2]int{{h - 1, h}, {17, h - 1}, {3, 17}, {1, 3}, {0, 1}}
			for _, tc := range []struct {
				name      string
				ops, rows [][2]int
			}{
				{"partitions", cuts, rev},
				{"aligned", [][2]int{{0, 16}, {16, h}}, [][2]int{{0, 16}, {16, h}}},
				{"one window each", [][2]int{{5, h - 4}}, [][2]int{{7, h - 6}}}, // the row blur reads opsin's rows
				{"the bottom rows", [][2]int{{h - 2, h}}, [][2]int{{h - 1, h}}},
			} {
				name := fmt.Sprintf("LF %s %dx%d level %d %s", c.lf, sz[0], sz[1], li, tc.name)
				x, lin, blur := headRun(t, r, dist, li, tc.ops, tc.rows, sentinel)
				sameRows(t, name+": linear planes", lv.w, lin, wlin, nil)
				sameRows(t, name+": opsin", lv.w, x, wx, windowed(h, tc.ops, sentinel, [3][]float32{}))
				sameRows(t, name+": LF row blur", lv.w, blur, wblur, windowed(h, tc.rows, 0, wlin))
			}
		}
		r.Release()
	}
}

// windowed says what row y of a plane c holds after kernels ran on wins
// only: the whole run's value (nil) inside them, outside the value it had
// before (before's, or fill everywhere when before is nil).
func windowed(h int, wins [][2]int, fill float32, before [3][]float32) func(c, y int) []float32 {
	in := make([]bool, h)
	for _, w := range wins {
		for y := w[0]; y < w[1]; y++ {
			in[y] = true
		}
	}
	return func(c, y int) []float32 {
		if in[y] {
			return nil
		}
		if before[c] != nil {
			return before[c]
		}
		return []float32{fill}
	}
}

// sameRows compares planes got with want bit for bit, row by row; where
// other (when set) has a plane for row y, that row must match it instead
// (a one-value plane: every sample that value).
func sameRows(t *testing.T, name string, w int, got, want [3][]float32, other func(c, y int) []float32) {
	t.Helper()
	for c := range got {
		for i, v := range got[c] {
			ref := want[c]
			j := i
			if other != nil {
				if o := other(c, i/w); o != nil {
					ref = o
					if len(o) == 1 {
						j = 0
					}
				}
			}
			if math.Float32bits(v) != math.Float32bits(ref[j]) {
				t.Fatalf("%s: plane %d row %d column %d: %v (%08x), want %v (%08x)", name, c, i/w, i%w,
					v, math.Float32bits(v), ref[j], math.Float32bits(ref[j]))
			}
		}
	}
}

// bandAligned fails the test unless bands of dist starting on multiples
// of align rows bind 256-byte-aligned windows (WebGPU's largest
// minStorageBufferOffsetAlignment): the raw rows, both levels' planes.
func bandAligned(t *testing.T, name string, dist *zenmetrics.Image, align int) {
	t.Helper()
	sw := (dist.Width + 1) / 2
	if dist.Stride*align%256 != 0 || 4*dist.Width*align%256 != 0 || 4*sw*(align/2)%256 != 0 {
		t.Fatalf("%s: bands on multiples of %d rows are not 256-byte aligned (stride %d)", name, align, dist.Stride)
	}
}

// alignedStride is im with its stride padded up to what bands on
// multiples of align rows need (bandAligned), plus extra multiples of it.
func alignedStride(im *zenmetrics.Image, align, extra int) *zenmetrics.Image {
	m := 256
	for m > 1 && align%2 == 0 {
		m, align = m/2, align/2
	}
	return metrictest.PadStride(im, (m-im.Stride%m)%m+extra*m)
}

// TestButteraugliBandWork scores banded images whose band edges fall
// inside opsin tiles and their 2-row halo at both levels (band plans on
// multiples of 2 rows where the width keeps every window aligned, so
// the head's windows end 0–14 rows short of a band's rows, or are
// empty), 2–4 bands, odd heights, an odd width (bands on multiples of 64
// rows), 8- and 16-bit, gray, padded strides and alpha (never banded),
// one reference scoring different images in turn (stale rows of the
// scratch planes would show), with band work on and off
// (ZENMETRICS_BA_BANDWORK), and checks scores and maps against the plain
// path bit for bit.
func TestButteraugliBandWork(t *testing.T) {
	dev := gputest.Device(t)
	opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
	cases := []struct {
		w, h, align int
		bands       string
		ends        string // each band's opsin/row-blur window ends per level (bfBandSet.ends)
	}{
		{128, 37, 2, "2", "s0 16/0 37/37, s1 0/0 19/19"},
		{128, 69, 2, "2", "s0 32/16 69/69, s1 0/0 35/35"},
		{128, 70, 2, "3", "s0 16/0 32/16 70/70, s1 0/0 16/0 35/35"},
		{128, 101, 2, "4", "s0 16/0 48/32 64/48 101/101, s1 0/0 16/0 32/16 51/51"},
		{128, 147, 2, "4", "s0 32/16 64/48 96/80 147/147, s1 16/0 32/16 48/32 74/74"},
		{63, 201, 64, "3", "s0 48/32 112/96 201/201, s1 16/0 48/32 101/101"},
	}
	if testing.Short() {
		cases = append(cases[2:4:4], cases[5])
	}
	for _, tc := range cases {
		for _, work := range []bool{true, false} {
			pipeEnv(t, tc.bands)
			bfBandPlan.Align = tc.align
			bfBandWork = work
			ref, _ := metrictest.Synthetic(tc.w, tc.h, int64(tc.h), zenmetrics.RGB8)
			_, d8 := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+1, zenmetrics.RGB8)
			_, d16 := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+2, zenmetrics.RGB16)
			_, dg := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+3, zenmetrics.Gray8)
			_, da := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+4, zenmetrics.RGBA16)
			a := func(im *zenmetrics.Image, extra int) *zenmetrics.Image { return alignedStride(im, tc.align, extra) }
			r := pipedRef(t, dev, a(ref, 0), opt)
			for i, d := range []*zenmetrics.Image{a(d8, 0), a(d16, 0), a(dg, 0), a(d8, 1), da, a(d16, 2), a(ref, 0)} {
				name := fmt.Sprintf("%dx%d bands=%s align %d work=%v #%d %v stride %d", tc.w, tc.h, tc.bands, tc.align, work, i, d.Format, d.Stride)
				n := r.bandCount(d)
				if d.Format.HasAlpha() {
					if n != 1 {
						t.Fatalf("%s: %d bands, want 1", name, n)
					}
				} else {
					bandAligned(t, name, d, tc.align)
					if fmt.Sprint(n) != tc.bands {
						t.Fatalf("%s: %d bands", name, n)
					}
				}
				s, err := r.Score(context.Background(), d)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				bfSame(t, name, plainScore(t, dev, ref, d, opt), s)
			}
			n := r.bandCount(a(d8, 0))
			if got := r.pipe.bands[n].ends(r.levels); work && got != tc.ends || !work && got != "" {
				t.Errorf("%dx%d bands=%s work=%v: window ends %q, want %q", tc.w, tc.h, tc.bands, work, got, tc.ends)
			}
			r.Release()
		}
	}
}
