package cpusimd

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/recgauss"
)

var testBlur = NewBlur(recgauss.New(1.5))

// TestFma32 checks the Go twins' fused multiply-add against exact
// arithmetic (big.Float, rounded once to float32), on random operands and
// on operands built so that the float64 sum is a float32 midpoint (the
// double-rounding case).
func TestFma32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(300).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(300).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(300).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	check := func(a, b, c float32) {
		t.Helper()
		if got, want := fma32(a, b, c), exact(a, b, c); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		a := float32(rng.NormFloat64())
		b := float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
		c := float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
		check(a, b, c)
	}
	// Midpoint cases: c = 1 + ulp/2-ish combinations where the product is
	// a tiny perturbation: a·b = 2^-24 + 2^-60 style values.
	mids := 0
	for i := 0; i < 200000; i++ {
		c := float32(1 + rng.Float64())
		ulp := float64(math.Nextafter32(c, 2) - c)
		// a·b ≈ ±ulp/2 · (1 ± tiny): a = ulp/2·(1+k·2^-23), b = 1 ± 2^-23·j.
		a := float32(ulp / 2 * (1 + float64(rng.IntN(8))*math.Exp2(-23)))
		b := float32(1 + float64(rng.IntN(5)-2)*math.Exp2(-23))
		if rng.IntN(2) == 0 {
			b = -b
		}
		if naive := float32(float64(a)*float64(b) + float64(c)); naive != exact(a, b, c) {
			mids++ // the double rounding that fma32 must avoid
		}
		check(a, b, c)
	}
	t.Logf("%d of the midpoint cases double-round in plain float64 arithmetic", mids)
	if mids == 0 {
		t.Error("the midpoint cases never exercise the double rounding")
	}
}

// blurImpl is one implementation of the kernels under test: the assembly
// (where built and supported) and the Go twins run the same suite.
type blurImpl struct {
	name  string
	cols  func(in, out []float32, w, h, x0, x1 int)
	rows8 func(in, mul, out []float32, w int, work []float32)
	vrow  func(top, bot, out, st []float32, n, set int)
	vrow2 func(top0, bot0, top1, bot1, out0, out1, st []float32, n, set int)
}

func impls(t *testing.T) []blurImpl {
	b := testBlur
	goImpl := blurImpl{
		name: "go",
		cols: func(in, out []float32, w, h, x0, x1 int) { colsGo(in, out, w, h, x0, x1, b) },
		rows8: func(in, mul, out []float32, w int, work []float32) {
			N := b.radius
			pad := 2 * N
			cols := w + 3*N
			tt := work[:8*cols]
			o := work[8*cols : 16*cols]
			clear(tt)
			transposeInGo(in, mul, w, tt[8*pad:8*(pad+w)], 0)
			n0, e1, e2 := rowBounds(w, N)
			hblurGo(tt, o, pad, n0, e1, e2, w, b)
			transposeOutGo(o[8*pad:8*(pad+w)], out, w, 0)
		},
		vrow: func(top, bot, out, st []float32, n, set int) {
			mode := 0
			if top != nil {
				mode |= 1
			}
			if bot != nil {
				mode |= 2
			}
			vrowGo(top, bot, out, st, n, mode, set, b)
		},
		vrow2: func(top0, bot0, top1, bot1, out0, out1 []float32, st []float32, n, set int) {
			vrow2Go(top0, bot0, top1, bot1, out0, out1, st, n, rowMode(top0, bot0), rowMode(top1, bot1), set, b)
		},
	}
	list := []blurImpl{goImpl}
	if useAsm {
		list = append(list, blurImpl{name: "asm", cols: b.Cols, rows8: b.Rows8, vrow: b.VRow, vrow2: b.VRow2})
	} else {
		t.Log("assembly kernels not available here: testing the Go twins only")
	}
	return list
}

// oracleRow is libjxl's horizontal pass over one row written the plain
// way (scalar, bounds-checked reads, exactly rounded FMAs).
func oracleRow(in []float32, c *recgauss.Coef) []float32 {
	xs, N := len(in), c.Radius
	out := make([]float32, xs)
	get := func(i int) float32 {
		if i < 0 || i >= xs {
			return 0
		}
		return in[i]
	}
	var p1, p2 [3]float32
	step := func(n int) {
		s := get(n-N-1) + get(n+N-1)
		var v [3]float32
		for k := 0; k < 3; k++ {
			x := float32(s * c.MulIn[k][0])
			x = fma32(c.MulPrev2[k][0], p2[k], x)
			x = fma32(c.MulPrev[k][0], p1[k], x)
			p2[k], p1[k], v[k] = p1[k], x, x
		}
		if n >= 0 {
			out[n] = v[0] + (v[1] + v[2])
		}
	}
	n := 1 - N
	for end := min((N+4)/4*4, xs); n < end; n++ {
		step(n)
	}
	for ; n < xs-N+1-3; n += 4 {
		var f [4]float32
		for i := range f {
			f[i] = in[n-N-1+i] + in[n+N-1+i]
		}
		var res [3][4]float32
		for k := 0; k < 3; k++ {
			m := &c.MulIn[k]
			for j := 0; j < 4; j++ {
				a := float32(f[0] * m[j])
				for i := 1; i <= j; i++ {
					a = fma32(m[j-i], f[i], a)
				}
				a = fma32(c.MulPrev2[k][j], p2[k], a)
				res[k][j] = fma32(c.MulPrev[k][j], p1[k], a)
			}
			p2[k], p1[k] = res[k][2], res[k][3]
		}
		for j := 0; j < 4; j++ {
			out[n+j] = res[0][j] + (res[1][j] + res[2][j])
		}
	}
	for ; n < xs; n++ {
		step(n)
	}
	return out
}

// oracleCol is the vertical pass over one column.
func oracleCol(in []float32, c *recgauss.Coef) []float32 {
	h, N := len(in), c.Radius
	out := make([]float32, h)
	var y1, y2 [3]float32
	for n := 1 - N; n < h; n++ {
		var s float32
		top, bot := n-N-1, n+N-1
		switch {
		case top >= 0 && bot < h:
			s = in[top] + in[bot]
		case top >= 0:
			s = in[top]
		case bot < h:
			s = in[bot]
		}
		var v [3]float32
		for k := 0; k < 3; k++ {
			v[k] = fma32(c.N2[k], s, -fma32(c.D1[k], y1[k], y2[k]))
			y2[k], y1[k] = y1[k], v[k]
		}
		if n >= 0 {
			out[n] = v[0] + (v[1] + v[2])
		}
	}
	return out
}

// guarded returns a slice of n floats inside a larger one whose guard
// bands (g floats either side) hold a NaN pattern, and a check that the
// bands are intact.
func guarded(n, g int) ([]float32, func(t *testing.T, what string)) {
	const sentinel = 0x7fc0dead
	buf := make([]float32, n+2*g)
	for i := range buf {
		buf[i] = math.Float32frombits(sentinel)
	}
	return buf[g : g+n : g+n], func(t *testing.T, what string) {
		t.Helper()
		for i := 0; i < g; i++ {
			if math.Float32bits(buf[i]) != sentinel || math.Float32bits(buf[g+n+i]) != sentinel {
				t.Fatalf("%s: write outside the buffer (guard band %d)", what, i)
			}
		}
	}
}

func randPlane(rng *rand.Rand, dst []float32) {
	for i := range dst {
		// Blur inputs: XYB-like values and their products, some zeros.
		switch rng.IntN(16) {
		case 0:
			dst[i] = 0
		default:
			dst[i] = float32(rng.Float64()*1.2 - 0.1)
		}
	}
}

func same(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// TestCols runs the vertical pass of every implementation on random planes
// of every width 1..40 (and a few wide ones) and heights from 1 (below the
// radius) up, over random column ranges, and requires the oracle's bits
// exactly; columns outside the range and the guard bands must stay as
// they were.
func TestCols(t *testing.T) {
	c := &testBlur.c
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			widths := []int{}
			for w := 1; w <= 40; w++ {
				widths = append(widths, w)
			}
			widths = append(widths, 63, 64, 65, 100, 129, 200)
			for _, w := range widths {
				for _, h := range []int{1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 31} {
					in, _ := guarded(w*h, 64)
					randPlane(rng, in)
					out, checkOut := guarded(w*h, 64)
					x0 := rng.IntN(w)
					x1 := x0 + 1 + rng.IntN(w-x0)
					if rng.IntN(3) == 0 {
						x0, x1 = 0, w
					}
					const untouched = 12345
					for i := range out {
						out[i] = untouched
					}
					im.cols(in, out, w, h, x0, x1)
					checkOut(t, fmt.Sprintf("%dx%d cols [%d,%d)", w, h, x0, x1))
					col := make([]float32, h)
					for x := 0; x < w; x++ {
						for y := 0; y < h; y++ {
							col[y] = in[y*w+x]
						}
						var want []float32
						if x >= x0 && x < x1 {
							want = oracleCol(col, c)
						}
						for y := 0; y < h; y++ {
							got := out[y*w+x]
							if want == nil {
								if got != untouched {
									t.Fatalf("%dx%d cols [%d,%d): column %d written", w, h, x0, x1, x)
								}
							} else if !same(got, want[y]) {
								t.Fatalf("%dx%d cols [%d,%d): (%d,%d) = %g, oracle %g", w, h, x0, x1, x, y, got, want[y])
							}
						}
					}
				}
			}
		})
	}
}

// TestRows8 runs the horizontal pass of every implementation over eight
// random rows of every width 1..40 (and some wide ones), with and without
// the multiplier rows, against the oracle bit for bit, with guard bands
// around every buffer (the work buffer included).
func TestRows8(t *testing.T) {
	c := &testBlur.c
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			widths := []int{}
			for w := 1; w <= 40; w++ {
				widths = append(widths, w)
			}
			widths = append(widths, 63, 64, 65, 100, 257, 1023)
			for _, w := range widths {
				for _, withMul := range []bool{false, true} {
					in, checkIn := guarded(8*w, 64)
					randPlane(rng, in)
					var mul []float32
					checkMul := func(*testing.T, string) {}
					if withMul {
						mul, checkMul = guarded(8*w, 64)
						randPlane(rng, mul)
					}
					out, checkOut := guarded(8*w, 64)
					work, checkWork := guarded(testBlur.RowsWorkLen(w), 64)
					// Dirty work buffer: the kernels must not rely on it.
					for i := range work {
						work[i] = float32(rng.NormFloat64())
					}
					im.rows8(in, mul, out, w, work)
					what := fmt.Sprintf("w=%d mul=%v", w, withMul)
					checkIn(t, what)
					checkMul(t, what)
					checkOut(t, what)
					checkWork(t, what)
					row := make([]float32, w)
					for r := 0; r < 8; r++ {
						for x := 0; x < w; x++ {
							row[x] = in[r*w+x]
							if withMul {
								row[x] = float32(row[x] * mul[r*w+x])
							}
						}
						want := oracleRow(row, c)
						for x := 0; x < w; x++ {
							if got := out[r*w+x]; !same(got, want[x]) {
								t.Fatalf("%s: row %d x %d = %g, oracle %g", what, r, x, got, want[x])
							}
						}
					}
				}
			}
		})
	}
}

// TestRowBounds checks the split of a row into border and interior steps
// against libjxl's loop conditions for every width up to 100.
func TestRowBounds(t *testing.T) {
	for _, N := range []int{1, 2, 3, 5, 7} {
		for xs := 1; xs <= 100; xs++ {
			n0, e1, e2 := rowBounds(xs, N)
			// libjxl: n from 1−N while n < min(firstAligned, xs); then
			// while n < xs−N+1−3 step 4; then the rest.
			n := 1 - N
			first := (N + 1 + 3) / 4 * 4
			for n < min(first, xs) {
				n++
			}
			w1 := n
			for n < xs-N+1-3 {
				n += 4
			}
			if n0 != 1-N || e1 != w1 || e2 != n {
				t.Fatalf("N=%d xs=%d: got %d %d %d, want %d %d %d", N, xs, n0, e1, e2, 1-N, w1, n)
			}
			if e2 > e1 && (e1-N-1 < 0 || e2-4+N-1+3 >= xs) {
				t.Fatalf("N=%d xs=%d: interior reads outside the row", N, xs)
			}
		}
	}
}

// TestVRow runs the row-at-a-time vertical pass of every implementation
// over random planes (widths 1..40 and some wide ones, padded to a multiple
// of 8 with garbage in the padding; heights from 1, below the radius),
// against the column oracle bit for bit, with guard bands around the
// output row and the states.
func TestVRow(t *testing.T) {
	c := &testBlur.c
	N := testBlur.radius
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, 14))
			widths := []int{}
			for w := 1; w <= 40; w++ {
				widths = append(widths, w)
			}
			widths = append(widths, 64, 100, 1024)
			for _, w := range widths {
				for _, h := range []int{1, 2, 4, 5, 6, 9, 12, 33} {
					n := (w + 7) &^ 7
					in := make([]float32, n*h)
					randPlane(rng, in)
					st, checkSt := guarded(VRowStateLen(n), 32)
					clear(st)
					row, checkRow := guarded(n, 32)
					row1, checkRow1 := guarded(n, 32)
					got := make([]float32, w*h)
					inputs := func(y int) (top, bot []float32) {
						if r := y - N - 1; r >= 0 {
							top = in[r*n : (r+1)*n]
						}
						if r := y + N - 1; r < h {
							bot = in[r*n : (r+1)*n]
						}
						return top, bot
					}
					keep := func(y int, row []float32) {
						if y >= 0 {
							copy(got[y*w:(y+1)*w], row[:w])
						}
					}
					// Rows one at a time and, at random, two at a time.
					set := 0
					for y := 1 - N; y < h; {
						top, bot := inputs(y)
						if y+1 < h && rng.IntN(2) == 0 {
							top1, bot1 := inputs(y + 1)
							im.vrow2(top, bot, top1, bot1, row, row1, st, n, set)
							keep(y, row)
							keep(y+1, row1)
							y += 2
							continue
						}
						im.vrow(top, bot, row, st, n, set)
						set ^= 1
						keep(y, row)
						y++
					}
					what := fmt.Sprintf("%dx%d", w, h)
					checkSt(t, what)
					checkRow(t, what)
					checkRow1(t, what)
					col := make([]float32, h)
					for x := 0; x < w; x++ {
						for y := 0; y < h; y++ {
							col[y] = in[y*n+x]
						}
						want := oracleCol(col, c)
						for y := 0; y < h; y++ {
							if g := got[y*w+x]; !same(g, want[y]) {
								t.Fatalf("%s: (%d,%d) = %g, oracle %g", what, x, y, g, want[y])
							}
						}
					}
				}
			}
		})
	}
}
