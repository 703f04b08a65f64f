package webgpu

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The taps baked into ssim2_maps.wgsl must be the float32 roundings of the
// impulse response derived here, which must sum to 1 like libjxl's filter.
func TestSSIM2BlurTapsMatchShader(t *testing.T) {
	taps := ssim2BlurTaps()
	sum := taps[0]
	for k := 1; k < 5; k++ {
		sum += 2 * taps[k]
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("taps sum to %.17g, want 1", sum)
	}
	src, err := os.ReadFile("../../wgsl/ssim2_maps.wgsl")
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 5; k++ {
		re := regexp.MustCompile(`const K` + strconv.Itoa(k) + ` = ([0-9.e-]+);`)
		m := re.FindSubmatch(src)
		if m == nil {
			t.Fatalf("K%d not found in ssim2_maps.wgsl", k)
		}
		v, err := strconv.ParseFloat(string(m[1]), 32)
		if err != nil {
			t.Fatal(err)
		}
		if float32(v) != float32(taps[k]) {
			t.Errorf("K%d = %v in the shader, want float32(%.17g) = %v", k, float32(v), taps[k], float32(taps[k]))
		}
	}
}

// Running libjxl's recursion (float64, its coefficients) on a delta gives
// the same 9 taps and nothing beyond them.
func TestSSIM2BlurTapsAreTheIIRResponse(t *testing.T) {
	taps := ssim2BlurTaps()
	const n, c, radius = 64, 32, 5
	x := make([]float64, n)
	x[c] = 1
	out := make([]float64, n)
	omegaBase := math.Pi / (2 * radius)
	for k, mul := range []float64{1, 3, 5} {
		// Recover n2 for filter k from the taps' construction.
		_ = k
		omega := mul * omegaBase
		d1 := -2 * math.Cos(omega)
		n2 := ssim2N2(k)
		var p, pp float64
		for i := -radius + 1; i < n; i++ {
			s := 0.0
			if l := i - radius - 1; l >= 0 {
				s += x[l]
			}
			if r := i + radius - 1; r < n {
				s += x[r]
			}
			o := n2*s - d1*p - pp
			pp, p = p, o
			if i >= 0 {
				out[i] += o
			}
		}
	}
	for j := -c; j < n-c; j++ {
		want := 0.0
		if j >= -4 && j <= 4 {
			want = taps[abs(j)]
		}
		if math.Abs(out[c+j]-want) > 1e-14 {
			t.Errorf("offset %d: IIR %.17g, FIR %.17g", j, out[c+j], want)
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// ssim2N2 recomputes libjxl's n2 coefficient of filter k (for the test).
func ssim2N2(k int) float64 {
	const sigma, radius = 1.5, 5.0
	piDiv2r := math.Pi / (2 * radius)
	omega := [3]float64{piDiv2r, 3 * piDiv2r, 5 * piDiv2r}
	p := [3]float64{1 / math.Tan(0.5*omega[0]), -1 / math.Tan(0.5*omega[1]), 1 / math.Tan(0.5*omega[2])}
	r := [3]float64{p[0] * p[0] / math.Sin(omega[0]), -p[1] * p[1] / math.Sin(omega[1]), p[2] * p[2] / math.Sin(omega[2])}
	var rho [3]float64
	for i := range rho {
		rho[i] = math.Exp(-0.5*sigma*sigma*omega[i]*omega[i]) / radius
	}
	d13 := p[0]*r[1] - r[0]*p[1]
	z15, z35 := (p[1]*r[2]-r[1]*p[2])/d13, (p[2]*r[0]-r[2]*p[0])/d13
	a := inv3([3][3]float64{{p[0], p[1], p[2]}, {r[0], r[1], r[2]}, {z15, z35, 1}})
	g := [3]float64{1, radius*radius - sigma*sigma, z15*rho[0] + z35*rho[1] + rho[2]}
	beta := a[k][0]*g[0] + a[k][1]*g[1] + a[k][2]*g[2]
	return -beta * math.Cos(omega[k]*(radius+1))
}

func TestSSIM2Plan(t *testing.T) {
	cases := []struct{ w, h, n int }{
		{7, 100, 0}, {8, 8, 1}, {15, 15, 1}, {16, 16, 2}, {256, 256, 6}, {4096, 4096, 6}, {100, 20, 2},
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
