package cpusimd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// testXYB has cpu/ssim2's constants (copied here to keep the package free
// of that dependency; cpu/ssim2's tests compare the two paths with its own).
var testXYB = func() *XYB {
	const m02, m00, m12, m10 = float32(0.078), float32(0.30), float32(0.078), float32(0.23)
	const m20, m21 = float32(0.24342268924547819), float32(0.20476744424496821)
	bias := float32(0.0037930732552754493)
	return NewXYB(XYBParams{
		M: [3][3]float32{
			{m00, 1 - m02 - m00, m02},
			{m10, 1 - m12 - m10, m12},
			{m20, m21, 1 - m20 - m21},
		},
		Bias: bias, NegBiasCbrt: -float32(math.Cbrt(float64(bias))),
		Third: 1.0 / 3, FourThird: 4.0 / 3,
		PosXMul: 14, PosXAdd: 0.42, PosYAdd: 0.01, PosBAdd: 0.55,
	})
}()

var testTerms = NewTerms(0.0009)

// xybImpl and termsImpl: the assembly (where it runs) and the Go twins run
// the same tests.
type pixelImpl struct {
	name  string
	xyb   func(r, g, b, dx, dy, db []float32)
	terms func(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64)
}

func pixelImpls(t *testing.T) []pixelImpl {
	list := []pixelImpl{{
		name: "go",
		xyb:  func(r, g, b, dx, dy, db []float32) { xybGo(r, g, b, dx, dy, db, 0, testXYB) },
		terms: func(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64) {
			termsGo(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, testTerms)
		},
	}}
	if useAsm {
		list = append(list, pixelImpl{
			name: "asm",
			xyb:  func(r, g, b, dx, dy, db []float32) { xybKernel(r, g, b, dx, dy, db, testXYB) },
			terms: func(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64) {
				termsKernel(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, testTerms)
			},
		})
	} else {
		t.Log("assembly kernels not available here: testing the Go twins only")
	}
	return list
}

// linearSample draws linear-light values as the pipeline produces them,
// with the cases that matter to the kernels: exact zeros (the cube root's
// zero guess), values that make the opsin mix negative (clamped), tiny and
// above-one values.
func linearSample(rng *rand.Rand) float32 {
	switch rng.IntN(12) {
	case 0:
		return 0
	case 1:
		return -float32(rng.Float64()) * 0.02
	case 2:
		return float32(rng.Float64() * 1e-6)
	case 3:
		return 1 + float32(rng.Float64())
	}
	return float32(rng.Float64())
}

// TestXYB compares every implementation with the scalar Go twin bit for
// bit on rows of every width 1..40 and some wide ones, with guard bands,
// and checks that the cube root is a cube root.
func TestXYB(t *testing.T) {
	for _, im := range pixelImpls(t) {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			widths := []int{}
			for w := 1; w <= 40; w++ {
				widths = append(widths, w)
			}
			widths = append(widths, 64, 65, 1000, 1031)
			for _, w := range widths {
				var in [3][]float32
				var outs [3][]float32
				var checks [6]func(*testing.T, string)
				for c := 0; c < 3; c++ {
					in[c], checks[c] = guarded(w, 32)
					outs[c], checks[3+c] = guarded(w, 32)
					for i := range in[c] {
						in[c][i] = linearSample(rng)
					}
				}
				im.xyb(in[0], in[1], in[2], outs[0], outs[1], outs[2])
				for _, ck := range checks {
					ck(t, fmt.Sprintf("w=%d", w))
				}
				want := [3][]float32{make([]float32, w), make([]float32, w), make([]float32, w)}
				for i := 0; i < w; i++ {
					// One pixel at a time through the twin: lane position
					// must not matter.
					xybGo(in[0][i:i+1], in[1][i:i+1], in[2][i:i+1], want[0][i:i+1], want[1][i:i+1], want[2][i:i+1], 0, testXYB)
				}
				for c := 0; c < 3; c++ {
					for i := 0; i < w; i++ {
						if !same(outs[c][i], want[c][i]) {
							t.Fatalf("w=%d channel %d pixel %d: %g, scalar %g (input %g %g %g)", w, c, i, outs[c][i], want[c][i], in[0][i], in[1][i], in[2][i])
						}
					}
				}
			}
		})
	}
	// The cube root itself, against math.Cbrt, over the range it gets
	// (opsin values are at least the bias 0.0038, or clamped to 0; libjxl's
	// iteration does not converge from its guess for tiny inputs).
	for _, x := range []float32{0, 0.0037930732552754493, 0.1, 0.5, 1, 2, 8, 1000} {
		got := cubeRootAndAdd(x, 0, 1.0/3, 4.0/3)
		want := math.Cbrt(float64(x))
		if math.Abs(float64(got)-want) > 4e-7*max(want, 1e-30) {
			t.Errorf("cbrt(%g) = %g, want %g", x, got, want)
		}
	}
}

func termsRow(rng *rand.Rand, w int) (rows [7][]float32, checks [7]func(*testing.T, string)) {
	for i := range rows {
		rows[i], checks[i] = guarded(w, 32)
	}
	img1, mu1, vr1, img2, mu2, s22, s12 := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6]
	for x := 0; x < w; x++ {
		img1[x] = float32(rng.Float64())
		mu1[x] = img1[x] + float32(rng.NormFloat64()*0.05)
		vr1[x] = float32(rng.Float64() * 0.01)
		img2[x] = img1[x] + float32(rng.NormFloat64()*0.05)
		mu2[x] = mu1[x] + float32(rng.NormFloat64()*0.02)
		s22[x] = mu2[x]*mu2[x] + float32(rng.Float64()*0.01)
		s12[x] = mu1[x]*mu2[x] + float32(rng.NormFloat64()*0.005)
		switch rng.IntN(10) {
		case 0: // identical pixels: d = 0 and d1 = 0 exactly
			img2[x], mu2[x], s22[x] = img1[x], mu1[x], vr1[x]+mu1[x]*mu1[x]
			s12[x] = s22[x]
		case 1:
			img2[x] = img1[x]
		}
	}
	return rows, checks
}

// TestTerms compares the lane sums of every implementation with the Go
// twin bit for bit (same order of additions), and the whole-row sums of
// Terms.Row with a plain sequential sum to 1e-12 relative (only the order
// of the float64 additions differs: about 1e-16 per addition).
func TestTerms(t *testing.T) {
	for _, im := range pixelImpls(t) {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 10))
			for _, w := range []int{8, 16, 24, 32, 40, 64, 1000, 2048} {
				r, checks := termsRow(rng, w)
				var got, want [6][4]float64
				im.terms(r[0], r[1], r[2], r[3], r[4], r[5], r[6], w, &got)
				termsGo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], w, &want, testTerms)
				for _, ck := range checks {
					ck(t, fmt.Sprintf("w=%d", w))
				}
				for i := range got {
					for l := range got[i] {
						if math.Float64bits(got[i][l]) != math.Float64bits(want[i][l]) {
							t.Fatalf("w=%d term %d lane %d: %v, twin %v", w, i, l, got[i][l], want[i][l])
						}
					}
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for w := 1; w <= 70; w++ {
		r, _ := termsRow(rng, w)
		out := make([]float64, 6)
		testTerms.Row(out, r[0], r[1], r[2], r[3], r[4], r[5], r[6])
		var seq [6]float64
		for x := 0; x < w; x++ {
			testTerms.pixel(&seq, x, r[0], r[1], r[2], r[3], r[4], r[5], r[6])
		}
		for i := range seq {
			if d := math.Abs(out[i] - seq[i]); d > 1e-12*math.Abs(seq[i]) {
				t.Fatalf("w=%d term %d: %v, sequential %v", w, i, out[i], seq[i])
			}
		}
	}
}
