package cvvdp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps is the distance in float32 steps between two positive floats.
func ulps(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	if d < 0 {
		d = -d
	}
	return d
}

// TestFastMath: powf, exp10f and log10fFast against math's float64
// functions rounded to float32, over the ranges the metric uses (bases
// from 1e-5 to 1e4 with the model's exponents, CSF values in log10 from
// −3 to 4, luminances from 0.01 to 1e4) and random ones: never more than
// one ulp apart, and one ulp in fewer than 1 in 1000 cases (the float64
// polynomials are accurate to ~1e-10, so only values within that of a
// float32 rounding boundary round the other way).
func TestFastMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	exps := []float32{f32MaskP, f32MaskQ[0], f32MaskQ[1], f32MaskQ[2], f32MaskQ[3], 2.4, 0.5, 0.25, 4, 2, float32(pJodExp), 1 / 78.84375}
	var off, total int
	check := func(name string, got, want float32, args ...any) {
		total++
		if got == want {
			return
		}
		if u := ulps(got, want); u > 1 {
			t.Fatalf("%s%v: got %v, want %v (%d ulp)", name, args, got, want, u)
		}
		off++
	}
	for i := 0; i < n; i++ {
		x := float32(math.Pow(10, -5+9*rng.Float64()))
		y := exps[i%len(exps)]
		if i%3 == 0 {
			y = float32(-4 + 8*rng.Float64())
		}
		check("powf", powf(x, y), float32(math.Pow(float64(x), float64(y))), x, y)
		v := float32(-3 + 7*rng.Float64())
		check("exp10f", exp10f(v), float32(math.Pow(10, float64(v))), v)
		l := float32(math.Pow(10, -2+6*rng.Float64()))
		check("log10f", log10fFast(l), float32(math.Log10(float64(l))), l)
	}
	// The row forms against the scalar ones.
	src := make([]float32, 4096)
	dst := make([]float32, len(src))
	for i := range src {
		src[i] = float32(math.Pow(10, -5+9*rng.Float64()))
	}
	for _, y := range exps {
		powRow(dst, src, f32Eps, y, 0.25)
		for i, v := range src {
			if want := powf(v+f32Eps, y) - 0.25; dst[i] != want {
				t.Fatalf("powRow(%v, %v) = %v, powf %v", v, y, dst[i], want)
			}
		}
	}
	for i := range src {
		src[i] = float32(-3 + 7*rng.Float64())
	}
	exp10Row(dst, src, 1.5)
	for i, v := range src {
		if want := exp10f(v) * 1.5; dst[i] != want {
			t.Fatalf("exp10Row(%v) = %v, exp10f %v", v, dst[i], want)
		}
	}
	// The package variables computed with these functions at
	// initialisation (the CSF table's axes, ε^q) must see initialised
	// tables: a zero table gives values far off.
	for i := 0; i < lutN; i++ {
		check("csfT.logL", csfT.logL[i], float32(math.Log10(float64(float32(csfLBkg[i])))), i)
		check("csfT.logRho", csfT.logRho[i], float32(math.Log10(float64(float32(csfRho[i])))), i)
	}
	for c := range f32EpsQ {
		check("f32EpsQ", f32EpsQ[c], float32(math.Pow(float64(f32Eps), float64(f32MaskQ[c]))), c)
	}
	t.Logf("%d of %d results one ulp off", off, total)
	if off*1000 > total {
		t.Errorf("%d of %d results one ulp off", off, total)
	}
	for _, c := range [][2]float32{{0, 2}, {1, 0}, {1e-30, 2}, {float32(math.Inf(1)), 2}} {
		if got, want := powf(c[0], c[1]), float32(math.Pow(float64(c[0]), float64(c[1]))); got != want {
			t.Errorf("powf(%v, %v) = %v, want %v", c[0], c[1], got, want)
		}
	}
}
