package butteraugli

import "math"

// The Malta filters sum the squared sums of short line segments through
// each pixel of a difference image: 16 orientations, each a segment of 5
// samples (the low-frequency variant, every other pixel out to ±4) or of 7
// to 9 contiguous samples. Outside the image the difference is zero. The
// sums are grouped as the reference groups them, so float32 rounding follows
// it closely.

func sum5(a, b, c, d, e float32) float32 { return (a + b) + (c + (d + e)) }

func sum7(a, b, c, d, e, f, g float32) float32 { return (a + b) + (c + ((d + e) + (f + g))) }

func sum9(a, b, c, d, e, f, g, h, i float32) float32 {
	return ((a + b) + (c + d)) + ((e + f) + (g + h)) + i
}

// maltaLF evaluates the sparse (5-sample) Malta filter on the 9×9
// neighbourhood m0..m8 (rows −4..4, each columns −4..4; the pixel is m4[4]).
// The squares are rounded before they are summed (float32(t·t)): Go on
// arm64 would fuse them into the sum.
func maltaLF(m0, m1, m2, m3, m4, m5, m6, m7, m8 *[9]float32) float32 {
	c := m4[4]
	t := sum5(m4[0], m4[2], c, m4[6], m4[8])
	r := float32(t * t)
	t = sum5(m0[4], m2[4], c, m6[4], m8[4])
	r += float32(t * t)
	t = sum5(m1[1], m2[2], c, m6[6], m7[7])
	r += float32(t * t)
	t = sum5(m1[7], m2[6], c, m6[2], m7[1])
	r += float32(t * t)
	t = sum5(m0[5], m2[5], c, m6[3], m8[3])
	r += float32(t * t)
	t = sum5(m0[3], m2[3], c, m6[5], m8[5])
	r += float32(t * t)
	t = sum5(m3[0], m3[2], c, m5[6], m5[8])
	r += float32(t * t)
	t = sum5(m5[0], m5[2], c, m3[6], m3[8])
	r += float32(t * t)
	t = sum5(m1[2], m2[3], c, m6[5], m7[6])
	r += float32(t * t)
	t = sum5(m1[6], m2[5], c, m6[3], m7[2])
	r += float32(t * t)
	t = sum5(m2[1], m3[2], c, m5[6], m6[7])
	r += float32(t * t)
	t = sum5(m2[7], m3[6], c, m5[2], m6[1])
	r += float32(t * t)
	t = sum5(m6[0], m5[2], c, m3[6], m2[8])
	r += float32(t * t)
	t = sum5(m2[0], m3[2], c, m5[6], m6[8])
	r += float32(t * t)
	t = sum5(m0[2], m2[3], c, m6[5], m8[6])
	r += float32(t * t)
	t = sum5(m0[6], m2[5], c, m6[3], m8[2])
	r += float32(t * t)
	return r
}

// maltaHF evaluates the dense (7- to 9-sample) Malta filter on the 9×9
// neighbourhood m0..m8.
func maltaHF(m0, m1, m2, m3, m4, m5, m6, m7, m8 *[9]float32) float32 {
	c := m4[4]
	t := sum9(m4[0], m4[1], m4[2], m4[3], c, m4[5], m4[6], m4[7], m4[8])
	r := float32(t * t)
	t = sum9(m0[4], m1[4], m2[4], m3[4], c, m5[4], m6[4], m7[4], m8[4])
	r += float32(t * t)
	t = sum7(m1[1], m2[2], m3[3], c, m5[5], m6[6], m7[7])
	r += float32(t * t)
	t = sum7(m1[7], m2[6], m3[5], c, m5[3], m6[2], m7[1])
	r += float32(t * t)
	// The next four segments appear twice in the reference's list of
	// sixteen; they are computed once and counted twice, in its order.
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

// gather9 returns the nine rows of the 9×9 block whose top-left sample is
// p[i], for a row stride s.
func gather9(p []float32, i, s int) (g [9]*[9]float32) {
	for k := range g {
		o := i + k*s
		g[k] = (*[9]float32)(p[o : o+9])
	}
	return g
}

// maltaWeights are the per-call constants of the difference image that the
// Malta filter reads.
type maltaWeights struct {
	norm1   float32
	norm2gt float32 // weight of the symmetric term
	norm2lt float32 // weight of the half-open terms
	lf      bool
}

func makeMaltaWeights(w0gt1, w0lt1, norm1 float64, lf bool) maltaWeights {
	const length = 3.75
	mulli := 0.39905817637
	if lf {
		mulli = 0.611612573796
	}
	// The reference keeps these two weights as float32 constants, then
	// widens them in double expressions.
	k0 := float64(float32(0.5))
	k1 := float64(float32(0.33))
	pre0 := mulli * math.Sqrt(k0*w0gt1) / (length*2 + 1)
	pre1 := mulli * math.Sqrt(k1*w0lt1) / (length*2 + 1)
	return maltaWeights{
		norm1:   float32(norm1),
		norm2gt: float32(pre0 * norm1),
		norm2lt: float32(pre1 * norm1),
		lf:      lf,
	}
}

// maltaDiffRow writes the weighted, asymmetric difference of reference row
// r0 and distorted row r1 into out.
func maltaDiffRow(mw *maltaWeights, r0, r1, out []float32) {
	out = out[:len(r0)]
	r1 = r1[:len(r0)]
	for x, v0 := range r0 {
		v1 := r1[x]
		absval := float32(0.5 * (abs32(v0) + abs32(v1))) // rounded: no fusion into den on arm64
		den := mw.norm1 + absval
		d := mw.norm2gt / den * (v0 - v1)
		scaler2 := float64(mw.norm2lt / den)
		fabs0 := float64(abs32(v0))
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
		out[x] = d
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// padded is a plane with a zero margin of 4 samples on every side, the
// support the Malta filters read beyond the image.
type padded struct {
	w, h, stride int
	p            []float32
}

const maltaPad = 4

// newPadded is a zeroed padded plane from sc.
func (sc *scratch) newPadded(w, h int) padded {
	s := w + 2*maltaPad
	return padded{w: w, h: h, stride: s, p: sc.newPlane(s, h+2*maltaPad).p}
}

// inner returns the image part of row y.
func (p padded) inner(y int) []float32 {
	o := (y+maltaPad)*p.stride + maltaPad
	return p.p[o : o+p.w : o+p.w]
}

// index of pixel (0, y) in p.p.
func (p padded) origin(y int) int { return (y+maltaPad)*p.stride + maltaPad }
