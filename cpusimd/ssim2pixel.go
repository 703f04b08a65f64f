package cpusimd

import (
	"fmt"
	"math"
)

// XYBParams are the constants of SSIMULACRA2's linear sRGB → positive XYB
// conversion (cpu/ssim2 owns them): libjxl's opsin absorbance matrix and
// bias, −cbrt(bias), the float32 constants 1/3 and 4/3 of its cube root,
// and the offsets of "positive XYB".
type XYBParams struct {
	M                                   [3][3]float32
	Bias, NegBiasCbrt, Third, FourThird float32
	PosXMul, PosXAdd, PosYAdd, PosBAdd  float32
}

const xybTabLen = 21

// XYB converts rows of linear RGB to positive XYB. It is read-only after
// NewXYB and safe for concurrent use.
type XYB struct {
	p   XYBParams
	tab [xybTabLen][8]float32
}

// NewXYB lays out p for the kernels.
func NewXYB(p XYBParams) *XYB {
	x := &XYB{p: p}
	set := func(i int, v float32) {
		for l := range x.tab[i] {
			x.tab[i][l] = v
		}
	}
	for c := 0; c < 3; c++ {
		for j := 0; j < 3; j++ {
			set(3*c+j, p.M[c][j])
		}
	}
	for i, v := range []float32{p.Bias, p.NegBiasCbrt, p.Third, p.FourThird, 0.5, p.PosXMul, p.PosXAdd, p.PosYAdd, p.PosBAdd} {
		set(9+i, v)
	}
	set(18, math.Float32frombits(0x80000000))
	set(19, math.Float32frombits(0x002AAAAA))
	set(20, math.Float32frombits(0x54800000))
	return x
}

// Row converts one row of linear r, g, b to positive XYB in dx, dy, db
// (all of len(r)): per pixel, libjxl's opsin absorbance (fused
// multiply-adds, bias, negative values to zero), its cube root (an
// exponent-bit guess for x^(−1/3), three Newton steps, a refinement, then
// x^(−2/3)·x with −cbrt(bias) added), X = (L−M)/2·14 + 0.42,
// Y = (L+M)/2 + 0.01, B = (S − Y) + 0.55.
func (x *XYB) Row(r, g, b, dx, dy, db []float32) {
	n := len(r)
	if len(g) < n || len(b) < n || len(dx) < n || len(dy) < n || len(db) < n {
		panic(fmt.Sprintf("cpusimd: XYB row of %d pixels with shorter planes", n))
	}
	xybKernel(r[:n], g[:n], b[:n], dx[:n], dy[:n], db[:n], x)
}

// cubeRootGuess is the exponent-bit initial guess for x^(−1/3), x ≥ 0.
func cubeRootGuess(x float32) float32 {
	m1 := int32(math.Float32bits(x))
	var m2 int32
	if m1 != 0 {
		m2 = 0x54800000 - (m1>>23)*0x002AAAAA
	}
	return math.Float32frombits(uint32(m2))
}

// cubeRootAndAdd is libjxl's CubeRootAndAdd with exactly rounded FMAs.
func cubeRootAndAdd(x, add, third, fourThird float32) float32 {
	nx := -float32(third * x)
	r := cubeRootGuess(x)
	for i := 0; i < 3; i++ {
		q := float32(r * r)
		q = float32(q * q)
		r = fma32(nx, q, float32(fourThird*r))
	}
	q := float32(r * r)
	q = float32(q * q)
	r = fma32(third, fma32(-x, q, r), r)
	q = float32(r * r)
	return fma32(q, x, add)
}

// xybGo is the Go twin of xybAVX2 for pixels [x0, len(r)).
func xybGo(r, g, b, dx, dy, db []float32, x0 int, t *XYB) {
	p := &t.p
	n := len(r)
	g, b, dx, dy, db = g[:n], b[:n], dx[:n], dy[:n], db[:n]
	for i := x0; i < n; i++ {
		var m [3]float32
		for c := 0; c < 3; c++ {
			v := fma32(p.M[c][0], r[i], fma32(p.M[c][1], g[i], fma32(p.M[c][2], b[i], p.Bias)))
			if !(v > 0) {
				v = 0
			}
			m[c] = cubeRootAndAdd(v, p.NegBiasCbrt, p.Third, p.FourThird)
		}
		xv := float32(0.5 * float32(m[0]-m[1]))
		yv := float32(0.5 * float32(m[0]+m[1]))
		dx[i] = float32(xv*p.PosXMul) + p.PosXAdd
		dy[i] = yv + p.PosYAdd
		db[i] = float32(m[2]-yv) + p.PosBAdd
	}
}

const termsTabLen = 5

// Terms adds up SSIMULACRA2's per-pixel error terms of a row. It is
// read-only after NewTerms and safe for concurrent use.
type Terms struct {
	c2  float32
	tab [termsTabLen][8]float32
}

// NewTerms lays out the SSIM constant c2 for the kernels.
func NewTerms(c2 float32) *Terms {
	t := &Terms{c2: c2}
	for l := 0; l < 8; l++ {
		t.tab[0][l] = 1
		t.tab[1][l] = c2
		t.tab[2][l] = math.Float32frombits(0x7fffffff)
	}
	for l := 0; l < 4; l++ {
		setF64(&t.tab[3], l, 1)
		setF64(&t.tab[4], l, math.Float64frombits(1<<63))
	}
	return t
}

func setF64(v *[8]float32, lane int, f float64) {
	b := math.Float64bits(f)
	v[2*lane] = math.Float32frombits(uint32(b))
	v[2*lane+1] = math.Float32frombits(uint32(b >> 32))
}

// Row writes into out[0:6] the sums over one row of the SSIM error d and
// d⁴, the artifact term and its fourth power, and the detail-lost term and
// its fourth power, from the reference's image, blur and variance (img1,
// mu1, vr1 = σ1²) and the distorted image's image, blur, blurred square and
// blurred product (img2, mu2, s22, s12), with the mix of float32 and
// float64 arithmetic of cpu/ssim2's rowTerms. Only the order of the float64
// sums differs: pixels x ≡ i (mod 4) of the first len−len%8 go to partial
// sum i, the four partial sums are added as (s0+s1)+(s2+s3), and the last
// len%8 pixels are added one by one.
func (t *Terms) Row(out []float64, img1, mu1, vr1, img2, mu2, s22, s12 []float32) {
	n := len(img1)
	if len(out) < 6 || len(mu1) < n || len(vr1) < n || len(img2) < n || len(mu2) < n || len(s22) < n || len(s12) < n {
		panic(fmt.Sprintf("cpusimd: error terms of a row of %d pixels with shorter planes", n))
	}
	img1, mu1, vr1, img2, mu2, s22, s12 = img1[:n], mu1[:n], vr1[:n], img2[:n], mu2[:n], s22[:n], s12[:n]
	var acc [6][4]float64
	n8 := n &^ 7
	termsKernel(img1, mu1, vr1, img2, mu2, s22, s12, n8, &acc, t)
	var s [6]float64
	for i := range s {
		s[i] = (acc[i][0] + acc[i][1]) + (acc[i][2] + acc[i][3])
	}
	for x := n8; x < n; x++ {
		t.pixel(&s, x, img1, mu1, vr1, img2, mu2, s22, s12)
	}
	copy(out[:6], s[:])
}

// quartic is x⁴ with both products rounded: the conversion keeps Go from
// fusing the last product into the caller's sum (s[1] += x⁴ became an
// FMADD on arm64, which the spec allows), so every architecture, and the
// NEON and AVX2 kernels, add the same rounded x⁴.
func quartic(x float64) float64 {
	x *= x
	return float64(x * x)
}

func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// pixel adds pixel x's six terms into s, in cpu/ssim2 rowTerms's
// arithmetic.
func (t *Terms) pixel(s *[6]float64, x int, img1, mu1, vr1, img2, mu2, s22, s12 []float32) {
	m1, m2 := mu1[x], mu2[x]
	diff := m1 - m2
	numM := float32(1.0 - float64(float32(diff*diff)))
	numS := float32(2*float32(s12[x]-float32(m1*m2))) + t.c2
	denS := float32(vr1[x]+float32(s22[x]-float32(m2*m2))) + t.c2
	d := 1.0 - float64(float32(float32(numM*numS)/denS))
	d = max(d, 0)
	e2 := float64(abs32(img2[x] - m2))
	e1 := float64(abs32(img1[x] - m1))
	d1 := float64(float64(1.0+e2)/float64(1.0+e1)) - 1.0
	a := max(d1, 0)
	l := max(-d1, 0)
	s[0] += d
	s[1] += quartic(d)
	s[2] += a
	s[3] += quartic(a)
	s[4] += l
	s[5] += quartic(l)
}

// termsGo is the Go twin of rowTermsAVX2: the first n pixels (a multiple
// of 8) into four partial sums per term, lane i taking pixels x ≡ i mod 4.
func termsGo(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, t *Terms) {
	for l := 0; l < 4; l++ {
		var s [6]float64
		for x := l; x < n; x += 4 {
			t.pixel(&s, x, img1, mu1, vr1, img2, mu2, s22, s12)
		}
		for i := range s {
			acc[i][l] = s[i]
		}
	}
}
