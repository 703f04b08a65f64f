package butteraugli

import (
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Row windows of the head of the decomposition.
//
// The head of a level's decomposition is opsin (a 5-tap mirrored blur in
// 16×16 tiles: 2 rows of reach) and the LF row blur (33 taps along x:
// row-local). Both read only rows near their outputs, so they can run in
// row windows: a kernel's workgroups start at its window's first row
// (Params.row0) and rows from its end on (row_end) are not written, so
// every output is computed from the same inputs with the same arithmetic
// as in the whole-level dispatch: the same bits. A window of the whole
// level is the plain dispatch, with the level's own parameter block.

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

// levelParams is level w×h's parameter block (lv.params).
func (r *butteraugliRef) levelParams(w, h int) bfParams {
	return bfParams{Width: uint32(w), Height: uint32(h), Intensity: r.intensity}
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
	if w := hd.rows; w.y1 > w.y0 {
		rx, ry := webgpu.Groups(lv.w, bfRowTX), webgpu.Groups(w.y1-w.y0, bfRowTY)
		for c := 0; c < 3; c++ {
			r.mark(e, "rowsLF", lv)
			e.Dispatch(k.rowsLF, rx, ry, 1, w.p, r.kern[1], x[c], t[c])
		}
	}
}

// xyb is the planes the decomposition into set keeps XYB in (its UHF
// planes and lv.res2 double as the working planes).
func (set bfSet) xyb(lv *bfLevel) [3]*webgpu.Buffer {
	return [3]*webgpu.Buffer{set.uhf[0], set.uhf[1], lv.res2}
}
