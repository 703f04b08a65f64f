package cvvdp

import "math"

// Fast float32 powers, logarithms and exponentials for the per-pixel work.
//
// pycvvdp's powers are torch's float32 ones (Sleef, within 1 ulp of the
// exact value). Go's math.Pow in float64 is about ten times slower than
// needed here (it is most of the run time otherwise), so these evaluate
// log2 and exp2 in float64 with short polynomials whose error (below 1e-10
// relative) is far under float32's half ulp (3e-8): rounding the result to
// float32 gives the correctly rounded value except when the exact value
// lies within 1e-10 of a rounding boundary, and then one ulp off, which is
// the reference's own accuracy. TestFastMath checks this against math.Pow.

// log2f64 is log2 of a positive, finite, normal x.
func log2f64(x float64) float64 {
	b := math.Float64bits(x)
	e := int(b>>52&0x7ff) - 1023
	// m in [1, 2); fold into [√½, √2) so that |s| ≤ 0.1716.
	m := math.Float64frombits(b&^(0x7ff<<52) | 1023<<52)
	if m > math.Sqrt2 {
		m *= 0.5
		e++
	}
	s := (m - 1) / (m + 1)
	s2 := s * s
	// 2·atanh(s) = ln(m); the series' next term is below 5e-11 relative.
	p := 1 + s2*(1.0/3+s2*(1.0/5+s2*(1.0/7+s2*(1.0/9+s2*(1.0/11+s2*(1.0/13))))))
	return float64(e) + 2*s*p*math.Log2E
}

// exp2f64 is 2^t for |t| < 1000 (else math.Exp2).
func exp2f64(t float64) float64 {
	if !(t > -1000 && t < 1000) {
		return math.Exp2(t)
	}
	n := math.Floor(t + 0.5)
	f := (t - n) * math.Ln2 // |f| ≤ 0.3466
	// e^f by Taylor to degree 11: remainder below 2e-14.
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24+f*(1.0/120+f*(1.0/720+f*(1.0/5040+f*(1.0/40320+f*(1.0/362880+f*(1.0/3628800+f*(1.0/39916800)))))))))))
	ni := int(n)
	if ni < -1022 || ni > 1023 {
		return math.Ldexp(p, ni)
	}
	return p * math.Float64frombits(uint64(ni+1023)<<52)
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
