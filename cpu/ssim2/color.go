package ssim2

import (
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// fma32 is a float32 fused multiply-add, a*b+c rounded once, as the SIMD
// code of libjxl (highway MulAdd on AVX2/AVX-512) computes it. The product
// of two float32 values is exact in float64, so only the final addition
// rounds before the conversion to float32 (a double rounding that differs
// from a true single rounding only when the float64 sum lands exactly
// halfway between two float32 values, far below this package's tolerance).
func fma32(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
}

// srgbToLinear decodes one sRGB sample (nominally 0..1) exactly as libjxl's
// colour management does it for sRGB → linear sRGB: the rational
// polynomial, Horner's scheme with fused multiply-adds, float32 division.
func srgbToLinear(x float32) float32 {
	neg := x < 0
	if neg {
		x = -x
	}
	var v float32
	if x > srgbThresh {
		p := srgbP[4]
		q := srgbQ[4]
		for i := 3; i >= 0; i-- {
			p = fma32(p, x, srgbP[i])
			q = fma32(q, x, srgbQ[i])
		}
		v = p / q
	} else {
		v = x * srgbLowDivInv
	}
	if neg {
		v = -v
	}
	return v
}

// Samples are turned into floats as libjxl's PNG path does: sample × (1/max)
// in float32, where 1/max itself is a float32.
var (
	scale8  = float32(1) / float32(255)
	scale16 = float32(1) / float32(65535)
)

// Lookup tables from integer sample to linear light, built on first use.
var (
	lut8Once, lut16Once sync.Once
	lut8                []float32
	lut16               []float32
)

func linearLUT8() []float32 {
	lut8Once.Do(func() {
		lut8 = make([]float32, 256)
		for i := range lut8 {
			lut8[i] = srgbToLinear(float32(i) * scale8)
		}
	})
	return lut8
}

func linearLUT16() []float32 {
	lut16Once.Do(func() {
		lut16 = make([]float32, 65536)
		for i := range lut16 {
			lut16[i] = srgbToLinear(float32(i) * scale16)
		}
	})
	return lut16
}

// opaque reports whether every alpha sample of im is at its maximum (or im
// has no alpha). Blending an opaque pixel gives back its colour exactly
// (a·c + (1−a)·bg with a = 1 is c), so such images can skip blending.
func opaque(im *zenmetrics.Image) bool {
	f := im.Format
	if !f.HasAlpha() {
		return true
	}
	ch := f.Channels()
	bps := f.BytesPerSample()
	for y := 0; y < im.Height; y++ {
		row := im.Row(y)
		if bps == 1 {
			for i := ch - 1; i < len(row); i += ch {
				if row[i] != 0xff {
					return false
				}
			}
		} else {
			for i := (ch - 1) * 2; i < len(row); i += ch * 2 {
				if row[i] != 0xff || row[i+1] != 0xff {
					return false
				}
			}
		}
	}
	return true
}

// toLinearRow converts row y of im to linear light in r, g, b (each
// im.Width long). With blend set, each colour sample c is first composited
// over the grey background bg with its alpha a as libjxl's ssimulacra2 tool
// does it: on the sRGB-encoded values, c' = a·c + (1−a)·bg, in float32
// without fused operations, and only then decoded to linear. Grey images
// fill all three planes with the same values, as libjxl stores grey images
// as three equal planes.
func toLinearRow(im *zenmetrics.Image, y int, blend bool, bg float32, r, g, b []float32) {
	f := im.Format
	ch := f.Channels()
	gray := f.IsGray()
	w := im.Width
	row := im.Row(y)
	r, g, b = r[:w], g[:w], b[:w]
	if f.BytesPerSample() == 1 {
		lut := linearLUT8()
		if !blend && !gray && ch == 3 {
			// The common case, without the per-pixel slicing and
			// branches below: a byte indexes a 256-entry table with no
			// bounds check.
			t := (*[256]float32)(lut)
			row = row[:3*w]
			for x := range r {
				p := row[3*x : 3*x+3 : 3*x+3]
				r[x], g[x], b[x] = t[p[0]], t[p[1]], t[p[2]]
			}
			return
		}
		for x := 0; x < w; x++ {
			p := row[x*ch : x*ch+ch]
			if blend {
				a := float32(p[ch-1]) * scale8
				r[x] = blendLinear(float32(p[0])*scale8, a, bg)
				if gray {
					g[x], b[x] = r[x], r[x]
				} else {
					g[x] = blendLinear(float32(p[1])*scale8, a, bg)
					b[x] = blendLinear(float32(p[2])*scale8, a, bg)
				}
				continue
			}
			if gray {
				v := lut[p[0]]
				r[x], g[x], b[x] = v, v, v
			} else {
				r[x], g[x], b[x] = lut[p[0]], lut[p[1]], lut[p[2]]
			}
		}
		return
	}
	lut := linearLUT16()
	for x := 0; x < w; x++ {
		p := row[x*ch*2 : (x+1)*ch*2]
		s0 := int(p[0])<<8 | int(p[1])
		if blend {
			a := float32(int(p[(ch-1)*2])<<8|int(p[(ch-1)*2+1])) * scale16
			r[x] = blendLinear(float32(s0)*scale16, a, bg)
			if gray {
				g[x], b[x] = r[x], r[x]
			} else {
				s1 := int(p[2])<<8 | int(p[3])
				s2 := int(p[4])<<8 | int(p[5])
				g[x] = blendLinear(float32(s1)*scale16, a, bg)
				b[x] = blendLinear(float32(s2)*scale16, a, bg)
			}
			continue
		}
		if gray {
			v := lut[s0]
			r[x], g[x], b[x] = v, v, v
		} else {
			s1 := int(p[2])<<8 | int(p[3])
			s2 := int(p[4])<<8 | int(p[5])
			r[x], g[x], b[x] = lut[s0], lut[s1], lut[s2]
		}
	}
}

// blendLinear composites an encoded sample c with alpha a over bg and
// decodes the result. The explicit float32 conversions keep each product
// rounded on its own (no fused multiply-add), as in libjxl's scalar code.
//
// float32(a): a is often the caller's product (sample × 1/255) inlined
// here; without the conversion arm64 fuses it into 1−a (FMSUB, one
// rounding) and its scores differ from amd64's.
func blendLinear(c, a, bg float32) float32 {
	v := float32(a*c) + float32(float32(1-float32(a))*bg)
	return srgbToLinear(v)
}

// cubeRootAndAdd returns cbrt(x) + add computed as libjxl's CubeRootAndAdd
// does: an exponent-bit initial guess for x^(-1/3), three Newton steps, a
// final refinement, then x^(-2/3)·x. x must not be negative.
func cubeRootAndAdd(x, add float32) float32 {
	xa3 := third * x
	m1 := int32(math.Float32bits(x))
	var m2 int32
	if m1 != 0 {
		m2 = 0x54800000 - (m1>>23)*0x002AAAAA
	}
	r := math.Float32frombits(uint32(m2))
	for i := 0; i < 3; i++ {
		r2 := r * r
		r = fma32(-xa3, float32(r2*r2), float32(fourThird*r))
	}
	r2 := r * r
	r = fma32(third, fma32(-x, float32(r2*r2), r), r)
	r2 = r * r
	return fma32(r2, x, add)
}

// cubeRootGuess is the exponent-bit initial guess for x^(-1/3) of
// cubeRootAndAdd.
func cubeRootGuess(x float32) float32 {
	m1 := int32(math.Float32bits(x))
	var m2 int32
	if m1 != 0 {
		m2 = 0x54800000 - (m1>>23)*0x002AAAAA
	}
	return math.Float32frombits(uint32(m2))
}

// cubeRootAndAdd3 is cubeRootAndAdd of three values, computed step by step
// side by side so that the three dependency chains overlap. Each value goes
// through exactly the operations of cubeRootAndAdd.
func cubeRootAndAdd3(x0, x1, x2, add float32) (float32, float32, float32) {
	n0, n1, n2 := float64(-(third * x0)), float64(-(third * x1)), float64(-(third * x2))
	r0, r1, r2 := cubeRootGuess(x0), cubeRootGuess(x1), cubeRootGuess(x2)
	for i := 0; i < 3; i++ {
		q0, q1, q2 := r0*r0, r1*r1, r2*r2
		r0 = float32(n0*float64(float32(q0*q0)) + float64(float32(fourThird*r0)))
		r1 = float32(n1*float64(float32(q1*q1)) + float64(float32(fourThird*r1)))
		r2 = float32(n2*float64(float32(q2*q2)) + float64(float32(fourThird*r2)))
	}
	q0, q1, q2 := r0*r0, r1*r1, r2*r2
	r0 = fma32(third, fma32(-x0, float32(q0*q0), r0), r0)
	r1 = fma32(third, fma32(-x1, float32(q1*q1), r1), r1)
	r2 = fma32(third, fma32(-x2, float32(q2*q2), r2), r2)
	q0, q1, q2 = r0*r0, r1*r1, r2*r2
	return fma32(q0, x0, add), fma32(q1, x1, add), fma32(q2, x2, add)
}

// toXYB converts rows [y0, y1) of three linear planes (width w) to
// SSIMULACRA2's positive XYB in dst.
func toXYB(lin, dst *[3][]float32, w, y0, y1 int, simd bool) {
	for y := y0; y < y1; y++ {
		o := y * w
		xybRow(simd, lin[0][o:o+w], lin[1][o:o+w], lin[2][o:o+w], dst[0][o:o+w], dst[1][o:o+w], dst[2][o:o+w])
	}
}

// xybRow is toXYBRow, or its cpusimd version when simd is set.
func xybRow(simd bool, r, g, b, dx, dy, db []float32) {
	if simd {
		simdXYB.Row(r, g, b, dx, dy, db)
		return
	}
	toXYBRow(r, g, b, dx, dy, db)
}

// toXYBRow converts one row of linear r, g, b to positive XYB: libjxl's
// opsin absorbance (fused multiply-adds, bias, clamp at zero), cube root,
// X = (L−M)/2, Y = (L+M)/2, B = S; then X·14+0.42, Y+0.01, (B−Y)+0.55.
func toXYBRow(r, g, b, dx, dy, db []float32) {
	n := len(r)
	g, b, dx, dy, db = g[:n], b[:n], dx[:n], dy[:n], db[:n]
	for x := 0; x < n; x++ {
		rv, gv, bv := r[x], g[x], b[x]
		m0 := fma32(opsinM00, rv, fma32(opsinM01, gv, fma32(opsinM02, bv, opsinBias)))
		m1 := fma32(opsinM10, rv, fma32(opsinM11, gv, fma32(opsinM12, bv, opsinBias)))
		m2 := fma32(opsinM20, rv, fma32(opsinM21, gv, fma32(opsinM22, bv, opsinBias)))
		if !(m0 > 0) {
			m0 = 0
		}
		if !(m1 > 0) {
			m1 = 0
		}
		if !(m2 > 0) {
			m2 = 0
		}
		m0, m1, m2 = cubeRootAndAdd3(m0, m1, m2, negBiasCbrt)
		xv := 0.5 * float32(m0-m1)
		yv := 0.5 * float32(m0+m1)
		dx[x] = float32(xv*posXMul) + posXAdd
		dy[x] = yv + posYAdd
		db[x] = float32(m2-yv) + posBAdd
	}
}

// downsample2Row writes one output row: the 2×2 box means of input rows
// r0 and r1 (equal when the input has an odd height and r0 is its last
// row), the last column repeated for odd widths, summed in libjxl's order
// (row by row) in float32.
func downsample2Row(r0, r1, out []float32) {
	w := len(r0)
	r1 = r1[:w]
	// Whole pairs first (one bounds check per pair), then an odd last
	// column, which is its own pair; the same sums in the same order.
	pairs := min(len(out), w/2)
	head := out[:pairs]
	for ox := range head {
		a, b := r0[2*ox:2*ox+2:2*ox+2], r1[2*ox:2*ox+2:2*ox+2]
		sum := a[0] + a[1]
		sum += b[0]
		sum += b[1]
		head[ox] = sum * 0.25
	}
	for ox := pairs; ox < len(out); ox++ {
		x0 := 2 * ox
		x1 := min(x0+1, w-1)
		sum := r0[x0] + r0[x1]
		sum += r1[x0]
		sum += r1[x1]
		out[ox] = sum * 0.25
	}
}

// downsample2 halves three planes (w×h) into dst ((w+1)/2 × (h+1)/2) for
// output rows [oy0, oy1).
func downsample2(src, dst *[3][]float32, w, h, oy0, oy1 int) {
	ow := (w + 1) / 2
	for c := 0; c < 3; c++ {
		s, d := src[c], dst[c]
		for oy := oy0; oy < oy1; oy++ {
			y0 := 2 * oy
			y1 := min(y0+1, h-1)
			downsample2Row(s[y0*w:y0*w+w], s[y1*w:y1*w+w], d[oy*ow:oy*ow+ow])
		}
	}
}
