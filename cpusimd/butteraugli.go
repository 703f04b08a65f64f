package cpusimd

//go:generate sh -c "cd ../_generate && go run ./butteraugli -dir ../cpusimd"

import (
	"fmt"
	"math"
	"os"
)

// Butteraugli's kernels (cpu/butteraugli's fast path). Each exported
// function checks its slices, runs whole blocks of eight in assembly where
// it is built and supported, and the rest (or everything, without it) with
// its Go twin, which is cpu/butteraugli's reference arithmetic for one
// sample: float32 steps rounded one by one (no fused multiply-adds) in the
// reference's order, float64 where the reference widens. The assembly does
// the same per lane, so both give the reference's bits.

var baEnabled = baAsm && os.Getenv("ZENMETRICS_NOSIMD") == ""

// ButteraugliEnabled reports whether Butteraugli's assembly kernels run on
// this machine (AVX2 on amd64, NEON on arm64; not built with noasm,
// ZENMETRICS_NOSIMD unset). The kernels below work either way; without assembly they are no
// faster than cpu/butteraugli's own loops.
func ButteraugliEnabled() bool { return baEnabled }

// BATaps is a symmetric FIR kernel for BAFIR: its half (outermost tap
// first, the centre last), off = len−1 ∈ {3, 6, 7, 16}, and each tap
// broadcast to eight lanes for the assembly.
type BATaps struct {
	half []float32
	tab  [][8]float32
}

// NewBATaps prepares the kernel whose half is k.
func NewBATaps(k []float32) *BATaps {
	off := len(k) - 1
	if off != 3 && off != 6 && off != 7 && off != 16 {
		panic(fmt.Sprintf("cpusimd: BAFIR kernel of %d taps", 2*off+1))
	}
	t := &BATaps{half: append([]float32(nil), k...), tab: make([][8]float32, len(k))}
	for i, v := range k {
		for l := range t.tab[i] {
			t.tab[i][l] = v
		}
	}
	return t
}

// BAFIR applies the kernel to len(dst) outputs: dst[i] reads src[i +
// t·step] for t = 0..2·off. Pair j (taps t = j and 2·off−j) goes into
// partial sum j mod 4, and dst[i] = centre·k[off] + s0 + s1 + s2 (+ s3).
// dst must not overlap src.
func BAFIR(dst, src []float32, step int, k *BATaps) {
	off := len(k.half) - 1
	n := len(dst)
	if n == 0 {
		return
	}
	if step < 1 {
		panic(fmt.Sprintf("cpusimd: BAFIR step %d", step))
	}
	if need := 2*off*step + n; len(src) < need {
		panic(fmt.Sprintf("cpusimd: BAFIR src has %d samples, needs %d", len(src), need))
	}
	i := 0
	if baEnabled {
		i = n &^ 7
		firKernel(dst, src, step, k.tab, i/8)
		if i < n && i >= 8 {
			// The last outputs: one more block, ending at n, over outputs
			// already written. Each output depends on src alone (dst must
			// not overlap src), and a lane gives the twin's bits, so the
			// rewritten ones are unchanged; the twin would cost more for
			// these few than the kernel for the whole row.
			firKernel(dst[n-8:], src[n-8:], step, k.tab, 1)
			i = n
		}
	}
	firGo(dst, src, step, k.half, i)
}

// firGo is BAFIR's twin from output i0 on.
func firGo(dst, src []float32, step int, k []float32, i0 int) {
	off := len(k) - 1
	for i := i0; i < len(dst); i++ {
		var a [4]float32
		for j := 0; j < off; j++ {
			// Every product rounded on its own (float32(·)): Go on arm64
			// would otherwise fuse it into the sum.
			v := float32((src[i+j*step] + src[i+(2*off-j)*step]) * k[j])
			if j < 4 {
				a[j] = v
			} else {
				a[j%4] += v
			}
		}
		v := float32(src[i+off*step] * k[off])
		for j := 0; j < min(4, off); j++ {
			v += a[j]
		}
		dst[i] = v
	}
}

// BAMalta writes o[x] = maltaHF(u) + maltaLF(h) + maltaLF(m) for each x,
// the filters reading the 9×9 block whose top-left sample is at index
// i0 + x of each plane (rows stride samples apart). u, h and m are zero
// outside the image (cpu/butteraugli pads them). o must not overlap them.
func BAMalta(o, u, h, m []float32, i0, stride int) {
	n := len(o)
	if n == 0 {
		return
	}
	if i0 < 0 || stride < 9 {
		panic("cpusimd: BAMalta bad origin or stride")
	}
	need := i0 + n - 1 + 8*stride + 9
	if len(u) < need || len(h) < need || len(m) < need {
		panic("cpusimd: BAMalta planes too short")
	}
	x := 0
	if baEnabled {
		x = n &^ 7
		maltaKernel(o, u[i0:], h[i0:], m[i0:], x/8, stride)
		if x < n && x >= 8 {
			// The last outputs as one more block ending at n (see BAFIR).
			j := i0 + n - 8
			maltaKernel(o[n-8:], u[j:], h[j:], m[j:], 1, stride)
			x = n
		}
	}
	for ; x < n; x++ {
		i := i0 + x
		o[x] = maltaHFGo(gather9(u, i, stride)) + maltaLFGo(gather9(h, i, stride)) + maltaLFGo(gather9(m, i, stride))
	}
}

func gather9(p []float32, i, s int) *[9][9]float32 {
	var g [9][9]float32
	for k := range g {
		copy(g[k][:], p[i+k*s:i+k*s+9])
	}
	return &g
}

func sum5(a, b, c, d, e float32) float32 { return (a + b) + (c + (d + e)) }

func sum7(a, b, c, d, e, f, g float32) float32 { return (a + b) + (c + ((d + e) + (f + g))) }

func sum9(a, b, c, d, e, f, g, h, i float32) float32 {
	return ((a + b) + (c + d)) + ((e + f) + (g + h)) + i
}

// maltaLFGo is the sparse (5-sample) Malta filter on block m (the pixel at
// m[4][4]). The squares are rounded before they are summed (float32(t·t)),
// as the reference does on amd64; Go on arm64 would fuse them.
func maltaLFGo(m *[9][9]float32) float32 {
	c := m[4][4]
	t := sum5(m[4][0], m[4][2], c, m[4][6], m[4][8])
	r := float32(t * t)
	for _, s := range [...][4][2]int{
		{{0, 4}, {2, 4}, {6, 4}, {8, 4}},
		{{1, 1}, {2, 2}, {6, 6}, {7, 7}},
		{{1, 7}, {2, 6}, {6, 2}, {7, 1}},
		{{0, 5}, {2, 5}, {6, 3}, {8, 3}},
		{{0, 3}, {2, 3}, {6, 5}, {8, 5}},
		{{3, 0}, {3, 2}, {5, 6}, {5, 8}},
		{{5, 0}, {5, 2}, {3, 6}, {3, 8}},
		{{1, 2}, {2, 3}, {6, 5}, {7, 6}},
		{{1, 6}, {2, 5}, {6, 3}, {7, 2}},
		{{2, 1}, {3, 2}, {5, 6}, {6, 7}},
		{{2, 7}, {3, 6}, {5, 2}, {6, 1}},
		{{6, 0}, {5, 2}, {3, 6}, {2, 8}},
		{{2, 0}, {3, 2}, {5, 6}, {6, 8}},
		{{0, 2}, {2, 3}, {6, 5}, {8, 6}},
		{{0, 6}, {2, 5}, {6, 3}, {8, 2}},
	} {
		t = sum5(m[s[0][0]][s[0][1]], m[s[1][0]][s[1][1]], c, m[s[2][0]][s[2][1]], m[s[3][0]][s[3][1]])
		r += float32(t * t)
	}
	return r
}

// maltaHFGo is the dense (7- to 9-sample) Malta filter on block m.
func maltaHFGo(m *[9][9]float32) float32 {
	c := m[4][4]
	m0, m1, m2, m3, m4, m5, m6, m7, m8 := &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &m[6], &m[7], &m[8]
	t := sum9(m4[0], m4[1], m4[2], m4[3], c, m4[5], m4[6], m4[7], m4[8])
	r := float32(t * t)
	t = sum9(m0[4], m1[4], m2[4], m3[4], c, m5[4], m6[4], m7[4], m8[4])
	r += float32(t * t)
	t = sum7(m1[1], m2[2], m3[3], c, m5[5], m6[6], m7[7])
	r += float32(t * t)
	t = sum7(m1[7], m2[6], m3[5], c, m5[3], m6[2], m7[1])
	r += float32(t * t)
	// Four segments appear twice in the reference's list of sixteen.
	a := sum9(m0[5], m1[5], m2[5], m3[4], c, m5[4], m6[3], m7[3], m8[3])
	r += float32(a * a)
	b := sum9(m0[3], m1[3], m2[3], m3[4], c, m5[4], m6[5], m7[5], m8[5])
	r += float32(b * b)
	e := sum9(m3[0], m3[1], m3[2], m4[3], c, m4[5], m5[6], m5[7], m5[8])
	r += float32(e * e)
	f := sum9(m5[0], m5[1], m5[2], m4[3], c, m4[5], m3[6], m3[7], m3[8])
	r += float32(f * f)
	t = sum7(m1[2], m2[3], m3[3], c, m5[5], m6[5], m7[6])
	r += float32(t * t)
	t = sum7(m1[6], m2[5], m3[5], c, m5[3], m6[3], m7[2])
	r += float32(t * t)
	t = sum7(m2[1], m3[2], m3[3], c, m5[5], m5[6], m6[7])
	r += float32(t * t)
	t = sum7(m2[7], m3[6], m3[5], c, m5[3], m5[2], m6[1])
	r += float32(t * t)
	r += float32(f * f)
	r += float32(e * e)
	r += float32(b * b)
	r += float32(a * a)
	return r
}

// BAMaltaWeights are the constants of one Malta difference image; F64 holds
// 0.55 and 1.05, the reference's double-precision bounds, for the assembly.
type BAMaltaWeights struct {
	Norm1, Norm2Gt, Norm2Lt float32
	_                       float32
	f64                     [2]float64
}

// NewBAMaltaWeights fills in the float64 constants.
func NewBAMaltaWeights(norm1, norm2gt, norm2lt float32) *BAMaltaWeights {
	return &BAMaltaWeights{Norm1: norm1, Norm2Gt: norm2gt, Norm2Lt: norm2lt, f64: [2]float64{0.55, 1.05}}
}

// BAMaltaDiff writes the weighted, asymmetric difference of reference row
// r0 and distorted row r1 into o (cpu/butteraugli's maltaDiffRow); o must
// not overlap r0 or r1.
func BAMaltaDiff(w *BAMaltaWeights, r0, r1, o []float32) {
	n := len(o)
	if len(r0) < n || len(r1) < n {
		panic("cpusimd: BAMaltaDiff rows too short")
	}
	x := 0
	if baEnabled {
		x = n &^ 7
		maltaDiffKernel(r0, r1, o, x/8, w)
		if x < n && x >= 8 {
			// The last outputs as one more block ending at n (see BAFIR;
			// o must not overlap r0 or r1).
			maltaDiffKernel(r0[n-8:], r1[n-8:], o[n-8:], 1, w)
			x = n
		}
	}
	for ; x < n; x++ {
		o[x] = maltaDiffGo(w, r0[x], r1[x])
	}
}

func maltaDiffGo(w *BAMaltaWeights, v0, v1 float32) float32 {
	absval := float32(0.5 * (baAbs32(v0) + baAbs32(v1))) // rounded: no fusion into den on arm64
	den := w.Norm1 + absval
	d := w.Norm2Gt / den * (v0 - v1)
	scaler2 := float64(w.Norm2Lt / den)
	fabs0 := float64(baAbs32(v0))
	tooSmall := float64(0.55 * fabs0)
	tooBig := float64(1.05 * fabs0)
	w1 := float64(v1)
	if v0 < 0 {
		if w1 > -tooSmall {
			d = float32(float64(d) - float64(scaler2*(w1+tooSmall)))
		} else if w1 < -tooBig {
			d = float32(float64(d) + float64(scaler2*(-w1-tooBig)))
		}
	} else {
		if w1 < tooSmall {
			d = float32(float64(d) + float64(scaler2*(tooSmall-w1)))
		} else if w1 > tooBig {
			d = float32(float64(d) - float64(scaler2*(w1-tooBig)))
		}
	}
	return d
}

func baAbs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// baColRows is the most rows BAColumnSum takes: the longest kernel's
// 2·16+1 taps.
const baColRows = 33

// BAColumnSum writes dst[x] = (Σ_j rows[j][x]·k[j])·scale for every x:
// each product rounded on its own, the sum started at +0 and taken in j
// order, then scaled. It is cpu/butteraugli's cut-off column kernel, the
// top and bottom rows of a column blur (the taps inside the image,
// renormalised), which would otherwise run as scalar Go over whole rows.
// dst must not overlap the rows.
func BAColumnSum(dst []float32, rows [][]float32, k []float32, scale float32) {
	n := len(dst)
	if len(rows) > baColRows || len(k) < len(rows) {
		panic(fmt.Sprintf("cpusimd: BAColumnSum of %d rows with %d weights", len(rows), len(k)))
	}
	for _, r := range rows {
		if len(r) < n {
			panic("cpusimd: BAColumnSum rows too short")
		}
	}
	x := 0
	if baEnabled && n >= 8 && len(rows) > 0 {
		var ptrs [baColRows]*float32
		for j, r := range rows {
			ptrs[j] = &r[0]
		}
		if colSumKernel(dst, &ptrs, k, len(rows), n/8, scale) {
			x = n &^ 7
			if x < n {
				// The last outputs as one more block ending at n (see
				// BAFIR).
				for j, r := range rows {
					ptrs[j] = &r[n-8]
				}
				colSumKernel(dst[n-8:], &ptrs, k, len(rows), 1, scale)
				x = n
			}
		}
	}
	colSumGo(dst, rows, k, scale, x)
}

// colSumGo is BAColumnSum's twin from output x0 on.
func colSumGo(dst []float32, rows [][]float32, k []float32, scale float32, x0 int) {
	for x := x0; x < len(dst); x++ {
		var acc float32
		for j, r := range rows {
			acc += float32(r[x] * k[j])
		}
		dst[x] = acc * scale
	}
}

// BARowBorder computes eight outputs of a cut-off row kernel at a row's
// ends: out[l] = (Σ_j src[j]·w[j][l])·s[l], each product rounded on its
// own, the sum started at +0 and taken in j order. cpu/butteraugli gives
// each lane the weights of one border column (zero outside its cut-off
// kernel) and its renormalising scale. For finite samples a zero weight
// changes nothing: its product is ±0, and a sum started at +0 is never
// −0, so adding ±0 leaves it as it is; lane l is then the scalar loop
// over that column's taps.
func BARowBorder(out *[8]float32, src []float32, w [][8]float32, s *[8]float32) {
	if len(src) < len(w) {
		panic(fmt.Sprintf("cpusimd: BARowBorder of %d taps over %d samples", len(w), len(src)))
	}
	if baEnabled && len(w) > 0 && rowBorderKernel(out, src, w, s) {
		return
	}
	rowBorderGo(out, src, w, s)
}

// rowBorderGo is BARowBorder's twin.
func rowBorderGo(out *[8]float32, src []float32, w [][8]float32, s *[8]float32) {
	for l := range out {
		var acc float32
		for j, wj := range w {
			acc += float32(src[j] * wj[l])
		}
		out[l] = acc * s[l]
	}
}
