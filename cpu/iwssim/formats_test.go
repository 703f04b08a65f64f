package iwssim

import (
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// convert re-encodes an RGB8 image in format f with the same colours:
// 16-bit samples are v·257 (so v/65535·255 = v/255·255 in exact
// arithmetic), grey formats get a grey image's single channel, alpha
// channels get a pattern that must be ignored, and the stride is padded
// with bytes that must not be read.
func convert(src *zenmetrics.Image, f zenmetrics.PixelFormat, pad int) *zenmetrics.Image {
	w, h := src.Width, src.Height
	bps, ch := f.BytesPerSample(), f.Channels()
	stride := w*ch*bps + pad
	im := &zenmetrics.Image{Width: w, Height: h, Format: f, Stride: stride, Pix: make([]byte, stride*h)}
	for i := range im.Pix {
		im.Pix[i] = 0xA5
	}
	put := func(o, v int) {
		if bps == 2 {
			v *= 257
			im.Pix[o], im.Pix[o+1] = byte(v>>8), byte(v)
		} else {
			im.Pix[o] = byte(v)
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*stride + x*ch*bps
			if f.IsGray() {
				put(o, src.Sample(x, y, 1))
			} else {
				for c := 0; c < 3; c++ {
					put(o+c*bps, src.Sample(x, y, c))
				}
			}
			if f.HasAlpha() {
				put(o+(ch-1)*bps, (x*7+y*3)%256)
			}
		}
	}
	return im
}

// grey makes an RGB8 image whose three channels are all the green channel
// of src, the image a grey format holds after convert.
func grey(src *zenmetrics.Image) *zenmetrics.Image {
	im := zenmetrics.NewImage(src.Width, src.Height, zenmetrics.RGB8)
	for y := 0; y < src.Height; y++ {
		for x := 0; x < src.Width; x++ {
			g := byte(src.Sample(x, y, 1))
			o := y*im.Stride + 3*x
			im.Pix[o], im.Pix[o+1], im.Pix[o+2] = g, g, g
		}
	}
	return im
}

// TestFormats: every pixel format reads the samples it should. Against the
// RGB8 score of the same colours: alpha and stride padding change nothing
// (identical bits); 16-bit samples v·257 and grey channels g (against R =
// G = B = g, where 0.299g + 0.587g + 0.114g = g up to rounding) agree within
// 1e-12, which allows the last-bit differences of the rescaled samples
// and of the luma sum (measured: identical bits for every format).
func TestFormats(t *testing.T) {
	ref8, dist8 := metrictest.SyntheticPair(203, 171, 21)
	score := func(r, d *zenmetrics.Image) float64 {
		v, err := Score(r, d, Config{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	rgb := score(ref8, dist8)
	gry := score(grey(ref8), grey(dist8))
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.RGB16, zenmetrics.RGBA16,
		zenmetrics.Gray8, zenmetrics.GrayA8, zenmetrics.Gray16, zenmetrics.GrayA16} {
		want := rgb
		if f.IsGray() {
			want = gry
		}
		got := score(convert(ref8, f, 5), convert(dist8, f, 3))
		d := math.Abs(got - want)
		t.Logf("%v: %.17g (|Δ| %.3g)", f, got, d)
		exact := f.BytesPerSample() == 1 && !f.IsGray()
		if exact && got != want || !(d <= 1e-12) {
			t.Errorf("%v: %.17g, want %.17g (|Δ| %.3g)", f, got, want, d)
		}
	}
	// A mixed pair: RGBA reference, RGB distorted image.
	if got := score(convert(ref8, zenmetrics.RGBA8, 0), dist8); got != rgb {
		t.Errorf("RGBA8 reference, RGB8 distorted: %.17g, want %.17g", got, rgb)
	}
}
