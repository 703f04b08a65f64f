package butteraugli

import "github.com/zenmetrics-go/zenmetrics/cpusimd"

// The fast path: the same pipeline with its hot loops in cpusimd's
// Butteraugli kernels (AVX2 on amd64, NEON on arm64). Those kernels do each sample's
// arithmetic exactly as the loops here do — float32 steps rounded one at a
// time in the same order, float64 where this package widens — so the fast
// path returns the reference's bits, and every test of this package checks
// both (see fast_test.go). It is on wherever cpusimd's assembly runs;
// ZENMETRICS_NOSIMD=1 or -tags noasm give the reference loops.
var useFast = cpusimd.ButteraugliEnabled()

// maxOff is the longest kernel's reach (kernLF's 16 taps each side).
const maxOff = 16

// colStrip is the width of the column strips of blurV's fast pass
// for a kernel reaching off rows each way: as wide as keeps the 2·off+1
// input rows of a strip within 8 KiB of L1 cache, in whole multiples of 64
// floats (33 rows of 64 for the longest kernel, 7 rows of 256 for the
// shortest). Columns are independent, so the width changes no result;
// wider strips only call the kernel fewer times per row.
func colStrip(off int) int {
	return max(64, (2048/(2*off+1))&^63)
}

// blurStride is the row stride of the fast path's intermediate blur plane: whole
// cache lines, an odd number of them, so that the 2·off+1 rows a column
// tap reads fall into different L1 sets (with a stride of exactly 4 KiB,
// e.g. 1024 columns, they all share one set and evict each other).
func blurStride(w int) int {
	lines := (w + 15) / 16
	if lines%2 == 0 {
		lines++
	}
	return 16 * lines
}

// rowBorder is eight consecutive columns x = xb…xb+7 of a row blur's
// cut-off borders for cpusimd.BARowBorder: the taps over samples jb… of
// each border column (zero weights where a column's kernel does not
// reach, and for the lanes that are not border columns), the columns'
// renormalising scales, and which of the n lanes inside the row are
// border columns (mask).
type rowBorder struct {
	xb, jb, n int
	mask      uint8
	w         [][8]float32
	s         [8]float32
}

// rowBorders covers the border columns of a w-wide row (x < b1, x ≥ b2)
// with blocks of eight. Lane x sums its taps j = max(0, x−off) …
// min(w−1, x+off) in order, times 1/Σ of those weights: firRow's
// arithmetic at the borders (the zero weights of the other samples add
// nothing; see cpusimd.BARowBorder).
// It is nil on the reference path, which does not use them.
func (k *kernel) rowBorders(w int) []rowBorder {
	if !useFast {
		return nil
	}
	off := k.off
	b1, b2 := min(w, off), max(0, w-off)
	var out []rowBorder
	for x := 0; x < w; x++ {
		if x >= b1 && x < b2 {
			x = b2 - 1
			continue
		}
		b := rowBorder{xb: x, jb: max(0, x-off), n: min(8, w-x)}
		je := min(w-1, x+7+off)
		b.w = make([][8]float32, je-b.jb+1)
		for l := 0; l < b.n; l++ {
			xl := x + l
			if xl >= b1 && xl < b2 {
				continue
			}
			b.mask |= 1 << l
			lo, hi := max(0, xl-off), min(w-1, xl+off)
			var wsum float32
			for j := lo; j <= hi; j++ {
				wsum += k.full[j-xl+off]
				b.w[j-b.jb][l] = k.full[j-xl+off]
			}
			b.s[l] = 1 / wsum
		}
		out = append(out, b)
		x += 7
	}
	return out
}

// The Malta difference constants of maltaUhf, maltaHfW and maltaMfW for
// cpusimd.
var (
	maltaUhfSIMD = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaUhf[0]), simdWeights(&maltaUhf[1])}
	maltaHfSIMD  = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaHfW[0]), simdWeights(&maltaHfW[1])}
	maltaMfSIMD  = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaMfW[0]), simdWeights(&maltaMfW[1])}
)

func simdWeights(m *maltaWeights) *cpusimd.BAMaltaWeights {
	return cpusimd.NewBAMaltaWeights(m.norm1, m.norm2gt, m.norm2lt)
}

// maltaBand is the height of the row bands of maltaRows.
const maltaBand = 32

// maltaIn is what the final stage of a level reads: the bands of the
// reference (p0) and the distorted image (p1), both masking activities and
// the reference's mask weights.
type maltaIn struct {
	p0, p1               *psycho
	act0, act1, mac, mdc plane
}

// finalRows is the table of cpusimd.BADiffmapRow for row y, with the Malta
// sums a0 and a1 and the output row o.
func (in *maltaIn) finalRows(y int, a0, a1, o []float32) [cpusimd.BARowOut + 1][]float32 {
	p0, p1 := in.p0, in.p1
	return [...][]float32{
		a0, a1,
		p0.hf[0].row(y), p1.hf[0].row(y), p0.hf[1].row(y), p1.hf[1].row(y),
		p0.mf[0].row(y), p1.mf[0].row(y), p0.mf[1].row(y), p1.mf[1].row(y), p0.mf[2].row(y), p1.mf[2].row(y),
		p0.lf[0].row(y), p1.lf[0].row(y), p0.lf[1].row(y), p1.lf[1].row(y), p0.lf[2].row(y), p1.lf[2].row(y),
		in.act0.row(y), in.act1.row(y), in.mac.row(y), in.mdc.row(y), o,
	}
}

// maltaDiffmap is diffmapLevel's Malta terms and final error terms on the
// fast path (maltaRows over the whole map).
func maltaDiffmap(wk workers, lv *level, p0, p1 *psycho, act1, res plane) {
	in := maltaIn{p0: p0, p1: p1, act0: lv.activity, act1: act1, mac: lv.mAC, mdc: lv.mDC}
	wk.rows(res.h, func(y0, y1 int) {
		mb := newMaltaBuf(res.w, min(maltaBand, y1-y0))
		maltaRows(&in, res, y0, y1, mb)
	})
}

// maltaBuf is the work memory of maltaRows for bands of up to rows rows of
// a w-wide level: three padded difference images of a band and its 4 rows
// above and below, and the two Malta sums of the band. The padding columns
// are never written, so they stay zero for as long as the buffer is used
// with this layout.
type maltaBuf struct {
	rows int
	d    [3]padded
	acc  [2]plane
}

func newMaltaBuf(w, rows int) *maltaBuf {
	s := w + 2*maltaPad
	n := (rows + 2*maltaPad) * s
	p := make([]float32, 3*n+2*rows*w)
	mb := &maltaBuf{rows: rows}
	for i := range mb.d {
		mb.d[i] = padded{w: w, h: rows, stride: s, p: p[i*n : (i+1)*n : (i+1)*n]}
	}
	accs := p[3*n:]
	mb.acc = [2]plane{{w: w, h: rows, p: accs[:rows*w]}, {w: w, h: rows, p: accs[rows*w:]}}
	return mb
}

// maltaRows computes rows [y0, y1) of res (the level's distance map before
// the half-resolution blend) in bands of mb.rows rows: per band and
// channel the three difference images of the band's rows and the 4 rows
// above and below (zero outside the image, as the padded planes of the
// reference loops in diffmapLevel are), the Malta sums of the band's rows,
// then the band's rows of res. The per-pixel arithmetic is the reference
// loops' (maltaDiffRow, the Malta filters, diffmapRowRef), through cpusimd
// on the fast path, so are the bits; what changes is that no plane of
// differences or Malta sums exists whole: three padded planes and two sums
// per level were fresh memory to fault in, written once and read once (the
// halo rows cost a quarter more difference rows instead).
func maltaRows(in *maltaIn, res plane, y0, y1 int, mb *maltaBuf) {
	h := res.h
	p0, p1 := in.p0, in.p1
	d, acc := &mb.d, &mb.acc
	s := d[0].stride
	weights := [3]*[2]*cpusimd.BAMaltaWeights{&maltaUhfSIMD, &maltaHfSIMD, &maltaMfSIMD}
	refWeights := [3]*[2]maltaWeights{&maltaUhf, &maltaHfW, &maltaMfW}
	for b0 := y0; b0 < y1; b0 += mb.rows {
		b1 := min(b0+mb.rows, y1)
		for c := 0; c < 2; c++ {
			for y := b0 - maltaPad; y < b1+maltaPad; y++ {
				r := y - b0
				for i := range d {
					row := d[i].inner(r)
					if y < 0 || y >= h {
						clear(row)
						continue
					}
					var a, b []float32
					switch i {
					case 0:
						a, b = p0.uhf[c].row(y), p1.uhf[c].row(y)
					case 1:
						a, b = p0.hf[c].row(y), p1.hf[c].row(y)
					default:
						a, b = p0.mf[c].row(y), p1.mf[c].row(y)
					}
					if useFast {
						cpusimd.BAMaltaDiff(weights[i][c], a, b, row)
					} else {
						maltaDiffRow(&refWeights[i][c], a, b, row)
					}
				}
			}
			for y := b0; y < b1; y++ {
				r := y - b0
				i0 := d[0].origin(r) - maltaPad*s - maltaPad
				o := acc[c].row(r)
				if useFast {
					cpusimd.BAMalta(o, d[0].p, d[1].p, d[2].p, i0, s)
					continue
				}
				for x := range o {
					i := i0 + x
					u := gather9(d[0].p, i, s)
					h := gather9(d[1].p, i, s)
					m := gather9(d[2].p, i, s)
					o[x] = maltaHF(u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8]) +
						maltaLF(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]) +
						maltaLF(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
				}
			}
		}
		for y := b0; y < b1; y++ {
			r := y - b0
			out := in.finalRows(y, acc[0].row(r), acc[1].row(r), res.row(y))
			if useFast {
				cpusimd.BADiffmapRow(&out, &diffmapSIMD)
			} else {
				diffmapRowRef(&out)
			}
		}
	}
}
