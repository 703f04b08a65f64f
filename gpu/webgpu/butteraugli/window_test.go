package butteraugli

import (
	"context"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

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
	for _, sz := range [][2]int{{45, 77}, {130, 41}} {
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
				name := fmt.Sprintf("%dx%d level %d %s", sz[0], sz[1], li, tc.name)
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
