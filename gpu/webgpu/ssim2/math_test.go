package ssim2

import (
	"math"
	"testing"
)

// The recursion with libjxl's float32 constants, run in float64 on a delta,
// must be the Gaussian-like 9-tap response that sums to 1, with only
// coefficient-rounding residue (~1e-7) outside radius 4.
func TestSSIM2IIRCoef(t *testing.T) {
	c := ssim2IIRCoef()
	const n, at, radius = 64, 32, 5
	x := make([]float64, n)
	x[at] = 1
	out := make([]float64, n)
	for k := 0; k < 3; k++ {
		if c.MulIn[k][0] != c.N2[k] || c.MulPrev[k][0] != -c.D1[k] || c.MulPrev2[k][0] != -1 {
			t.Fatalf("filter %d: lane-0 constants inconsistent: %+v", k, c)
		}
		var p, pp float64
		for i := -radius + 1; i < n; i++ {
			s := 0.0
			if l := i - radius - 1; l >= 0 {
				s += x[l]
			}
			if r := i + radius - 1; r < n {
				s += x[r]
			}
			o := float64(c.N2[k])*s - float64(c.D1[k])*p - pp
			pp, p = p, o
			if i >= 0 {
				out[i] += o
			}
		}
	}
	sum := 0.0
	for j := -4; j <= 4; j++ {
		sum += out[at+j]
		if math.Abs(out[at+j]-out[at-j]) > 1e-6 {
			t.Errorf("asymmetric at %d: %g vs %g", j, out[at+j], out[at-j])
		}
	}
	if math.Abs(sum-1) > 1e-5 || math.Abs(out[at]-0.2646211) > 1e-6 {
		t.Errorf("taps sum %.9f, centre %.9f", sum, out[at])
	}
	for j := 5; j < 20; j++ {
		if math.Abs(out[at+j]) > 1e-6 {
			t.Errorf("offset %d: %g beyond the 9 taps", j, out[at+j])
		}
	}
}

func TestSSIM2Plan(t *testing.T) {
	cases := []struct{ w, h, n int }{
		{7, 100, 0}, {8, 8, 2}, {15, 15, 3}, {16, 16, 3}, {64, 48, 4}, {256, 256, 6}, {4096, 4096, 6}, {100, 20, 3},
	}
	for _, c := range cases {
		if got := len(ssim2Plan(c.w, c.h)); got != c.n {
			t.Errorf("%dx%d: %d scales, want %d", c.w, c.h, got, c.n)
		}
	}
	p := ssim2Plan(1365, 1074)
	if p[1] != (ssim2Scale{683, 537}) || p[5] != (ssim2Scale{43, 34}) {
		t.Errorf("plan %v", p)
	}
}

func TestSSIM2FinalIdentical(t *testing.T) {
	plan := ssim2Plan(64, 64)
	if s := ssim2Final(plan, make([]ssim2ScaleSums, len(plan))); s != 100 {
		t.Fatalf("score %v for zero error, want 100", s)
	}
}
