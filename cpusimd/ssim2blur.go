package cpusimd

import (
	"fmt"
	"math"

	"github.com/zenmetrics-go/zenmetrics/internal/recgauss"
)

// SSIMULACRA2's blur is libjxl's recursive Gaussian (three second-order IIR
// filters whose outputs are summed; see cpu/ssim2/blur.go for the full
// description). The kernels here do libjxl's float32 operations in libjxl's
// order, lane by lane:
//
//   - Cols, the vertical pass: each column runs the plain recurrence
//     y = n2·sum − (d1·y[n−1] + y[n−2]) (two fused operations), 8 columns
//     per instruction, up to 64 columns row by row (each row's inputs and
//     outputs contiguous, the column strips' recurrences overlapping);
//   - Rows8, the horizontal pass: eight rows at once, transposed so that
//     each vector lane is one row; per row the border outputs come one at a
//     time and the interior four at a time from powers of the recurrence,
//     exactly as libjxl's 4-lane code computes them.
//
// The one difference from cpu/ssim2's reference: it emulates libjxl's
// fused multiply-adds with float64 arithmetic (exact product, then two
// roundings), while these round once, as libjxl's FMA instructions do. The
// two differ only when the float64 sum lands exactly halfway between two
// float32 values, which is rare; the tests measure it.

// blurTabLen is the number of 8-lane constants of a Blur: n2[3], d1[3],
// then per filter k mulIn[k][0..3], mulPrev2[k][0..3], mulPrev[k][0..3].
const blurTabLen = 42

// Blur is one recursive Gaussian, its constants laid out for the kernels.
// It is read-only after NewBlur and safe for concurrent use.
type Blur struct {
	radius int
	c      recgauss.Coef
	tab    [blurTabLen][8]float32
}

// NewBlur lays out c for the kernels.
func NewBlur(c recgauss.Coef) *Blur {
	b := &Blur{radius: c.Radius, c: c}
	set := func(i int, v float32) {
		for l := range b.tab[i] {
			b.tab[i][l] = v
		}
	}
	for k := 0; k < 3; k++ {
		set(k, c.N2[k])
		set(3+k, c.D1[k])
		for j := 0; j < 4; j++ {
			set(6+12*k+j, c.MulIn[k][j])
			set(6+12*k+4+j, c.MulPrev2[k][j])
			set(6+12*k+8+j, c.MulPrev[k][j])
		}
	}
	return b
}

// Radius is the filter's look-ahead N.
func (b *Blur) Radius() int { return b.radius }

// Cols runs the vertical pass over columns [x0, x1) of the w×h plane in,
// writing the same columns of out (which must not overlap in).
func (b *Blur) Cols(in, out []float32, w, h, x0, x1 int) {
	if x0 >= x1 || h <= 0 {
		return
	}
	colsKernel(in, out, w, h, x0, x1, b)
}

// VRowStateLen is the length of the state buffer of VRow for rows of n
// columns.
func VRowStateLen(n int) int { return 6 * n }

// VRow computes one output row of the vertical pass over n columns (n a
// multiple of 8: pad the rows), for callers that produce the horizontal
// pass's rows as they go instead of whole planes: out[x] is the output of
// row y, from the horizontal outputs top = row y−N−1 and bot = row y+N−1
// (nil where that row is outside the image), and the filter states st
// (VRowStateLen(n) floats, zero before the first call for a plane, row
// y = 1−N). set must alternate 0, 1, 0, … from that first row. Rows before
// 0 only warm the states up; their out is scratch.
func (b *Blur) VRow(top, bot, out, st []float32, n, set int) {
	checkVRow(top, bot, out, st, n, set)
	vrowKernel(top, bot, out, st, n, rowMode(top, bot), set, b)
}

// VRow2 is VRow for rows y (top0, bot0 into out0, with set) and y+1 (top1,
// bot1 into out1, with 1−set) in one pass over the states; set is the same
// after it as before it.
func (b *Blur) VRow2(top0, bot0, top1, bot1, out0, out1, st []float32, n, set int) {
	checkVRow(top0, bot0, out0, st, n, set)
	checkVRow(top1, bot1, out1, st, n, set)
	vrow2Kernel(top0, bot0, top1, bot1, out0, out1, st, n, rowMode(top0, bot0), rowMode(top1, bot1), set, b)
}

func rowMode(top, bot []float32) int {
	mode := 0
	if top != nil {
		mode |= 1
	}
	if bot != nil {
		mode |= 2
	}
	return mode
}

func checkVRow(top, bot, out, st []float32, n, set int) {
	if n%8 != 0 || len(out) < n || len(st) < 6*n || (top != nil && len(top) < n) || (bot != nil && len(bot) < n) || set&^1 != 0 {
		panic(fmt.Sprintf("cpusimd: VRow of %d columns with len(out)=%d len(st)=%d set=%d", n, len(out), len(st), set))
	}
}

// vrowGo is the Go twin of vrowAVX2. The states of columns 8g…8g+7 are the
// 48 floats at st[48g:], filter k of set s at st[48g+8(3s+k):][:8].
func vrowGo(top, bot, out, st []float32, n, mode, set int, b *Blur) {
	c := &b.c
	for x := 0; x < n; x++ {
		var s float32
		switch mode {
		case 1:
			s = top[x]
		case 2:
			s = bot[x]
		case 3:
			s = top[x] + bot[x]
		}
		g, lane := x/8, x%8
		var v [3]float32
		for k := 0; k < 3; k++ {
			cur := &st[48*g+8*(3*set+k)+lane]
			old := &st[48*g+8*(3*(1-set)+k)+lane]
			v[k] = fma32(c.N2[k], s, -fma32(c.D1[k], *cur, *old))
			*old = v[k]
		}
		out[x] = v[0] + (v[1] + v[2])
	}
}

// vrow2Go is the Go twin of vrow2AVX2: two vrowGo rows.
func vrow2Go(top0, bot0, top1, bot1, out0, out1, st []float32, n, mode0, mode1, set int, b *Blur) {
	vrowGo(top0, bot0, out0, st, n, mode0, set, b)
	vrowGo(top1, bot1, out1, st, n, mode1, 1-set, b)
}

// RowsWorkLen is the length of the work buffer Rows8 needs for rows of
// width w.
func (b *Blur) RowsWorkLen(w int) int { return 2 * 8 * (w + 3*b.radius) }

// Rows8 runs the horizontal pass over eight consecutive rows of width w,
// in[r*w:(r+1)*w] for r < 8 (multiplied sample by sample by the same rows
// of mul when mul is not nil), into the same rows of out. work must hold
// RowsWorkLen(w) floats; none of the slices may overlap.
func (b *Blur) Rows8(in, mul, out []float32, w int, work []float32) {
	if w <= 0 {
		return
	}
	N := b.radius
	pad := 2 * N
	cols := w + 3*N
	t := work[: 8*cols : 8*cols]
	o := work[8*cols : 16*cols : 16*cols]
	clear(t[:8*pad])
	clear(t[8*(pad+w):])
	transposeInKernel(in, mul, w, t[8*pad:8*(pad+w)])
	n0, e1, e2 := rowBounds(w, N)
	hblurKernel(t, o, pad, n0, e1, e2, w, b)
	transposeOutKernel(o[8*pad:8*(pad+w)], out, w)
}

// rowBounds splits the outputs of a row of width xs, starting at n0 = 1−N
// (the first steps only warm the filters up), into border steps [n0, e1),
// four-output interior steps [e1, e2) and border steps [e2, xs), as
// libjxl's FastGaussian1D does.
func rowBounds(xs, N int) (n0, e1, e2 int) {
	const lanes = 4
	n0 = 1 - N
	firstAligned := (N + 1 + lanes - 1) / lanes * lanes
	e1 = min(firstAligned, xs)
	last := xs - N + 1 - (lanes - 1) // interior while n < last
	e2 = e1
	if last > e1 {
		e2 = e1 + (last-e1+lanes-1)/lanes*lanes
	}
	return n0, e1, e2
}

// fma32 is a*b+c rounded once to float32, as VFMADD…PS computes it. The
// product of two float32 values is exact in float64; the float64 sum s
// rounds, and rounding s again to float32 gives the correctly rounded
// result unless s falls exactly halfway between two float32 values while
// the exact sum does not (a float32 midpoint is a float64 value, so no
// other double rounding can happen). In that case the exact sum lies on
// the side of s given by the sum's rounding error e, which decides.
func fma32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	cc := float64(c)
	s := float64(p + cc)
	// TwoSum: s + e == p + cc exactly.
	bv := float64(s - p)
	e := float64(p-float64(s-bv)) + float64(cc-bv)
	f := float32(s)
	if e == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return f
	}
	fd := float64(f)
	if fd == s {
		return f
	}
	// g: the float32 neighbour of s on the other side from f.
	g := math.Nextafter32(f, float32(math.Inf(1)))
	if fd > s {
		g = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	if float64(fd+float64(g)) != float64(2*s) {
		return f // not a midpoint
	}
	lo, hi := f, g
	if hi < lo {
		lo, hi = hi, lo
	}
	if e > 0 {
		return hi
	}
	return lo
}

// colsGo is the Go twin of the vertical kernels: columns [x0, x1), each
// the plain recurrence, with the input sum formed as libjxl forms it (top
// + bottom, or the one that exists, or zero).
func colsGo(in, out []float32, w, h, x0, x1 int, b *Blur) {
	checkCols(in, out, w, h, x0, x1)
	N := b.radius
	c := &b.c
	const block = 16
	for xb := x0; xb < x1; xb += block {
		nc := min(block, x1-xb)
		var y1, y2 [3][block]float32
		for n := 1 - N; n < h; n++ {
			top, bot := n-N-1, n+N-1
			for j := 0; j < nc; j++ {
				x := xb + j
				var s float32
				switch {
				case top >= 0 && bot < h:
					s = in[top*w+x] + in[bot*w+x]
				case top >= 0:
					s = in[top*w+x]
				case bot < h:
					s = in[bot*w+x]
				}
				var v [3]float32
				for k := 0; k < 3; k++ {
					t := fma32(c.D1[k], y1[k][j], y2[k][j])
					v[k] = fma32(c.N2[k], s, -t)
					y2[k][j], y1[k][j] = y1[k][j], v[k]
				}
				if n >= 0 {
					out[n*w+x] = v[0] + (v[1] + v[2])
				}
			}
		}
	}
}

// hblurGo is the Go twin of hblurAVX2: the horizontal pass over the eight
// transposed rows of t (column x of row r at t[8(pad+x)+r], zero outside
// the row) into o (same layout), border steps over [n0, e1) and [e2, xs),
// four-output steps over [e1, e2).
func hblurGo(t, o []float32, pad, n0, e1, e2, xs int, b *Blur) {
	checkHblur(t, o, pad, n0, xs, b.radius)
	N := b.radius
	c := &b.c
	for r := 0; r < 8; r++ {
		at := func(x int) float32 { return t[8*(pad+x)+r] }
		var p1, p2 [3]float32
		step := func(n int) {
			s := at(n-N-1) + at(n+N-1)
			var v [3]float32
			for k := 0; k < 3; k++ {
				x := float32(s * c.MulIn[k][0])
				x = fma32(c.MulPrev2[k][0], p2[k], x)
				x = fma32(c.MulPrev[k][0], p1[k], x)
				p2[k], p1[k] = p1[k], x
				v[k] = x
			}
			o[8*(pad+n)+r] = v[0] + (v[1] + v[2])
		}
		n := n0
		for ; n < e1; n++ {
			step(n)
		}
		for ; n < e2; n += 4 {
			var f [4]float32
			for i := range f {
				f[i] = at(n-N-1+i) + at(n+N-1+i)
			}
			var res [3][4]float32
			for k := 0; k < 3; k++ {
				m := &c.MulIn[k]
				a := [4]float32{float32(f[0] * m[0]), float32(f[0] * m[1]), float32(f[0] * m[2]), float32(f[0] * m[3])}
				a[1] = fma32(m[0], f[1], a[1])
				a[2] = fma32(m[1], f[1], a[2])
				a[3] = fma32(m[2], f[1], a[3])
				a[2] = fma32(m[0], f[2], a[2])
				a[3] = fma32(m[1], f[2], a[3])
				a[3] = fma32(m[0], f[3], a[3])
				for j := range a {
					a[j] = fma32(c.MulPrev[k][j], p1[k], fma32(c.MulPrev2[k][j], p2[k], a[j]))
				}
				p2[k], p1[k] = a[2], a[3]
				res[k] = a
			}
			for j := 0; j < 4; j++ {
				o[8*(pad+n+j)+r] = res[0][j] + (res[1][j] + res[2][j])
			}
		}
		for ; n < xs; n++ {
			step(n)
		}
	}
}

// transposeInGo is the twin of the transpose kernels for columns
// [x0, w): t[8x+r] = in[r*w+x], times mul[r*w+x] when mul is not nil.
func transposeInGo(in, mul []float32, w int, t []float32, x0 int) {
	in, t = in[:8*w], t[:8*w]
	if mul != nil {
		mul = mul[:8*w]
	}
	for x := x0; x < w; x++ {
		for r := 0; r < 8; r++ {
			v := in[r*w+x]
			if mul != nil {
				v = float32(v * mul[r*w+x])
			}
			t[8*x+r] = v
		}
	}
}

// transposeOutGo: out[r*w+x] = o[8x+r] for x in [x0, w).
func transposeOutGo(o, out []float32, w, x0 int) {
	o, out = o[:8*w], out[:8*w]
	for x := x0; x < w; x++ {
		for r := 0; r < 8; r++ {
			out[r*w+x] = o[8*x+r]
		}
	}
}

// checkCols panics (before any assembly runs) unless columns [x0, x1) of
// a w×h plane lie inside in and out.
func checkCols(in, out []float32, w, h, x0, x1 int) {
	if x0 < 0 || x1 > w || x0 > x1 || h < 0 || len(in) < w*h || len(out) < w*h {
		panic(fmt.Sprintf("cpusimd: Cols(%d, %d) of %dx%d with len(in)=%d len(out)=%d", x0, x1, w, h, len(in), len(out)))
	}
}

// checkHblur panics unless every column the horizontal kernel touches
// (t: n0−N−1 … xs+N−2, o: n0 … xs−1, shifted by pad) is inside t and o.
func checkHblur(t, o []float32, pad, n0, xs, N int) {
	if N < 1 || pad+n0-N-1 < 0 || len(t) < 8*(pad+xs+N-1) || len(o) < 8*(pad+xs) {
		panic(fmt.Sprintf("cpusimd: horizontal blur of width %d, radius %d, pad %d with len(t)=%d len(o)=%d", xs, N, pad, len(t), len(o)))
	}
}
