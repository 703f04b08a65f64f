package zensim

import (
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// Opsin absorbance matrix and bias as zensim 0.2.7 uses them
// (zensim/src/color.rs, K_M00..K_M22, K_B0; MIT OR Apache-2.0). The
// diagonal-complement entries are float32 differences, as there.
const (
	kM02 float32 = 0.078
	kM00 float32 = 0.30
	kM12 float32 = 0.078
	kM10 float32 = 0.23
	kM20 float32 = 0.24342269
	kM21 float32 = 0.20476745
	kB0  float32 = 0.0037930734
)

var (
	kM01 = sub32(sub32(1, kM02), kM00)
	kM11 = sub32(sub32(1, kM12), kM10)
	kM22 = sub32(sub32(1, kM20), kM21)
	// absorbanceBias is −cbrt(kB0) with zensim's scalar cube root.
	absorbanceBias = -cbrtFast(kB0)
)

func sub32(a, b float32) float32 { return a - b }

// fma32 is a·b + c rounded once to float32 (computed in float64: the
// product of two float32 is exact there; the sum can round twice in rare
// cases, a last-bit difference).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// cbrtMidp is magetypes 0.9.23's cbrt_midp, which zensim's vector XYB
// conversion uses: a bit-hack seed (bits/3 + 0x2a508c2d) and two unfused
// Halley steps y·((y³ + 2x)/(2y³ + x)). Inputs are ≥ 0 here.
func cbrtMidp(x float32) float32 {
	if x == 0 {
		return x
	}
	y := math.Float32frombits(math.Float32bits(x)/3 + 0x2a508c2d)
	for i := 0; i < 2; i++ {
		y3 := float32(float32(y*y) * y)
		num := y3 + float32(2*x)
		den := float32(2*y3) + x
		y = y * float32(num/den)
	}
	return y
}

// cbrtFast is zensim's scalar cube root (color.rs cbrtf_fast), used for the
// pixels left over after the 8-wide vector loop: seed bits/3 + 709958130,
// two Halley steps with fused x·2 + r and r·2 + x.
func cbrtFast(x float32) float32 {
	if x == 0 {
		return 0
	}
	ui := math.Float32bits(x)
	t := math.Float32frombits(ui&0x80000000 | ((ui&0x7fffffff)/3 + 709958130))
	for i := 0; i < 2; i++ {
		r := float32(float32(t*t) * t)
		t = t * float32(fma32(x, 2, r)/fma32(r, 2, x))
	}
	return t
}

// xyb converts one linear RGB pixel to zensim's positive XYB: opsin mix
// (fused, bias innermost), clamp at 0, cube root, then X = 14·(c0−c1)/2 +
// 0.42 (fused), Y = (c0+c1)/2 + 0.01, B = (cbrt(m2) − Y) + 0.55, where
// c0, c1 carry the absorbance bias and the B cube root does not (unlike
// SSIMULACRA2's XYB, which is why cpu/ssim2's conversion is not reused).
// vec picks the vector cube root (cbrtMidp) or the scalar one (cbrtFast),
// as zensim does for pixels inside or after its 8-wide loop.
func xyb(r, g, b float32, vec bool) (float32, float32, float32) {
	m0 := max(fma32(kM00, r, fma32(kM01, g, fma32(kM02, b, kB0))), 0)
	m1 := max(fma32(kM10, r, fma32(kM11, g, fma32(kM12, b, kB0))), 0)
	m2 := max(fma32(kM20, r, fma32(kM21, g, fma32(kM22, b, kB0))), 0)
	var t0, t1, t2 float32
	if vec {
		t0, t1, t2 = cbrtMidp(m0), cbrtMidp(m1), cbrtMidp(m2)
	} else {
		t0, t1, t2 = cbrtFast(m0), cbrtFast(m1), cbrtFast(m2)
	}
	c0 := t0 + absorbanceBias
	c1 := t1 + absorbanceBias
	x := float32(float32(0.5) * float32(c0-c1))
	y := float32(float32(0.5) * float32(c0+c1))
	return fma32(x, 14, 0.42), y + 0.01, float32(t2-y) + 0.55
}

// srgbToLinear is linear-srgb's sRGB decode (the crate zensim 0.2.7 uses):
// the IEC 61966-2-1 curve with C0-continuous constants (threshold
// 12.92·0.003041282560127521, offset 0.0550107189475866; imazen/linear-srgb
// src/scalar.rs srgb_to_linear_f64, MIT OR Apache-2.0) in float64. Its
// 8-bit table is this rounded to float32: TestPublishedScores checks that
// (the 8-bit table of linear-srgb 0.5.5, which differs from it in the
// last bit of most entries, moves the published scores by up to 6e-3).
func srgbToLinear(g float64) float64 {
	switch {
	case g < 12.92*0.003041282560127521:
		return g * (1 / 12.92)
	case g < 1:
		return math.Pow((g+0.0550107189475866)/1.0550107189475866, 2.4)
	default:
		return 1
	}
}

// srgb8ToLinear is the 8-bit table: srgbToLinear(v/255) as float32.
var srgb8ToLinear = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(srgbToLinear(float64(i) / 255))
	}
	return t
}()

// srgb16ToLinear is the 16-bit table, built on first use.
var srgb16ToLinear = sync.OnceValue(func() []float32 {
	t := make([]float32, 65536)
	for i := range t {
		t[i] = float32(srgbToLinear(float64(i) / 65535))
	}
	return t
})

// alphaBackground is zensim's deterministic noise background for
// translucent pixels (color.rs ALPHA_BG_TABLE / alpha_background_linear):
// a 4096-entry table of 0.2 + (h & 0xffff)·(0.6/65535) indexed by
// (x XOR y·2654435761) & 0xfff.
var alphaBackground = sync.OnceValue(func() []float32 {
	t := make([]float32, 4096)
	for i := range t {
		h := uint32(i) * 2654435761
		h ^= h >> 16
		h *= 0x45d9f3b
		h ^= h >> 16
		t[i] = 0.2 + float32(float32(h&0xffff)*float32(0.6/65535.0))
	}
	return t
})

// paddedWidth is zensim's plane width for a w-pixel image: w rounded up to
// a multiple of 16, plus 16 more when that is ≥ 512 and an even number of
// 16-column groups (blur.rs simd_padded_width). The extra columns are
// mirror images of the last ones and take part in every statistic.
func paddedWidth(w int) int {
	a := (w + 15) &^ 15
	if a >= 512 && (a/16)%2 == 0 {
		return a + 16
	}
	return a
}

// chunkRows is zensim's XYB conversion chunk: 64 rows, converted as one
// run of pixels by its 8-wide loop (so which pixels take the scalar cube
// root depends on it).
const chunkRows = 64

// toXYB writes rows [y0, y1) of im (y0 a multiple of chunkRows) as positive
// XYB planes of width pw. Opaque 8-bit RGB (and grey, expanded to RGB) is
// converted as zensim's sRGB fast path does: each 64-row chunk as one run.
// Other formats go row by row through linear light, as zensim's RGBA and
// 16-bit paths do, alpha composited over its noise background.
func toXYB(im *zenmetrics.Image, planes [3][]float32, pw, y0, y1 int) {
	w := im.Width
	f := im.Format
	ch := f.Channels()
	deep := f.BytesPerSample() == 2
	alpha := f.HasAlpha()
	gray := f.IsGray()
	bulk := !deep && !alpha
	px, py, pb := planes[0], planes[1], planes[2]
	var lut16, bg []float32
	if deep {
		lut16 = srgb16ToLinear()
	}
	if alpha {
		bg = alphaBackground()
	}
	for c0 := y0; c0 < y1; c0 += chunkRows {
		c1 := min(c0+chunkRows, y1)
		runEnd := ((c1 - c0) * w) &^ 7 // pixels of the chunk in the 8-wide loop
		for y := c0; y < c1; y++ {
			row := im.Row(y)
			o := y * pw
			rowVec := w &^ 7
			for x := 0; x < w; x++ {
				var r, g, b float32
				var vec bool
				if bulk {
					i := x * ch
					if gray {
						r = srgb8ToLinear[row[i]]
						g, b = r, r
					} else {
						r, g, b = srgb8ToLinear[row[i]], srgb8ToLinear[row[i+1]], srgb8ToLinear[row[i+2]]
					}
					vec = (y-c0)*w+x < runEnd
				} else {
					sample := func(c int) (int, float32) {
						i := x*ch + c
						if deep {
							v := int(row[2*i])<<8 | int(row[2*i+1])
							return v, lut16[v]
						}
						return int(row[i]), srgb8ToLinear[row[i]]
					}
					if gray {
						_, r = sample(0)
						g, b = r, r
					} else {
						_, r = sample(0)
						_, g = sample(1)
						_, b = sample(2)
					}
					if alpha {
						a, _ := sample(ch - 1)
						maxA := 255
						if deep {
							maxA = 65535
						}
						if a != maxA {
							bgv := bg[(uint32(x)^uint32(y)*2654435761)&0xfff]
							if a == 0 {
								r, g, b = bgv, bgv, bgv
							} else {
								var al float32
								if deep {
									al = float32(float32(a) * (1.0 / 65535.0))
								} else {
									al = float32(float32(a) * (1.0 / 255.0))
								}
								inv := float32(bgv * (1 - al))
								r, g, b = fma32(r, al, inv), fma32(g, al, inv), fma32(b, al, inv)
							}
						}
					}
					r, g, b = min(max(r, 0), 1), min(max(g, 0), 1), min(max(b, 0), 1)
					vec = x < rowVec
				}
				px[o+x], py[o+x], pb[o+x] = xyb(r, g, b, vec)
			}
			mirrorPad(px[o:o+pw], w)
			mirrorPad(py[o:o+pw], w)
			mirrorPad(pb[o:o+pw], w)
		}
	}
}

// mirrorPad fills row[w:] with the mirror image of row[:w] (reflecting
// about the last pixel without repeating it, period 2(w−1)).
func mirrorPad(row []float32, w int) {
	if len(row) == w {
		return
	}
	period := 2 * (w - 1)
	for i := w; i < len(row); i++ {
		m := 0
		if period > 0 {
			m = i % period
		}
		if m >= w {
			m = period - m
		}
		row[i] = row[m]
	}
}
