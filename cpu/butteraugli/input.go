package butteraugli

import (
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// srgbToLinear is libjxl's sRGB decoding curve (TF_SRGB::DisplayFromEncoded):
// linear below 0.04045, above it a (4,4) rational approximation of the
// power law, evaluated in float32. butteraugli_main converts its inputs with
// it (the colour transform to linear sRGB skips the CMS and applies only
// this curve), so the same approximation is used here.
func srgbToLinear(x float32) float32 {
	if x <= 0.04045 {
		return x * (1 / float32(12.92))
	}
	const (
		p0, p1, p2, p3, p4 = float32(2.200248328e-04), float32(1.043637593e-02), float32(1.624820318e-01), float32(7.961564959e-01), float32(8.210152774e-01)
		q0, q1, q2, q3, q4 = float32(2.631846970e-01), float32(1.076976492e+00), float32(4.987528350e-01), float32(-5.512498495e-02), float32(6.521209011e-03)
	)
	// Horner steps as fused multiply-adds, as the vectorised reference
	// evaluates them (this only fills lookup tables, so speed is moot).
	yp := fma32(fma32(fma32(fma32(p4, x, p3), x, p2), x, p1), x, p0)
	yq := fma32(fma32(fma32(fma32(q4, x, q3), x, q2), x, q1), x, q0)
	return yp / yq
}

func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// Lookup tables from integer samples to linear values, and to the [0,1]
// float the sample decodes to.
var (
	lut8Once, lut16Once sync.Once
	lut8, lut16         []float32
)

func linearLUT(bits int) []float32 {
	build := func(n int) []float32 {
		t := make([]float32, n)
		scale := 1 / float32(n-1)
		for i := range t {
			t[i] = srgbToLinear(float32(i) * scale)
		}
		return t
	}
	if bits == 8 {
		lut8Once.Do(func() { lut8 = build(256) })
		return lut8
	}
	lut16Once.Do(func() { lut16 = build(65536) })
	return lut16
}

// linearImage is a decoded input: linear sRGB planes (gray replicated into
// all three) and, when the format has one, the alpha plane in [0, 1].
type linearImage struct {
	rgb   image3
	alpha *plane
}

func toLinear(wk workers, im *zenmetrics.Image, sc *scratch) linearImage {
	w, h := im.Width, im.Height
	var li linearImage
	if im.Format == zenmetrics.RGB8 {
		// Every sample is written below: no need to clear reused planes.
		li.rgb = sc.outImage3(w, h)
	} else {
		li.rgb = sc.newImage3(w, h)
	}
	if im.Format.HasAlpha() {
		a := sc.newPlane(w, h)
		li.alpha = &a
	}
	wk.rows(h, func(y0, y1 int) { linearRows(im, li.rgb, li.alpha, y0, y1) })
	return li
}

// linearRows decodes rows [y0, y1) of im into the same rows of rgb (gray
// into all three) and, when im has alpha, of alpha.
func linearRows(im *zenmetrics.Image, rgb image3, alpha *plane, y0, y1 int) {
	w := im.Width
	f := im.Format
	nc := f.Channels()
	bps := f.BytesPerSample()
	lut := linearLUT(8 * bps)
	if f == zenmetrics.RGB8 {
		// The common case, without the per-sample format switches.
		lut := (*[256]float32)(lut)
		for y := y0; y < y1; y++ {
			src := im.Row(y)[:3*w]
			r, g, b := rgb[0].row(y), rgb[1].row(y), rgb[2].row(y)
			for x := range r {
				px := src[3*x : 3*x+3 : 3*x+3]
				r[x], g[x], b[x] = lut[px[0]], lut[px[1]], lut[px[2]]
			}
		}
		return
	}
	colour := 3
	if f.IsGray() {
		colour = 1
	}
	alphaScale := 1 / float32(f.MaxValue())
	for y := y0; y < y1; y++ {
		src := im.Row(y)
		var dst [3][]float32
		for c := range dst {
			dst[c] = rgb[c].row(y)
		}
		var arow []float32
		if alpha != nil {
			arow = alpha.row(y)
		}
		for x := 0; x < w; x++ {
			o := x * nc * bps
			for c := 0; c < nc; c++ {
				var v int
				if bps == 2 {
					v = int(src[o+2*c])<<8 | int(src[o+2*c+1])
				} else {
					v = int(src[o+c])
				}
				switch {
				case c < colour:
					dst[c][x] = lut[v]
				default:
					arow[x] = float32(v) * alphaScale
				}
			}
			if colour == 1 {
				dst[1][x] = dst[0][x]
				dst[2][x] = dst[0][x]
			}
		}
	}
}

// linearToSrgbExact and srgbToLinearExact are the exact sRGB curves in
// double, which libjxl uses when it blends an image with alpha onto a
// background.
func linearToSrgbExact(v float64) float64 {
	switch {
	case v <= 0:
		return 0
	case v >= 1:
		return 1
	case v <= 0.0031308:
		return v * 12.92
	}
	return float64(math.Pow(v, 1/2.4)*1.055) - 0.055 // rounded: arm64 would fuse it
}

func srgbToLinearExact(v float64) float64 {
	switch {
	case v <= 0:
		return 0
	case v <= 0.04045:
		return v / 12.92
	case v >= 1:
		return 1
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// blendOnto returns li composited onto a grey background of the given linear
// value, as butteraugli_main does for images with alpha: the mix is taken on
// sRGB-encoded values with the straight alpha, then decoded again. Images
// without alpha are returned as they are.
func blendOnto(wk workers, li linearImage, bgLinear float32, sc *scratch) image3 {
	if li.alpha == nil {
		return li.rgb
	}
	w, h := li.rgb[0].w, li.rgb[0].h
	bg := float32(linearToSrgbExact(float64(bgLinear)))
	out := sc.newImage3(w, h)
	for c := 0; c < 3; c++ {
		in, dst := li.rgb[c], out[c]
		wk.rows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				a, s, o := li.alpha.row(y), in.row(y), dst.row(y)
				for x := range o {
					switch av := a[x]; {
					case av <= 0:
						o[x] = bgLinear
					case av >= 1:
						o[x] = s[x]
					default:
						fg := float32(float64(av) * linearToSrgbExact(float64(s[x])))
						b := float32((1 - av) * bg) // rounded: arm64 would fuse it into fg + b
						o[x] = float32(srgbToLinearExact(float64(fg + b)))
					}
				}
			}
		})
	}
	return out
}
