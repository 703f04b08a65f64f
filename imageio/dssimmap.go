package imageio

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics"
)

// DSSIMMapImage colours a DSSIM SSIM map (scale 0's per-pixel SSIM, as the
// DSSIM backends return it in Score.DistMap: 1 where the images agree) the
// way kornelski/dssim 3.4.0's `dssim -o FILE` writes FILE-0.png (src/main.rs
// write_ssim_maps; AGPL-3.0, the formula only): with d = 1 − ssim and a the
// map's pooled SSIM, a = 1 − mean(|mean(ssim) − ssim|),
//
//	R = byte(d² × 16), G = byte(d × 3), B = byte(d / ((1 − a) × 4)), A = 255
//
// in float32, where byte(v) is 0 for v ≤ 0 (and NaN), 255 for v ≥ 255/256,
// else v × 256 truncated. So red shows large differences, green moderate
// ones, and blue differences relative to the image's average. The result is
// a tightly packed RGBA8 image of the plane's size (as the tool writes it);
// nil when p is nil or inconsistent.
func DSSIMMapImage(p *zenmetrics.FloatPlane) *zenmetrics.Image {
	if checkPlane(p) != nil {
		return nil
	}
	n := p.Width * p.Height
	pix := p.Pix[:n]
	// The pooled SSIM of the map, as dssim-core computes a scale's score
	// (float64 sums in pixel order; scale 0's mean is not raised to a power).
	sum := 0.0
	for _, v := range pix {
		sum += float64(v)
	}
	avg := math.Max(sum/float64(n), 0)
	dev := 0.0
	for _, v := range pix {
		dev += math.Abs(avg - float64(v))
	}
	pooled := float32(1 - dev/float64(n))
	blueDiv := (1 - pooled) * 4
	im := zenmetrics.NewImage(p.Width, p.Height, zenmetrics.RGBA8)
	for y := 0; y < p.Height; y++ {
		src := pix[y*p.Width : (y+1)*p.Width]
		dst := im.Row(y)
		for x, s := range src {
			d := 1 - s
			dst[4*x] = dssimByte(float32(d*d) * 16)
			dst[4*x+1] = dssimByte(d * 3)
			dst[4*x+2] = dssimByte(d / blueDiv)
			dst[4*x+3] = 255
		}
	}
	return im
}

// dssimByte is the dssim tool's float → byte mapping (to_byte).
func dssimByte(v float32) byte {
	switch {
	case !(v > 0):
		return 0
	case v >= 255.0/256.0:
		return 255
	}
	return byte(v * 256)
}
