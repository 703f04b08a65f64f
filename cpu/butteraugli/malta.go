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

// maltaLF evaluates the sparse (5-sample) Malta filter at d[i]; s is the
// row stride of d, which must hold 4 samples of margin on every side.
func maltaLF(d []float32, i, s int) float32 {
	_ = d[i-4*s-4]
	_ = d[i+4*s+4]
	c := d[i]
	s2, s3, s4 := 2*s, 3*s, 4*s
	t := sum5(d[i-4], d[i-2], c, d[i+2], d[i+4])
	r := t * t
	t = sum5(d[i-s4], d[i-s2], c, d[i+s2], d[i+s4])
	r += t * t
	t = sum5(d[i-s3-3], d[i-s2-2], c, d[i+s2+2], d[i+s3+3])
	r += t * t
	t = sum5(d[i-s3+3], d[i-s2+2], c, d[i+s2-2], d[i+s3-3])
	r += t * t
	t = sum5(d[i-s4+1], d[i-s2+1], c, d[i+s2-1], d[i+s4-1])
	r += t * t
	t = sum5(d[i-s4-1], d[i-s2-1], c, d[i+s2+1], d[i+s4+1])
	r += t * t
	t = sum5(d[i-4-s], d[i-2-s], c, d[i+2+s], d[i+4+s])
	r += t * t
	t = sum5(d[i-4+s], d[i-2+s], c, d[i+2-s], d[i+4-s])
	r += t * t
	t = sum5(d[i-s3-2], d[i-s2-1], c, d[i+s2+1], d[i+s3+2])
	r += t * t
	t = sum5(d[i-s3+2], d[i-s2+1], c, d[i+s2-1], d[i+s3-2])
	r += t * t
	t = sum5(d[i-s2-3], d[i-s-2], c, d[i+s+2], d[i+s2+3])
	r += t * t
	t = sum5(d[i-s2+3], d[i-s+2], c, d[i+s-2], d[i+s2-3])
	r += t * t
	t = sum5(d[i+s2-4], d[i+s-2], c, d[i-s+2], d[i-s2+4])
	r += t * t
	t = sum5(d[i-s2-4], d[i-s-2], c, d[i+s+2], d[i+s2+4])
	r += t * t
	t = sum5(d[i-s4-2], d[i-s2-1], c, d[i+s2+1], d[i+s4+2])
	r += t * t
	t = sum5(d[i-s4+2], d[i-s2+1], c, d[i+s2-1], d[i+s4-2])
	r += t * t
	return r
}

// maltaHF evaluates the dense (7- to 9-sample) Malta filter at d[i].
func maltaHF(d []float32, i, s int) float32 {
	_ = d[i-4*s-4]
	_ = d[i+4*s+4]
	c := d[i]
	s2, s3, s4 := 2*s, 3*s, 4*s
	t := sum9(d[i-4], d[i-3], d[i-2], d[i-1], c, d[i+1], d[i+2], d[i+3], d[i+4])
	r := t * t
	t = sum9(d[i-s4], d[i-s3], d[i-s2], d[i-s], c, d[i+s], d[i+s2], d[i+s3], d[i+s4])
	r += t * t
	t = sum7(d[i-s3-3], d[i-s2-2], d[i-s-1], c, d[i+s+1], d[i+s2+2], d[i+s3+3])
	r += t * t
	t = sum7(d[i-s3+3], d[i-s2+2], d[i-s+1], c, d[i+s-1], d[i+s2-2], d[i+s3-3])
	r += t * t
	// The next four segments appear twice in the reference's list of
	// sixteen; they are computed once and counted twice, in its order.
	a := sum9(d[i-s4+1], d[i-s3+1], d[i-s2+1], d[i-s], c, d[i+s], d[i+s2-1], d[i+s3-1], d[i+s4-1])
	r += a * a
	b := sum9(d[i-s4-1], d[i-s3-1], d[i-s2-1], d[i-s], c, d[i+s], d[i+s2+1], d[i+s3+1], d[i+s4+1])
	r += b * b
	e := sum9(d[i-4-s], d[i-3-s], d[i-2-s], d[i-1], c, d[i+1], d[i+2+s], d[i+3+s], d[i+4+s])
	r += e * e
	f := sum9(d[i-4+s], d[i-3+s], d[i-2+s], d[i-1], c, d[i+1], d[i+2-s], d[i+3-s], d[i+4-s])
	r += f * f
	t = sum7(d[i-s3-2], d[i-s2-1], d[i-s-1], c, d[i+s+1], d[i+s2+1], d[i+s3+2])
	r += t * t
	t = sum7(d[i-s3+2], d[i-s2+1], d[i-s+1], c, d[i+s-1], d[i+s2-1], d[i+s3-2])
	r += t * t
	t = sum7(d[i-s2-3], d[i-s-2], d[i-s-1], c, d[i+s+1], d[i+s+2], d[i+s2+3])
	r += t * t
	t = sum7(d[i-s2+3], d[i-s+2], d[i-s+1], c, d[i+s-1], d[i+s-2], d[i+s2-3])
	r += t * t
	r += f * f
	r += e * e
	r += b * b
	r += a * a
	return r
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
		absval := 0.5 * (abs32(v0) + abs32(v1))
		den := mw.norm1 + absval
		d := mw.norm2gt / den * (v0 - v1)
		scaler2 := float64(mw.norm2lt / den)
		fabs0 := float64(abs32(v0))
		tooSmall := 0.55 * fabs0
		tooBig := 1.05 * fabs0
		w1 := float64(v1)
		if v0 < 0 {
			if w1 > -tooSmall {
				d = float32(float64(d) - scaler2*(w1+tooSmall))
			} else if w1 < -tooBig {
				d = float32(float64(d) + scaler2*(-w1-tooBig))
			}
		} else {
			if w1 < tooSmall {
				d = float32(float64(d) + scaler2*(tooSmall-w1))
			} else if w1 > tooBig {
				d = float32(float64(d) - scaler2*(w1-tooBig))
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

func newPadded(w, h int) padded {
	s := w + 2*maltaPad
	return padded{w: w, h: h, stride: s, p: make([]float32, s*(h+2*maltaPad))}
}

// inner returns the image part of row y.
func (p padded) inner(y int) []float32 {
	o := (y+maltaPad)*p.stride + maltaPad
	return p.p[o : o+p.w : o+p.w]
}

// index of pixel (0, y) in p.p.
func (p padded) origin(y int) int { return (y+maltaPad)*p.stride + maltaPad }
