package cvvdp

import (
	"fmt"
	"math"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// Colour spaces and transforms of pycvvdp 0.5.4 (gfxdisp/ColorVideoVDP,
// tag v0.5.4, commit ac9cf0f: pycvvdp/display_model.py and
// pycvvdp/vvdp_data/color_spaces.json; MIT licence). Transcribed numbers.

// xyzToLMS2006 is display_model.py's XYZ_to_LMS2006.
var xyzToLMS2006 = [3][3]float64{
	{0.187596268556126, 0.585168649077728, -0.026384263306304},
	{-0.133397430663221, 0.405505777260049, 0.034502127690364},
	{0.000244379021663, -0.000542995890619, 0.019406849066323},
}

// lms2006ToDKLd65 is display_model.py's LMS2006_to_DKLd65.
var lms2006ToDKLd65 = [3][3]float64{
	{1, 1, 0},
	{1, -2.311130179947035, 0},
	{-1, -1, 50.977571328718781},
}

// colourspace is an entry of color_spaces.json that a display model uses:
// its EOTF and its RGB → XYZ matrix (rows RGB2X, RGB2Y, RGB2Z).
type colourspace struct {
	eotf  string
	toXYZ [3][3]float64
}

var (
	rgb709ToXYZ = [3][3]float64{
		{0.4124564, 0.3575761, 0.1804375},
		{0.2126729, 0.7151522, 0.0721750},
		{0.0193339, 0.1191920, 0.9503041},
	}
	rgb2020ToXYZ = [3][3]float64{
		{0.6370, 0.1446, 0.1689},
		{0.2627, 0.6780, 0.0593},
		{0.0000, 0.0281, 1.0610},
	}
	colourspaces = map[string]colourspace{
		"sRGB":          {"sRGB", rgb709ToXYZ},
		"BT.709-linear": {"linear", rgb709ToXYZ},
		"BT.2020-PQ":    {"PQ", rgb2020ToXYZ},
		"BT.2020-HLG":   {"HLG", rgb2020ToXYZ},
	}
)

// mat32 rounds a matrix to float32, as torch.as_tensor does.
func mat32(m [3][3]float64) (r [3][3]float32) {
	for i := range m {
		for j := range m[i] {
			r[i][j] = float32(m[i][j])
		}
	}
	return r
}

// mul32 is a float32 3×3 product, each entry summed left to right.
func mul32(a, b [3][3]float32) (r [3][3]float32) {
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			r[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j] + a[i][2]*b[2][j]
		}
	}
	return r
}

// photometry is a display model's photometric half, resolved for use:
// linear_2_target_colorspace's matrix into DKL (LMS2006_to_DKLd65 @
// XYZ_to_LMS2006 @ rgb2xyz, multiplied in float32 as torch does) and the
// forward EOTF's constants.
type photometry struct {
	eotf    string
	toDKL   [3][3]float32
	peak    float64
	black   float64
	refl    float64
	expo    float64
	hlgGam  float64
	hlgLuma [3]float32
	// lut8 and lut16 are sampleLUT(255) and sampleLUT(65535), built on
	// first use.
	lut8, lut16 func() []float32
}

func newPhotometry(d Display) (*photometry, error) {
	cs, ok := colourspaces[d.Colorspace]
	if !ok {
		return nil, fmt.Errorf("%w: cvvdp: display %q uses unsupported colour space %q", zenmetrics.ErrBadInput, d.Name, d.Colorspace)
	}
	p := &photometry{eotf: cs.eotf, peak: d.PeakLuminance, expo: d.Exposure}
	p.black, p.refl = d.blackLevel()
	p.lut8 = sync.OnceValue(func() []float32 { return p.sampleLUT(255) })
	p.lut16 = sync.OnceValue(func() []float32 { return p.sampleLUT(65535) })
	p.toDKL = mul32(mul32(mat32(lms2006ToDKLd65), mat32(xyzToLMS2006)), mat32(cs.toXYZ))
	if cs.eotf == "HLG" {
		p.hlgGam = 1.2
		if p.peak > 1000 {
			// BBC R&D WHP 369's correction, as display_model.py applies it.
			p.hlgGam = 1.2 + 0.42*math.Log10(p.peak/1000) - 0.07623*math.Log10(d.EAmbient/5)
		}
		p.hlgLuma = [3]float32{0.2627, 0.6780, 0.0593}
	}
	return p, nil
}

// sampleLUT returns, for every code value 0..maxv, the linear light the
// display emits for it (cd/m²) for the per-sample EOTFs (sRGB, PQ,
// linear); for HLG, the inverse OETF rgb_s (the OOTF needs all three
// channels and is applied per pixel). The code value is first divided by
// maxv in float32 (pycvvdp: uint8 / 255, uint16 / 65535).
func (p *photometry) sampleLUT(maxv int) []float32 {
	lut := make([]float32, maxv+1)
	den := float32(maxv)
	black, refl := float32(p.black), float32(p.refl)
	span := float32(p.peak - p.black)
	expo := float32(p.expo)
	for i := range lut {
		v := float32(i) / den
		var l float32
		switch p.eotf {
		case "sRGB":
			lin := srgbToLinear(v)
			if p.expo == 1 {
				l = span*lin + black + refl
			} else {
				l = span*clamp32(lin*expo, 0, 1) + black + refl
			}
		case "PQ":
			l = clamp32(pqToLinear(v)*expo, 0.005, float32(p.peak)) + black + refl
		case "linear":
			l = clamp32(v*expo, float32(max(0.005, p.black)), float32(p.peak)) + refl
		case "HLG":
			l = hlgInverseOETF(v)
		}
		lut[i] = l
	}
	return lut
}

// hlgPixel finishes HLG for one pixel from the inverse OETF values: the
// OOTF (Y_s^(γ−1) · rgb_s) and the display's span, black and reflection.
func (p *photometry) hlgPixel(r, g, b float32) (float32, float32, float32) {
	ys := p.hlgLuma[0]*r + p.hlgLuma[1]*g + p.hlgLuma[2]*b
	k := pow32(ys, float32(p.hlgGam-1))
	span := float32(p.peak - p.black)
	black, refl := float32(p.black), float32(p.refl)
	f := func(c float32) float32 {
		c *= k
		if p.expo != 1 {
			return span*clamp32(c*float32(p.expo), 0, 1) + black + refl
		}
		return span*c + black + refl
	}
	return f(r), f(g), f(b)
}

func clamp32(x, lo, hi float32) float32 { return min(max(x, lo), hi) }

// srgbToLinear is srgb2lin in float32.
func srgbToLinear(v float32) float32 {
	if v > 0.04045 {
		return pow32((v+0.055)/1.055, 2.4)
	}
	return v / 12.92
}

// pqToLinear is pq2lin (SMPTE ST 2084) in float32.
func pqToLinear(v float32) float32 {
	const (
		n  = 0.15930175781250000
		m  = 78.843750000000000
		c1 = 0.83593750000000000
		c2 = 18.851562500000000
		c3 = 18.687500000000000
	)
	t := pow32(v, float32(1.0/m))
	return 10000 * pow32(max(t-c1, 0)/(c2-c3*t), float32(1/n))
}

// hlgInverseOETF is the first half of hlg2lin (BT.2100 table 5) in float32.
func hlgInverseOETF(v float32) float32 {
	a := 0.17883277
	b := 1 - 4*a
	c := 0.5 - a*math.Log(4*a)
	if v <= 0.5 {
		return v * v / 3.0
	}
	return (float32(math.Exp(float64((v-float32(c))/float32(a)))) + float32(b)) / 12.0
}

// pow32 is a float32 power (see fastmath.go).
func pow32(x, y float32) float32 { return powf(x, y) }
