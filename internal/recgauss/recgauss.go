// Package recgauss derives the constants of libjxl's recursive Gaussian
// (its CreateRecursiveGaussian, after Charalampidis' three-pole
// approximation), shared by the CPU reference (cpu/ssim2) and the GPU host
// code (gpu/webgpu), which must both reproduce libjxl's float32 blur bit for
// bit and so must start from the very same constants.
//
// The constants are derived in float64 in libjxl's order of operations and
// rounded to float32. Every product is wrapped in float64() so that Go never
// fuses it into a multiply-add (which would change the last bits on arm64).
package recgauss

import "math"

// Coef are the float32 constants of one recursive Gaussian.
type Coef struct {
	// Radius is libjxl's N, round(3.2795·σ + 0.2546): the filter's
	// look-ahead and the number of border steps.
	Radius int
	// N2 and D1 are, per filter k, the feed-forward and feedback
	// coefficients of the plain recurrence.
	N2, D1 [3]float32
	// Per filter k and output lane j of libjxl's four-outputs-at-a-time
	// step: the multiplier of input sample i (MulIn[k][j-i]), of the
	// previous output (MulPrev) and of the one before (MulPrev2).
	MulIn, MulPrev, MulPrev2 [3][4]float32
}

// New derives the constants for standard deviation sigma.
func New(sigma float64) Coef {
	radius := math.Round(3.2795*sigma + 0.2546)
	piDiv2r := math.Pi / (2.0 * radius)
	omega := [3]float64{piDiv2r, 3.0 * piDiv2r, 5.0 * piDiv2r}

	p1 := +1.0 / math.Tan(0.5*omega[0])
	p3 := -1.0 / math.Tan(0.5*omega[1])
	p5 := +1.0 / math.Tan(0.5*omega[2])

	r1 := float64(p1*p1) / math.Sin(omega[0])
	r3 := float64(-p3*p3) / math.Sin(omega[1])
	r5 := float64(p5*p5) / math.Sin(omega[2])

	negHalfSigma2 := float64(-0.5*sigma) * sigma
	recipRadius := 1.0 / radius
	var rho [3]float64
	for i := range rho {
		rho[i] = math.Exp(float64(float64(negHalfSigma2*omega[i])*omega[i])) * recipRadius
	}

	d13 := float64(p1*r3) - float64(r1*p3)
	d35 := float64(p3*r5) - float64(r3*p5)
	d51 := float64(p5*r1) - float64(r5*p1)
	recipD13 := 1.0 / d13
	zeta15 := d35 * recipD13
	zeta35 := d51 * recipD13

	a := inv3x3([3][3]float64{{p1, p3, p5}, {r1, r3, r5}, {zeta15, zeta35, 1}})
	gamma := [3]float64{
		1,
		float64(radius*radius) - float64(sigma*sigma),
		float64(float64(zeta15*rho[0])+float64(zeta35*rho[1])) + rho[2],
	}

	c := Coef{Radius: int(radius)}
	for i := 0; i < 3; i++ {
		beta := float64(float64(a[i][0]*gamma[0])+float64(a[i][1]*gamma[1])) + float64(a[i][2]*gamma[2])
		n2 := -beta * math.Cos(float64(omega[i]*(radius+1.0)))
		d1 := -2.0 * math.Cos(omega[i])
		d2 := float64(d1 * d1)
		c.N2[i], c.D1[i] = float32(n2), float32(d1)
		c.MulPrev[i] = [4]float32{
			float32(-d1),
			float32(d2 - 1.0),
			float32(float64(float64(-d2)*d1) + float64(2.0*d1)),
			float32(float64(float64(d2*d2)-float64(3.0*d2)) + 1.0),
		}
		c.MulPrev2[i] = [4]float32{
			-1.0,
			float32(d1),
			float32(-d2 + 1.0),
			float32(float64(d2*d1) - float64(2.0*d1)),
		}
		c.MulIn[i] = [4]float32{
			float32(n2),
			float32(float64(-d1) * n2),
			float32(float64(d2*n2) - n2),
			float32(float64(float64(float64(-d2)*d1)*n2) + float64(float64(2.0*d1)*n2)),
		}
	}
	return c
}

// inv3x3 inverts a 3×3 matrix as libjxl's Inv3x3Matrix does: cofactors,
// then each times 1/det.
func inv3x3(m [3][3]float64) [3][3]float64 {
	var t [3][3]float64
	t[0][0] = float64(m[1][1]*m[2][2]) - float64(m[1][2]*m[2][1])
	t[0][1] = float64(m[0][2]*m[2][1]) - float64(m[0][1]*m[2][2])
	t[0][2] = float64(m[0][1]*m[1][2]) - float64(m[0][2]*m[1][1])
	t[1][0] = float64(m[1][2]*m[2][0]) - float64(m[1][0]*m[2][2])
	t[1][1] = float64(m[0][0]*m[2][2]) - float64(m[0][2]*m[2][0])
	t[1][2] = float64(m[0][2]*m[1][0]) - float64(m[0][0]*m[1][2])
	t[2][0] = float64(m[1][0]*m[2][1]) - float64(m[1][1]*m[2][0])
	t[2][1] = float64(m[0][1]*m[2][0]) - float64(m[0][0]*m[2][1])
	t[2][2] = float64(m[0][0]*m[1][1]) - float64(m[0][1]*m[1][0])
	det := float64(float64(m[0][0]*t[0][0])+float64(m[0][1]*t[1][0])) + float64(m[0][2]*t[2][0])
	idet := 1.0 / det
	var out [3][3]float64
	for j := range out {
		for i := range out[j] {
			out[j][i] = t[j][i] * idet
		}
	}
	return out
}
