package butteraugli

import (
	"fmt"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// These tests need no GPU: the host's kernel sequences (queuePrepare,
// queueScore: the very functions Prepare and Score run) are replayed into
// a recorder over fake device buffers, and every launch is checked
// against butteraugli.cu's declarations: argument kinds, block shape, a
// grid that covers the level, buffers large enough for what the kernel
// indexes, no buffer passed twice, and no input read before some earlier
// launch (or the upload) wrote it.

// blockOf is the block shape each kernel is written for.
func blockOf(name string) cuda.Dim3 {
	switch name {
	case "rows_lf":
		return cuda.Dim3{X: lfRowTX, Y: lfRowTY, Z: 1}
	case "cols_lf":
		return cuda.Dim3{X: lfColTX, Y: lfColTY, Z: 1}
	case "rows_hf", "rows_uhf", "rows_mask":
		return cuda.Dim3{X: rowTX, Y: rowTY, Z: 1}
	case "cols_mf", "cols_uhf", "cols_mask":
		return cuda.Dim3{X: colTX, Y: colTY, Z: 1}
	case "malta_x", "malta_y":
		return cuda.Dim3{X: maltaTX, Y: maltaTY, Z: 1}
	case "opsin":
		return cuda.Dim3{X: opsinTX, Y: opsinTY, Z: 1}
	case "reduce_map", "reduce_partials":
		return cuda.Dim3{X: reduceThreads, Y: 1, Z: 1}
	}
	return cuda.Dim3{X: pxBlock, Y: pxBlock, Z: 1}
}

// perThread is the outputs each thread of a kernel computes along x and
// y (opsin, the blurs but LF and Malta compute several).
func perThread(name string) (int, int) {
	switch name {
	case "rows_hf", "rows_uhf", "rows_mask":
		return rowPer, rowRows
	case "cols_mf", "cols_uhf", "cols_mask":
		return 1, colPer
	case "malta_x", "malta_y":
		return 1, maltaPer
	case "opsin":
		return 1, opsinPer
	}
	return 1, 1
}

// checker follows the launches of one scenario: the common checks
// (cudatest.Launches), then butteraugli's own.
type checker struct {
	cudatest.Launches
	lay    layout
	w, h   int
	groups int // the last reduce_map's grid
}

func newChecker(t *testing.T, sigs map[string][]cudaemu.Param, w, h int) *checker {
	c := &checker{w: w, h: h}
	c.Launches = cudatest.Launches{T: t, Sigs: sigs, Written: map[cuda.DevPtr]bool{}, Block: blockOf, Needs: c.needs,
		Unread: func(kname, pname string, ints map[string]int) bool {
			return kname == "combine" && pname == "sub" && ints["mode"]&modeAddSub == 0
		},
		ReadsOut: func(kname, pname string, ints map[string]int) bool {
			return (kname == "cols_lf" && strings.HasPrefix(pname, "xyb")) ||
				(kname == "cols_mf" && strings.HasPrefix(pname, "res")) ||
				(kname == "cols_uhf" && (pname == "hf0" || pname == "hf1")) ||
				(kname == "combine" && pname == "dm" && ints["mode"]&modeMax != 0)
		}}
	return c
}

func (c *checker) check(i int, l cudaemu.Launch) {
	t := c.T
	a := c.Begin(i, l)
	name, ints := a.Name, a.Ints
	w, h := ints["w"], ints["h"]
	switch l.K.Name {
	case "reduce_map":
		n := ints["n"]
		if n != c.w*c.h || ints["per"] != reducePer {
			t.Errorf("%s: n %d per %d", name, n, ints["per"])
		}
		if cov := int(l.Grid.X) * reduceThreads * reducePer; cov < n || cov-n >= reduceThreads*reducePer {
			t.Errorf("%s: grid %d covers %d of %d values", name, l.Grid.X, cov, n)
		}
		c.groups = int(l.Grid.X)
	case "reduce_partials":
		if l.Grid.X != 1 || ints["groups"] != c.groups {
			t.Errorf("%s: grid %d, groups %d (reduce_map had %d)", name, l.Grid.X, ints["groups"], c.groups)
		}
	default:
		if w < minSize || h < minSize {
			t.Fatalf("%s: level %d×%d", name, w, h)
		}
		// A kernel computing px×py outputs per thread covers the level
		// when its grid covers the level's px×py cells.
		px, py := perThread(l.K.Name)
		c.Cover(a, (w+px-1)/px, (h+py-1)/py)
	}
	c.Buffers(a)
}

// needs is the bytes a kernel may touch through one pointer parameter.
func (c *checker) needs(kname, pname string, ints map[string]int) int64 {
	plane := 4 * int64(ints["w"]) * int64(ints["h"])
	switch {
	case kname == "unpack" && pname == "raw":
		return int64(c.lay.stride)*int64(c.h-1) + int64(c.w)*int64(c.lay.channels*c.lay.bps)
	case kname == "unpack" && pname == "lut":
		return 4 << (8 * uint(c.lay.bps))
	case kname == "subsample" && strings.HasPrefix(pname, "in_"):
		return 4 * int64(ints["sw"]) * int64(ints["sh"])
	case kname == "combine" && pname == "sub":
		return 4 * int64(ints["sw"]) * int64((ints["h"]+1)/2)
	case kname == "reduce_map" && pname == "dm":
		return 4 * int64(ints["n"])
	case kname == "reduce_map" && pname == "part":
		return 64 * int64(reduceGroups(ints["n"]))
	case kname == "reduce_partials" && pname == "part":
		return 64 * int64(ints["groups"])
	case kname == "reduce_partials" && pname == "out":
		return 64
	}
	return plane
}

// TestLaunchPlan checks the launches over sizes and formats.
func TestLaunchPlan(t *testing.T) {
	sigs := cudatest.Signatures(t, kernelSource)
	k := newKernels()
	used := map[string]bool{}
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.GrayA16, zenmetrics.Gray8}
	for _, sz := range [][2]int{{8, 8}, {9, 30}, {15, 17}, {37, 29}, {64, 48}, {200, 131}, {1023, 517}} {
		for _, rf := range formats {
			for _, df := range formats {
				w, h := sz[0], sz[1]
				name := fmt.Sprintf("%dx%d_%v_%v", w, h, rf, df)
				lv := levels(w, h)
				fa := cudatest.NewFake()
				variants := 1
				if rf.HasAlpha() {
					variants = 2
				}
				var sets [][]planeSet
				for v := 0; v < variants; v++ {
					var s []planeSet
					for _, l := range lv {
						n := 4 * int64(l.w) * int64(l.h)
						s = append(s, newSet(func() *cuda.Buffer { return fa.Alloc(n) }, true))
					}
					sets = append(sets, s)
				}
				luts := [3]*cuda.Buffer{nil, fa.Alloc(4 * 256), fa.Alloc(4 * 65536)}
				lay := func(f zenmetrics.PixelFormat, pad int) layout {
					return layout{stride: w*f.BytesPerPixel() + pad, channels: f.Channels(), bps: f.BytesPerSample(), blend: f.HasAlpha()}
				}
				rl, dl := lay(rf, 0), lay(df, 3)
				raw := max(int64(rl.stride)*int64(h), int64(dl.stride)*int64(h))
				s := &slot{}
				fillSlot(s, lv, raw, fa.Alloc)
				c := newChecker(t, sigs, w, h)
				for _, b := range []*cuda.Buffer{s.raw, luts[1], luts[2]} {
					c.Written[b.Ptr] = true
				}
				var r cudaemu.Recorder
				if err := queuePrepare(&r, k, lv, 80, s, luts[rl.bps], rl, sets); err != nil {
					t.Fatalf("%s: prepare: %v", name, err)
				}
				c.lay = rl
				for i, l := range r.L {
					c.check(i, l)
					used[l.K.Name] = true
				}
				// Scoring reads only the reference planes, uploads and
				// its own writes: forget the prepare's scratch writes.
				c.Written = map[cuda.DevPtr]bool{s.raw.Ptr: true, luts[1].Ptr: true, luts[2].Ptr: true}
				for _, vs := range sets {
					for _, st := range vs {
						for _, b := range []*cuda.Buffer{st.lf[0], st.lf[1], st.lf[2], st.mf[0], st.mf[1], st.mf[2],
							st.hf[0], st.hf[1], st.uhf[0], st.uhf[1], st.act, st.mac, st.mdc} {
							c.Written[b.Ptr] = true
						}
					}
				}
				r.L = nil
				if err := queueScore(&r, k, lv, 80, s, luts[dl.bps], dl, sets, 2.5); err != nil {
					t.Fatalf("%s: score: %v", name, err)
				}
				c.lay = dl
				for i, l := range r.L {
					c.check(i, l)
					used[l.K.Name] = true
				}
				if !c.Written[s.tot.Ptr] || !c.Written[s.ws[0].dm.Ptr] {
					t.Errorf("%s: the sums or the map are never written", name)
				}
				wantV := variants
				if df.HasAlpha() {
					wantV = 2
				}
				combines := 0
				for _, l := range r.L {
					if l.K.Name == "combine" {
						combines++
					}
				}
				if combines != wantV*len(lv) {
					t.Errorf("%s: %d combines, want %d backgrounds × %d levels", name, combines, wantV, len(lv))
				}
			}
		}
	}
	// Prepare and score launch every kernel of the table.
	for _, kk := range k.list() {
		if !used[kk.Name] {
			t.Errorf("%s is never launched", kk.Name)
		}
	}
}

// A launch with the wrong number or kind of arguments is refused before
// it reaches the driver.
func TestCheckArgs(t *testing.T) {
	k := newKernels()
	b := &cuda.Buffer{}
	if err := launch.CheckArgs(&k.erode, []any{b, b, b, 8, 8}); err != nil {
		t.Errorf("good arguments refused: %v", err)
	}
	for _, args := range [][]any{{b, b, b, 8}, {b, b, b, 8, 8, 8}, {b, b, b, 8, float32(8)}, {b, b, 8, 8, 8}} {
		if err := launch.CheckArgs(&k.erode, args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
