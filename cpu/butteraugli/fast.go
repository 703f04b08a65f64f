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

// colStrip is the width of the column strips of blurFast's vertical pass
// for a kernel reaching off rows each way: as wide as keeps the 2·off+1
// input rows of a strip within 8 KiB of L1 cache, in whole multiples of 64
// floats (33 rows of 64 for the longest kernel, 7 rows of 256 for the
// shortest). Columns are independent, so the width changes no result;
// wider strips only call the kernel fewer times per row.
func colStrip(off int) int {
	return max(64, (2048/(2*off+1))&^63)
}

// blurStride is the row stride of blurFast's intermediate plane: whole
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

// blurFast is blur for the FIR kernels: rows, then columns, the interior of
// both through cpusimd.BAFIR, the cut-off borders as firRow and firColumns
// compute them.
func blurFast(wk workers, k *kernel, in, out plane, sc *scratch) {
	w, h := in.w, in.h
	off := k.off
	st := blurStride(w)
	a := sc.plane(0, st, h).p
	arow := func(y int) []float32 { return a[y*st : y*st+w : y*st+w] }
	// The border columns: x < b1 and x ≥ b2 (all of them in a row
	// narrower than the kernel), eight at a time through
	// cpusimd.BARowBorder, with borderTap's renormalisation computed once
	// per column instead of once per pixel.
	b1, b2 := min(w, off), max(0, w-off)
	blocks := rowBorders(k, w, b1, b2)
	wk.rows(h, func(y0, y1 int) {
		var o [8]float32
		for y := y0; y < y1; y++ {
			src, dst := in.row(y), arow(y)
			if b1 < b2 {
				cpusimd.BAFIR(dst[b1:b2], src[b1-off:], 1, k.simd)
			}
			for i := range blocks {
				b := &blocks[i]
				cpusimd.BARowBorder(&o, src[b.jb:], b.w, &b.s)
				for l := 0; l < b.n; l++ {
					if b.mask&(1<<l) != 0 {
						dst[b.xb+l] = o[l]
					}
				}
			}
		}
	})
	wk.rows(h, func(y0, y1 int) {
		// Interior rows in strips of colStrip(off) columns, top to bottom, so
		// that the 2·off+1 input rows of a strip stay in the L1 cache.
		i0, i1 := max(y0, off), min(y1, h-off)
		strip := colStrip(off)
		for x0 := 0; x0 < w; x0 += strip {
			x1 := min(x0+strip, w)
			for y := i0; y < i1; y++ {
				cpusimd.BAFIR(out.row(y)[x0:x1], a[(y-off)*st+x0:], st, k.simd)
			}
		}
		var rows [2*maxOff + 1][]float32
		for y := y0; y < y1; y++ {
			if y >= off && y < h-off {
				continue
			}
			// Border row: cut-off kernel, renormalised (firColumns's
			// arithmetic, whole rows at a time).
			lo, hi := max(0, y-off), min(h-1, y+off)
			var wsum float32
			for j := lo; j <= hi; j++ {
				wsum += k.full[j-y+off]
				rows[j-lo] = arow(j)
			}
			cpusimd.BAColumnSum(out.row(y), rows[:hi-lo+1], k.full[lo-y+off:], 1/wsum)
		}
	})
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
func rowBorders(k *kernel, w, b1, b2 int) []rowBorder {
	off := k.off
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

// maltaBand is the height of the row bands of maltaDiffmap.
const maltaBand = 32

// maltaDiffmap is diffmapLevel's Malta terms and final error terms on the
// fast path, in bands of maltaBand rows: per band and channel the three
// difference images of the band's rows and the 4 rows above and below
// (zero outside the image, as the padded planes are), the Malta sums of
// the band's rows, then the band's rows of res. The per-pixel arithmetic is
// the reference loops' (maltaDiffRow, the Malta filters, diffmapRowsRef)
// as cpusimd computes them, so are the bits; what changes is that no
// plane of differences or Malta sums exists whole: three padded planes and
// two sums per level were fresh memory to fault in, written once and read
// once (the halo rows cost a quarter more difference rows instead).
func maltaDiffmap(wk workers, lv *level, p0, p1 *psycho, act1, res plane) {
	w, h := res.w, res.h
	s := w + 2*maltaPad
	wk.rows(h, func(y0, y1 int) {
		rows := min(maltaBand, y1-y0)
		pads := make([]float32, 3*(rows+2*maltaPad)*s+2*rows*w)
		var d [3]padded
		for i := range d {
			n := (rows + 2*maltaPad) * s
			d[i] = padded{w: w, h: rows, stride: s, p: pads[i*n : (i+1)*n : (i+1)*n]}
		}
		accs := pads[3*(rows+2*maltaPad)*s:]
		acc := [2]plane{{w: w, h: rows, p: accs[:rows*w]}, {w: w, h: rows, p: accs[rows*w:]}}
		weights := [3]*[2]*cpusimd.BAMaltaWeights{&maltaUhfSIMD, &maltaHfSIMD, &maltaMfSIMD}
		var out [cpusimd.BARowOut + 1][]float32
		for b0 := y0; b0 < y1; b0 += rows {
			b1 := min(b0+rows, y1)
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
						cpusimd.BAMaltaDiff(weights[i][c], a, b, row)
					}
				}
				for y := b0; y < b1; y++ {
					r := y - b0
					i0 := d[0].origin(r) - maltaPad*s - maltaPad
					cpusimd.BAMalta(acc[c].row(r), d[0].p, d[1].p, d[2].p, i0, s)
				}
			}
			for y := b0; y < b1; y++ {
				r := y - b0
				out = [...][]float32{
					acc[0].row(r), acc[1].row(r),
					p0.hf[0].row(y), p1.hf[0].row(y), p0.hf[1].row(y), p1.hf[1].row(y),
					p0.mf[0].row(y), p1.mf[0].row(y), p0.mf[1].row(y), p1.mf[1].row(y), p0.mf[2].row(y), p1.mf[2].row(y),
					p0.lf[0].row(y), p1.lf[0].row(y), p0.lf[1].row(y), p1.lf[1].row(y), p0.lf[2].row(y), p1.lf[2].row(y),
					lv.activity.row(y), act1.row(y), lv.mAC.row(y), lv.mDC.row(y), res.row(y),
				}
				cpusimd.BADiffmapRow(&out, &diffmapSIMD)
			}
		}
	})
}
