package cvvdp

import "math"

// Fast float32 powers, logarithms and exponentials for the per-pixel work.
//
// pycvvdp's powers are torch's float32 ones (Sleef, within 1 ulp of the
// exact value). Go's math.Pow in float64 is about ten times slower than
// needed here (it is most of the run time otherwise), so these evaluate
// log2 and exp2 in float64 from 128-entry tables and short polynomials
// whose error (below 1e-14 relative) is far under float32's half ulp (3e-8): rounding the result to
// float32 gives the correctly rounded value except when the exact value
// lies within 1e-14 of a rounding boundary, and then one ulp off, which is
// the reference's own accuracy. TestFastMath checks this against math.Pow.

// Tables for log2f64 and exp2f64: 128 sub-intervals of the mantissa and
// of the fractional exponent, so that short polynomials suffice. They are
// variable initialisers (not an init function) so that Go's dependency
// order builds them before other package variables that use the functions
// (csfT, the parameters).
var (
	// logInv[j], logC[j]: 1/c and log2(c), c = 1 + (j + ½)/128.
	logInv = table(func(j int) float64 { return 1 / (1 + (float64(j)+0.5)/128) })
	logC   = table(func(j int) float64 { return math.Log2(1 + (float64(j)+0.5)/128) })
	// exp2T[j] = 2^(j/128).
	exp2T = table(func(j int) float64 { return math.Exp2(float64(j) / 128) })
)

func table(f func(int) float64) (t [128]float64) {
	for j := range t {
		t[j] = f(j)
	}
	return t
}

// log2f64 is log2 of a positive, finite, normal x: x = 2^e·m, m in [1, 2)
// in the sub-interval around c, log2 x = e + log2 c + log2(m/c), the last
// from ln(1 + r), |r| < 1/256, to degree 5 (remainder below 1e-15).
func log2f64(x float64) float64 {
	b := math.Float64bits(x)
	e := int(b>>52&0x7ff) - 1023
	j := b >> 45 & 127
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52)
	r := m*logInv[j] - 1
	ln := r * (1 + r*(-1.0/2+r*(1.0/3+r*(-1.0/4))))
	return float64(e) + logC[j] + ln*math.Log2E
}

// exp2f64 is 2^t for |t| < 1000 (else math.Exp2): t = k/128 + f, |f| ≤
// 1/256 (k the nearest integer to 128t), 2^t = 2^(k div 128) · 2^((k mod 128)/128) · e^(f·ln 2), the last
// to degree 4 (remainder below 2e-15).
func exp2f64(t float64) float64 {
	if !(t > -1000 && t < 1000) {
		return math.Exp2(t)
	}
	kf, k := round128(t)
	f := (t - kf/128) * math.Ln2
	n := k >> 7 // floor division
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24))))
	v := exp2T[k&127] * p
	if n < -1022 || n > 1023 {
		return math.Ldexp(v, n)
	}
	return v * math.Float64frombits(uint64(n+1023)<<52)
}

// round128 returns t·128 rounded to the nearest integer, as a float64 and
// an int, for |t| < 1000: adding 1.5·2⁵² leaves the integer in the low
// mantissa bits (cheaper than math.Floor, which is a call without SSE4.1).
func round128(t float64) (float64, int) {
	const magic = 0x1.8p52
	v := t*128 + magic
	k := int(int32(uint32(math.Float64bits(v))))
	return v - magic, k
}

// powf is x^y in float32 for x > 0 (math.Pow otherwise).
func powf(x, y float32) float32 {
	if !(x > 0) || x > math.MaxFloat32 || x < 0x1p-126 {
		return float32(math.Pow(float64(x), float64(y)))
	}
	return float32(exp2f64(float64(y) * log2f64(float64(x))))
}

// log2Of10 is log2(10) in float64.
var log2Of10 = math.Log2(10)

// exp10f is 10^v in float32.
func exp10f(v float32) float32 { return float32(exp2f64(float64(v) * log2Of10)) }

// log10fFast is log10 of a positive normal float32 in float32.
func log10fFast(x float32) float32 {
	if !(x >= 0x1p-126) || x > math.MaxFloat32 {
		return float32(math.Log10(float64(x)))
	}
	return float32(log2f64(float64(x)) / log2Of10)
}

// powRow sets dst[x] = float32((src[x] + add)^y) − sub along a row: powf
// written out for a row, so that neighbouring pixels' work overlaps (the
// function call and the serial dependency of one powf at a time otherwise
// dominate). dst may be src.
func powRow(dst, src []float32, add, y, sub float32) {
	src = src[:len(dst)]
	yd := float64(y)
	for x, v := range src {
		a := v + add
		if !(a >= 0x1p-126) || a > math.MaxFloat32 {
			dst[x] = powf(a, y) - sub
			continue
		}
		b := math.Float64bits(float64(a))
		e := int(b>>52&0x7ff) - 1023
		j := b >> 45 & 127
		m := math.Float64frombits(b&(1<<52-1) | 1023<<52)
		r := m*logInv[j] - 1
		ln := r * (1 + r*(-1.0/2+r*(1.0/3+r*(-1.0/4))))
		t := yd * (float64(e) + logC[j] + ln*math.Log2E)
		if !(t > -1000 && t < 1000) {
			dst[x] = powf(a, y) - sub
			continue
		}
		kf, k := round128(t)
		f := (t - kf/128) * math.Ln2
		n := k >> 7
		p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24))))
		v := exp2T[k&127] * p
		if n < -1022 || n > 1023 {
			v = math.Ldexp(v, n)
		} else {
			v *= math.Float64frombits(uint64(n+1023) << 52)
		}
		dst[x] = float32(v) - sub
	}
}

// exp10Row sets dst[x] = float32(10^src[x]) · mul along a row (exp10f
// written out for a row). dst may be src.
func exp10Row(dst, src []float32, mul float32) {
	src = src[:len(dst)]
	for x, s := range src {
		t := float64(s) * log2Of10
		if !(t > -1000 && t < 1000) {
			dst[x] = exp10f(s) * mul
			continue
		}
		kf, k := round128(t)
		f := (t - kf/128) * math.Ln2
		n := k >> 7
		p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24))))
		v := exp2T[k&127] * p
		if n < -1022 || n > 1023 {
			v = math.Ldexp(v, n)
		} else {
			v *= math.Float64frombits(uint64(n+1023) << 52)
		}
		dst[x] = float32(v) * mul
	}
}
