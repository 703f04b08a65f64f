package butteraugli

import (
	"fmt"
	"os"
	"strings"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Row windows of the head of the decomposition.
//
// The head of a level's decomposition is opsin (a 5-tap mirrored blur in
// 16×16 tiles: 2 rows of reach) and the LF row blur (33 taps along x:
// row-local). Both read only rows near their outputs, so a banded score
// (band.go) runs them in row windows as the bands arrive, each band's
// windows in the band's own submit, behind the next band's fill; the
// final command buffer keeps the last band's windows and everything from
// the LF column blur on. At 16 MP on the H200 opsin takes 0.43 ms (both
// levels) and the LF row blur 0.55: GPU work that otherwise waits for the
// last band's fill. Measured there (three alternated rounds, cached
// median ms): 6.63–6.73 a 16 MP score against 7.11–7.38 with
// ZENMETRICS_BA_BANDWORK=0.
//
// After band b the full level's linear planes hold rows [0, hi) (hi, the
// next band's start: a multiple of 256 rows, any even row in tests) and
// the half level's [0, hi/2): avail rows. Opsin's window ends at the
// last whole 16-row tile that leaves its 2 rows of reach inside avail
// (avail − 16 for bands of the plan), the row blur's a tile earlier:
// it writes its output into the linear planes (lv.lin), which the next
// window's opsin still reads 2 rows above its first row. Windows are
// disjoint, start where the band before's ended, cover the level with the
// last band's, and a kernel's workgroups start at its window's first row
// (Params.row0; rows from row_end on are not written), so every output is
// computed from the same inputs with the same arithmetic as in the
// whole-level dispatch: the same bits. A window of the whole level is the
// plain dispatch, with the level's own parameter block.

// bfBandWork runs the head's row windows in the band submits
// (ZENMETRICS_BA_BANDWORK=0: the bands only copy, unpack and subsample,
// the head waits for the final command buffer). Read when a reference
// makes a band count's uniforms (bandSet), so tests that change it use a
// new reference.
var bfBandWork = os.Getenv("ZENMETRICS_BA_BANDWORK") != "0"

const (
	bfHeadReach = 2  // opsin's rows of reach (its 5-tap blur)
	bfHeadAlign = 16 // window ends: whole opsin tiles (and row-kernel blocks up to 16 rows)
)

// bfWin is rows [y0, y1) of a level for a row-local kernel, with the
// parameter block that covers them (nil when the window is empty).
type bfWin struct {
	y0, y1 int
	p      *webgpu.Buffer
}

// bfHead is the windows of a level's head one command buffer records:
// opsin's and the LF row blur's.
type bfHead struct{ opsin, rows bfWin }

// whole is the head of the whole level: the plain dispatches.
func (lv *bfLevel) whole() bfHead {
	w := bfWin{0, lv.h, lv.params}
	return bfHead{w, w}
}

// bfHeadEnds is where each band's windows of a level h rows high end, for
// bands starting at the full-resolution rows (bfBandPlan.Rows; shift 1:
// the half level): opsin's ops[b] and the row blur's blur[b], the last
// band's both h. Ends never fall (a band of 256 rows has room for both
// lags) and never pass h.
func bfHeadEnds(rows []int, shift, h int) (ops, blur []int) {
	n := len(rows) - 1
	ops, blur = make([]int, n), make([]int, n)
	prevO, prevB := 0, 0
	for b := 0; b < n-1; b++ {
		avail := rows[b+1] >> shift
		o := (avail - bfHeadReach) / bfHeadAlign * bfHeadAlign
		bl := (o - bfHeadReach) / bfHeadAlign * bfHeadAlign
		ops[b] = min(h, max(prevO, o))
		blur[b] = min(h, max(prevB, bl))
		prevO, prevB = ops[b], blur[b]
	}
	ops[n-1], blur[n-1] = h, h
	return ops, blur
}

// levelParams is level w×h's parameter block (lv.params).
func (r *butteraugliRef) levelParams(w, h int) bfParams {
	return bfParams{Width: uint32(w), Height: uint32(h), Intensity: r.intensity}
}

// bandHeads makes the windows of the heads of n bands starting at the
// full-resolution rows, [band][level], their parameter blocks taken from
// made (device thread).
func (r *butteraugliRef) bandHeads(g *webgpu.GPU, made *webgpu.Buffers, rows []int) [][]bfHead {
	n := len(rows) - 1
	heads := make([][]bfHead, n)
	for li, lv := range r.levels {
		ops, blur := bfHeadEnds(rows, li, lv.h)
		o0, b0 := 0, 0
		for b := 0; b < n; b++ {
			heads[b] = append(heads[b], bfHead{r.rowWin(g, made, lv, o0, ops[b]), r.rowWin(g, made, lv, b0, blur[b])})
			o0, b0 = ops[b], blur[b]
		}
	}
	return heads
}

// rowWin is rows [y0, y1) of lv as a window: none when empty, the level's
// own parameter block for the whole level, else a block taken from made
// (device thread) with Row0 and RowEnd set.
func (r *butteraugliRef) rowWin(g *webgpu.GPU, made *webgpu.Buffers, lv *bfLevel, y0, y1 int) bfWin {
	switch {
	case y0 >= y1:
		return bfWin{y0: y0, y1: y0}
	case y0 == 0 && y1 == lv.h:
		return bfWin{0, lv.h, lv.params}
	}
	p := r.levelParams(lv.w, lv.h)
	p.Row0, p.RowEnd = uint32(y0), uint32(y1)
	return bfWin{y0, y1, webgpu.UniformOf(g, made, &p)}
}

// encodeHead records the head of lv's decomposition of the image in
// lv.lin into x (the XYB planes: set.xyb) for the rows of hd: opsin, then
// the LF row blur of each plane into lv.lin. Empty windows record
// nothing.
func (r *butteraugliRef) encodeHead(e *webgpu.Encoder, lv *bfLevel, x [3]*webgpu.Buffer, hd bfHead) {
	k := r.k
	t := lv.lin
	if o := hd.opsin; o.y1 > o.y0 {
		r.mark(e, "opsin", lv)
		e.Dispatch(k.opsin, webgpu.Groups(lv.w, 16), webgpu.Groups(o.y1-o.y0, 16), 1, o.p, r.kern[0],
			t[0], t[1], t[2], x[0], x[1], x[2])
	}
	r.encodeBlurRows(e, &k.lf.bfBlur, lv, r.kern[1], x[:], t[:], hd.rows)
}

// xyb is the planes the decomposition into set keeps XYB in (its UHF
// planes and lv.res2 double as the working planes).
func (set bfSet) xyb(lv *bfLevel) [3]*webgpu.Buffer {
	return [3]*webgpu.Buffer{set.uhf[0], set.uhf[1], lv.res2}
}

// ends is the band set's window ends as "s0 o/b o/b …, s1 …": each
// band's opsin and row-blur window ends per level ("" without band work).
func (bs *bfBandSet) ends(levels []*bfLevel) string {
	if bs == nil || bs.head == nil {
		return ""
	}
	var out []string
	for li, lv := range levels {
		s := lv.tag
		for _, hd := range bs.head {
			s += fmt.Sprintf(" %d/%d", hd[li].opsin.y1, hd[li].rows.y1)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// traceHeads prints a band set's rows and window ends (bfTrace), once per
// reference and band count.
func (r *butteraugliRef) traceHeads(bs *bfBandSet) {
	if !bfTrace {
		return
	}
	work := "band work off (ZENMETRICS_BA_BANDWORK=0)"
	if bs.head != nil {
		work = "opsin/rowsLF window ends " + bs.ends(r.levels)
	}
	fmt.Fprintf(os.Stderr, "butteraugli %dx%d: %d bands at rows %v; %s\n", r.w, r.h, len(bs.rows)-1, bs.rows[:len(bs.rows)-1], work)
}
