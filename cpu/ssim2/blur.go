package ssim2

import "github.com/zenmetrics-go/zenmetrics/internal/recgauss"

// The blur is libjxl's recursive Gaussian (tools/gauss_blur.cc, after
// Charalampidis 2016, "Recursive implementation of the Gaussian filter using
// truncated cosine functions"): three second-order IIR filters (k = 1, 3, 5)
// whose outputs are summed, run forwards only, fed with the sum of the two
// input samples at distance radius on either side. Samples outside the image
// are zero. It is not a symmetric convolution, and its rounding depends on
// how libjxl groups the operations, so both passes are reproduced as libjxl
// executes them:
//
//   - horizontally, libjxl computes four outputs at once from powers of the
//     recurrence (mul_in/mul_prev/mul_prev2 below) in its interior, and one
//     at a time near the borders;
//   - vertically, each column runs the plain recurrence.
//
// All arithmetic is float32 with fused multiply-adds where libjxl's SIMD code
// has them.

// gaussLanes is libjxl's JXL_GAUSS_MAX_LANES: the horizontal pass produces
// this many outputs per step in the image interior.
const gaussLanes = 4

type gaussian struct {
	radius int
	n2, d1 [3]float32
	// Per filter k and output lane j of a 4-output step: the multiplier of
	// input sample i (mulIn[k][j-i]), of the previous output (mulPrev) and
	// of the one before (mulPrev2).
	mulIn, mulPrev, mulPrev2 [3][4]float32
}

var blurSigma15 = newGaussian(1.5)

// newGaussian takes libjxl's CreateRecursiveGaussian constants (shared
// with the GPU host code, which must produce the very same bits).
func newGaussian(sigma float64) *gaussian {
	c := recgauss.New(sigma)
	return &gaussian{radius: c.Radius, n2: c.N2, d1: c.D1, mulIn: c.MulIn, mulPrev: c.MulPrev, mulPrev2: c.MulPrev2}
}

// The two passes hold float32 values in float64 variables: the product of
// two float32 values is exact in float64, so r32(a*b+c) is the float32
// fused multiply-add, r32(a*b) the float32 product and r32(a+b) the float32
// sum (a float64 sum of two float32 values rounds to the same float32 as a
// float32 sum). This saves the conversions in and out of float32 on every
// operation, which otherwise dominate the filter's cost.

// r32 rounds a float64 to the nearest float32 and widens it again.
func r32(x float64) float64 { return float64(float32(x)) }

// coeffs64 are a gaussian's float32 constants widened to float64.
type coeffs64 struct {
	n2, d1                   [3]float64
	mulIn, mulPrev, mulPrev2 [3][4]float64
}

func (g *gaussian) wide() *coeffs64 {
	c := &coeffs64{}
	for k := 0; k < 3; k++ {
		c.n2[k], c.d1[k] = float64(g.n2[k]), float64(g.d1[k])
		for j := 0; j < 4; j++ {
			c.mulIn[k][j] = float64(g.mulIn[k][j])
			c.mulPrev[k][j] = float64(g.mulPrev[k][j])
			c.mulPrev2[k][j] = float64(g.mulPrev2[k][j])
		}
	}
	return c
}

var blurSigma15Wide = blurSigma15.wide()

// blurRow runs the horizontal recursive filter over one row. in and out
// have the same length and must not overlap.
func (g *gaussian) blurRow(in, out []float32) {
	c := blurSigma15Wide
	if g != blurSigma15 {
		c = g.wide()
	}
	xs := len(in)
	N := g.radius
	var prev, prev2 [3]float64

	// step computes output n one at a time, with bounds checks, as libjxl
	// does near the borders.
	step := func(n int) {
		var lv, rv float32
		if l := n - N - 1; l >= 0 {
			lv = in[l]
		}
		if r := n + N - 1; r < xs {
			rv = in[r]
		}
		sum := float64(lv + rv)
		var o [3]float64
		for k := 0; k < 3; k++ {
			v := r32(sum * c.mulIn[k][0])
			v = r32(c.mulPrev2[k][0]*prev2[k] + v)
			v = r32(c.mulPrev[k][0]*prev[k] + v)
			prev2[k] = prev[k]
			prev[k] = v
			o[k] = v
		}
		if n >= 0 {
			out[n] = float32(o[0] + float64(float32(o[1]+o[2])))
		}
	}

	n := -N + 1
	firstAligned := (N + 1 + gaussLanes - 1) / gaussLanes * gaussLanes
	for end := min(firstAligned, xs); n < end; n++ {
		step(n)
	}
	// Interior: four outputs per step from the four input sums s0..s3 and
	// the last two outputs, each lane j accumulating its own terms. The
	// three filters are written out with their state in locals so that the
	// recurrences stay in registers; the operations are those of libjxl's
	// step, in its order. A product of two float32 values rounded to
	// float32 is computed in float32 directly (one rounding either way).
	ma, mb, mc := &c.mulIn[0], &c.mulIn[1], &c.mulIn[2]
	fa, fb, fc := &g.mulIn[0], &g.mulIn[1], &g.mulIn[2]
	qa1, qb1, qc1 := &c.mulPrev[0], &c.mulPrev[1], &c.mulPrev[2]
	qa2, qb2, qc2 := &c.mulPrev2[0], &c.mulPrev2[1], &c.mulPrev2[2]
	pa1, pb1, pc1 := prev[0], prev[1], prev[2]
	pa2, pb2, pc2 := prev2[0], prev2[1], prev2[2]
	for ; n < xs-N+1-(gaussLanes-1); n += gaussLanes {
		l := in[n-N-1 : n-N-1+4]
		r := in[n+N-1 : n+N-1+4]
		f0 := l[0] + r[0]
		f1 := l[1] + r[1]
		f2 := l[2] + r[2]
		f3 := l[3] + r[3]
		s1, s2, s3 := float64(f1), float64(f2), float64(f3)

		a0 := float64(float32(f0 * fa[0]))
		a1 := float64(float32(f0 * fa[1]))
		a2 := float64(float32(f0 * fa[2]))
		a3 := float64(float32(f0 * fa[3]))
		a1 = r32(ma[0]*s1 + a1)
		a2 = r32(ma[1]*s1 + a2)
		a3 = r32(ma[2]*s1 + a3)
		a2 = r32(ma[0]*s2 + a2)
		a3 = r32(ma[1]*s2 + a3)
		a3 = r32(ma[0]*s3 + a3)
		a0f := float32(qa1[0]*pa1 + r32(qa2[0]*pa2+a0))
		a1f := float32(qa1[1]*pa1 + r32(qa2[1]*pa2+a1))
		a2f := float32(qa1[2]*pa1 + r32(qa2[2]*pa2+a2))
		a3f := float32(qa1[3]*pa1 + r32(qa2[3]*pa2+a3))
		pa2, pa1 = float64(a2f), float64(a3f)

		b0 := float64(float32(f0 * fb[0]))
		b1 := float64(float32(f0 * fb[1]))
		b2 := float64(float32(f0 * fb[2]))
		b3 := float64(float32(f0 * fb[3]))
		b1 = r32(mb[0]*s1 + b1)
		b2 = r32(mb[1]*s1 + b2)
		b3 = r32(mb[2]*s1 + b3)
		b2 = r32(mb[0]*s2 + b2)
		b3 = r32(mb[1]*s2 + b3)
		b3 = r32(mb[0]*s3 + b3)
		b0f := float32(qb1[0]*pb1 + r32(qb2[0]*pb2+b0))
		b1f := float32(qb1[1]*pb1 + r32(qb2[1]*pb2+b1))
		b2f := float32(qb1[2]*pb1 + r32(qb2[2]*pb2+b2))
		b3f := float32(qb1[3]*pb1 + r32(qb2[3]*pb2+b3))
		pb2, pb1 = float64(b2f), float64(b3f)

		c0 := float64(float32(f0 * fc[0]))
		c1 := float64(float32(f0 * fc[1]))
		c2 := float64(float32(f0 * fc[2]))
		c3 := float64(float32(f0 * fc[3]))
		c1 = r32(mc[0]*s1 + c1)
		c2 = r32(mc[1]*s1 + c2)
		c3 = r32(mc[2]*s1 + c3)
		c2 = r32(mc[0]*s2 + c2)
		c3 = r32(mc[1]*s2 + c3)
		c3 = r32(mc[0]*s3 + c3)
		c0f := float32(qc1[0]*pc1 + r32(qc2[0]*pc2+c0))
		c1f := float32(qc1[1]*pc1 + r32(qc2[1]*pc2+c1))
		c2f := float32(qc1[2]*pc1 + r32(qc2[2]*pc2+c2))
		c3f := float32(qc1[3]*pc1 + r32(qc2[3]*pc2+c3))
		pc2, pc1 = float64(c2f), float64(c3f)

		dst := out[n : n+4]
		dst[0] = a0f + (b0f + c0f)
		dst[1] = a1f + (b1f + c1f)
		dst[2] = a2f + (b2f + c2f)
		dst[3] = a3f + (b3f + c3f)
	}
	prev = [3]float64{pa1, pb1, pc1}
	prev2 = [3]float64{pa2, pb2, pc2}
	for ; n < xs; n++ {
		step(n)
	}
}

// blurRowOf runs blurRow over row y of the w-wide plane a (times the same
// row of b when b is not nil, formed in buf) into the same row of dst.
func (g *gaussian) blurRowOf(a, b, dst []float32, w, y int, buf []float32) {
	in := a[y*w : (y+1)*w]
	if b != nil {
		bb := b[y*w : (y+1)*w]
		buf = buf[:w]
		for x := range buf {
			buf[x] = in[x] * bb[x]
		}
		in = buf
	}
	g.blurRow(in, dst[y*w:(y+1)*w])
}

// colBlock is how many columns one vertical-pass task filters side by side.
const colBlock = 64

// blurCols runs the vertical recursive filter over columns [x0, x1) of a
// w×h plane (x1−x0 ≤ colBlock), reading in and writing out.
func (g *gaussian) blurCols(in, out []float32, w, h, x0, x1 int) {
	c := blurSigma15Wide
	if g != blurSigma15 {
		c = g.wide()
	}
	N := g.radius
	nc := x1 - x0
	// Two sets of filter states whose roles swap every row: cur holds
	// y[n−1], old y[n−2], and y[n] overwrites old (saving the copies).
	var st [2][3][colBlock]float64
	cur, old := &st[0], &st[1]
	var sum [colBlock]float64
	n21, n23, n25 := c.n2[0], c.n2[1], c.n2[2]
	d11, d13, d15 := c.d1[0], c.d1[1], c.d1[2]
	for n := -N + 1; n < h; n++ {
		top, bot := n-N-1, n+N-1
		a1, a3, a5 := cur[0][:nc], cur[1][:nc], cur[2][:nc]
		b1, b3, b5 := old[0][:nc], old[1][:nc], old[2][:nc]
		cur, old = old, cur
		// y = n2·sum − (d1·y[n−1] + y[n−2]), each bracket one rounding.
		if top >= 0 && bot < h {
			// Interior rows (always n ≥ 0): the input sum is formed in
			// the loop.
			t := in[top*w+x0 : top*w+x1]
			bt := in[bot*w+x0 : bot*w+x1]
			o := out[n*w+x0 : n*w+x1]
			bt, o = bt[:len(t)], o[:len(t)]
			a1, a3, a5, b1, b3, b5 = a1[:len(t)], a3[:len(t)], a5[:len(t)], b1[:len(t)], b3[:len(t)], b5[:len(t)]
			for j := range t {
				sv := float64(t[j] + bt[j])
				y1 := float32(n21*sv - r32(d11*a1[j]+b1[j]))
				y3 := float32(n23*sv - r32(d13*a3[j]+b3[j]))
				y5 := float32(n25*sv - r32(d15*a5[j]+b5[j]))
				b1[j], b3[j], b5[j] = float64(y1), float64(y3), float64(y5)
				o[j] = y1 + (y3 + y5)
			}
			continue
		}
		s := sum[:nc]
		switch {
		case bot < h:
			b := in[bot*w+x0 : bot*w+x1]
			for j := range s {
				s[j] = float64(b[j])
			}
		case top >= 0:
			t := in[top*w+x0 : top*w+x1]
			for j := range s {
				s[j] = float64(t[j])
			}
		default:
			clear(s)
		}
		if n < 0 {
			for j, sv := range s {
				y1 := r32(n21*sv - r32(d11*a1[j]+b1[j]))
				y3 := r32(n23*sv - r32(d13*a3[j]+b3[j]))
				y5 := r32(n25*sv - r32(d15*a5[j]+b5[j]))
				b1[j], b3[j], b5[j] = y1, y3, y5
			}
			continue
		}
		o := out[n*w+x0 : n*w+x1]
		o = o[:len(s)]
		for j, sv := range s {
			y1 := float32(n21*sv - r32(d11*a1[j]+b1[j]))
			y3 := float32(n23*sv - r32(d13*a3[j]+b3[j]))
			y5 := float32(n25*sv - r32(d15*a5[j]+b5[j]))
			b1[j], b3[j], b5[j] = float64(y1), float64(y3), float64(y5)
			o[j] = y1 + (y3 + y5)
		}
	}
}
