package dssim

import (
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// Constants transcribed from kornelski/dssim, crate dssim-core 3.4.0 (git
// tag 3.4.0, commit c86745c4), files dssim-core/src/linear.rs and
// dssim-core/src/tolab.rs; dssim-core is AGPL-3.0. Only the numbers are
// taken; the code is written from the description in the package doc.
// dssim-core declares them as f32 and folds the divisions in f32, so each
// is built here from float32 operands at init (see lab below).
const (
	srgbLinearThresh = 0.04045 // linear.rs to_linear: s <= 0.04045 → s/12.92
	srgbLinearSlope  = 12.92
	srgbOffset       = 0.055 // ((s+0.055)/1.055)^2.4
	srgbScale        = 1.055
	srgbGamma        = 2.4

	d65X = 0.9505 // tolab.rs D65x, D65y, D65z
	d65Y = 1.0
	d65Z = 1.089
)

// labConst holds dssim-core's L*a*b* constants as the float32 values its
// compiled code uses (each division rounded once to float32).
type labConst struct {
	m                   [9]float32 // RGB → XYZ/white rows: X, Y, Z
	eps, k, off         float32    // 216/24389, 24389/(27·116), 16/116
	lScale              float32    // 1.05
	aScale, aOff        float32    // 500/220, 86.2/220
	bScale, bOff        float32    // 200/220, 107.9/220
	poly0, poly1, poly2 float32    // cube-root seed 0.2 + 1.51x − 0.5x²
}

func div32(a, b float32) float32 { return a / b }

// lab is filled at init so that every constant is the float32 quotient of
// float32 operands, as rustc folds `0.4124 / D65x` for f32 operands.
var lab = func() labConst {
	var c labConst
	x, y, z := float32(d65X), float32(d65Y), float32(d65Z)
	c.m = [9]float32{
		div32(0.4124, x), div32(0.3576, x), div32(0.1805, x),
		div32(0.2126, y), div32(0.7152, y), div32(0.0722, y),
		div32(0.0193, z), div32(0.1192, z), div32(0.9505, z),
	}
	c.eps = div32(216, 24389)
	c.k = div32(24389, float32(27)*float32(116))
	c.off = div32(16, 116)
	c.lScale = 1.05
	c.aScale, c.aOff = div32(500, 220), div32(float32(86.2), 220)
	c.bScale, c.bOff = div32(200, 220), div32(float32(107.9), 220)
	c.poly0, c.poly1, c.poly2 = 0.2, 1.51, -0.5
	return c
}()

// fma32 is a float32 fused multiply-add (Rust's f32::mul_add): the product
// of two float32 values is exact in float64, so only the sum rounds before
// the conversion (a double rounding that can differ from one rounding only
// when the float64 sum lands exactly halfway between two float32 values).
func fma32(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
}

// srgbToLinear32 is dssim-core's to_linear on a float32 sample s in [0, 1]:
// s/12.92 up to 0.04045, else ((s+0.055)/1.055)^2.4, all in float32 (powf
// with the float32 exponent 2.4f32; float64 pow rounded to float32 gives the
// correctly rounded powf result).
func srgbToLinear32(s float32) float32 {
	if s <= srgbLinearThresh {
		return s / srgbLinearSlope
	}
	v := (s + srgbOffset) / srgbScale
	return float32(math.Pow(float64(v), float64(float32(srgbGamma))))
}

// Lookup tables from integer sample to linear light, as dssim-core builds
// them (make_lut: to_linear(i as f32 / max as f32)), built on first use.
var (
	lut8Once, lut16Once sync.Once
	lut8, lut16         []float32
)

func linearLUT8() []float32 {
	lut8Once.Do(func() {
		lut8 = make([]float32, 256)
		for i := range lut8 {
			lut8[i] = srgbToLinear32(float32(i) / 255)
		}
	})
	return lut8
}

func linearLUT16() []float32 {
	lut16Once.Do(func() {
		lut16 = make([]float32, 65536)
		for i := range lut16 {
			lut16[i] = srgbToLinear32(float32(i) / 65535)
		}
	})
	return lut16
}

// linImage is an image in linear light at one scale: planes r, g, b and,
// for formats with alpha, a (nil otherwise). With alpha the colour planes
// are premultiplied (dssim-core's RGBAPLU); without, they are RGBLU.
type linImage struct {
	w, h    int
	r, g, b []float32
	a       []float32
}

// toLinearRows fills rows [y0, y1) of lin (scale 0) from im, as the dssim
// tool's loader maps pixel formats: grey becomes R = G = B; formats with
// alpha keep it, unit alpha = a / max in float32, and the linear colours
// are multiplied by it (premultiplied, linear light).
func toLinearRows(im *zenmetrics.Image, lin *linImage, y0, y1 int) {
	f := im.Format
	ch := f.Channels()
	w := im.Width
	lut := linearLUT8()
	deep := f.BytesPerSample() == 2
	maxv := float32(255)
	if deep {
		lut = linearLUT16()
		maxv = 65535
	}
	gray := f.IsGray()
	alpha := f.HasAlpha()
	for y := y0; y < y1; y++ {
		row := im.Row(y)
		o := y * w
		r, g, b := lin.r[o:o+w], lin.g[o:o+w], lin.b[o:o+w]
		var a []float32
		if alpha {
			a = lin.a[o : o+w]
		}
		sample := func(x, c int) int {
			i := x*ch + c
			if deep {
				return int(row[2*i])<<8 | int(row[2*i+1])
			}
			return int(row[i])
		}
		for x := 0; x < w; x++ {
			var lr, lg, lb float32
			if gray {
				lr = lut[sample(x, 0)]
				lg, lb = lr, lr
			} else {
				lr, lg, lb = lut[sample(x, 0)], lut[sample(x, 1)], lut[sample(x, 2)]
			}
			if alpha {
				au := float32(sample(x, ch-1)) / maxv
				lr, lg, lb = lr*au, lg*au, lb*au
				a[x] = au
			}
			r[x], g[x], b[x] = lr, lg, lb
		}
	}
}

// downsampleRows writes rows [y0, y1) of dst (src.w/2 × src.h/2) as the
// mean of each 2×2 block of src, ((p00 + p01) + p10 + p11) × 0.25 in
// float32, every plane including alpha (dssim-core's Average4 on linear,
// premultiplied pixels). An odd last column or row of src is dropped.
func downsampleRows(src, dst *linImage, y0, y1 int) {
	sw, dw := src.w, dst.w
	planes := [4][2][]float32{{src.r, dst.r}, {src.g, dst.g}, {src.b, dst.b}, {src.a, dst.a}}
	for _, p := range planes {
		if p[0] == nil {
			continue
		}
		for y := y0; y < y1; y++ {
			top := p[0][2*y*sw : 2*y*sw+2*dw]
			bot := p[0][(2*y+1)*sw : (2*y+1)*sw+2*dw]
			out := p[1][y*dw : (y+1)*dw]
			for x := range out {
				out[x] = (top[2*x] + top[2*x+1] + bot[2*x] + bot[2*x+1]) * 0.25
			}
		}
	}
}

// cbrtPoly is dssim-core's cube root for x in [0, 1]: the seed
// (−0.5x + 1.51)x + 0.2, then two Halley steps y·(y³+2x)/(2y³+x), in
// float32 without fused operations (the conversions stop Go from fusing on
// arm64).
func cbrtPoly(x float32) float32 {
	y := float32(float32(float32(lab.poly2*x)+lab.poly1)*x) + lab.poly0
	for i := 0; i < 2; i++ {
		y3 := float32(float32(y*y) * y) // rounded: arm64 would fuse it into y3+2x
		y = float32(y*float32(y3+float32(2*x))) / float32(float32(2*y3)+x)
	}
	return y
}

// labF3 is labF on three values, computed side by side without branches
// (the cube root is evaluated for every value and selected afterwards) so
// that the three dependency chains of divisions overlap. Each result is
// exactly labF's.
func labF3(x0, x1, x2 float32) (float32, float32, float32) {
	p0, p1, p2 := lab.poly0, lab.poly1, lab.poly2
	y0 := float32(float32(float32(p2*x0)+p1)*x0) + p0
	y1 := float32(float32(float32(p2*x1)+p1)*x1) + p0
	y2 := float32(float32(float32(p2*x2)+p1)*x2) + p0
	for i := 0; i < 2; i++ {
		c0 := float32(float32(y0*y0) * y0) // rounded, as in cbrtPoly
		c1 := float32(float32(y1*y1) * y1)
		c2 := float32(float32(y2*y2) * y2)
		y0 = float32(y0*float32(c0+float32(2*x0))) / float32(float32(2*c0)+x0)
		y1 = float32(y1*float32(c1+float32(2*x1))) / float32(float32(2*c1)+x1)
		y2 = float32(y2*float32(c2+float32(2*x2))) / float32(float32(2*c2)+x2)
	}
	eps, off, k := lab.eps, lab.off, lab.k
	r0, r1, r2 := x0*k, x1*k, x2*k
	if x0 > eps {
		r0 = y0 - off
	}
	if x1 > eps {
		r1 = y1 - off
	}
	if x2 > eps {
		r2 = y2 - off
	}
	return r0, r1, r2
}

// labF is the L*a*b* companding of one XYZ/white component: cbrt(v) − 16/116
// above 216/24389, else v × 24389/(27·116).
func labF(v float32) float32 {
	if v > lab.eps {
		return cbrtPoly(v) - lab.off
	}
	return v * lab.k
}

// labRows converts rows [y0, y1) of lin (at its scale) to dssim-core's
// scaled L*a*b* planes l, a, b. An image with alpha is first composited
// over dssim-core's fixed pattern: with n = (x+11) XOR (y+11) at this
// scale, 1−α is added to R when n&16, to G when n&8, to B when n&32.
func labRows(lin *linImage, l, a, b []float32, y0, y1 int) {
	w := lin.w
	m := &lab.m
	for y := y0; y < y1; y++ {
		o := y * w
		rr, gg, bb := lin.r[o:o+w], lin.g[o:o+w], lin.b[o:o+w]
		var al []float32
		if lin.a != nil {
			al = lin.a[o : o+w]
		}
		lo, ao, bo := l[o:o+w], a[o:o+w], b[o:o+w]
		for x := 0; x < w; x++ {
			r, g, bl := rr[x], gg[x], bb[x]
			if al != nil {
				t := 1 - al[x]
				n := (x + 11) ^ (y + 11)
				if n&16 != 0 {
					r += t
				}
				if n&8 != 0 {
					g += t
				}
				if n&32 != 0 {
					bl += t
				}
			}
			fx := fma32(bl, m[2], fma32(g, m[1], r*m[0]))
			fy := fma32(bl, m[5], fma32(g, m[4], r*m[3]))
			fz := fma32(bl, m[8], fma32(g, m[7], r*m[6]))
			X, Y, Z := labF3(fx, fy, fz)
			lo[x] = Y * lab.lScale
			ao[x] = fma32(lab.aScale, X-Y, lab.aOff)
			bo[x] = fma32(lab.bScale, Y-Z, lab.bOff)
		}
	}
}
