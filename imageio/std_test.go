package imageio

import (
	"image"
	"image/color"
	"math/rand/v2"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

func TestToStdImageEveryFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for f := zenmetrics.Gray8; f <= zenmetrics.RGBA16; f++ {
		im := &zenmetrics.Image{Width: 5, Height: 4, Format: f, Stride: 5*f.BytesPerPixel() + 3}
		im.Pix = make([]byte, im.Stride*4)
		for i := range im.Pix {
			im.Pix[i] = byte(r.IntN(256))
		}
		std := ToStdImage(im)
		for y := 0; y < 4; y++ {
			for x := 0; x < 5; x++ {
				if got, want := stdStraight(t, std, x, y), sampleRGBA16(im, x, y); got != want {
					t.Fatalf("%v (%d,%d): std %v, want %v", f, x, y, got, want)
				}
			}
		}
		// Back again: the values survive (the layout becomes the std type's).
		back, err := FromStdImage(std)
		if err != nil {
			t.Fatal(err)
		}
		for y := 0; y < 4; y++ {
			for x := 0; x < 5; x++ {
				if got, want := sampleRGBA16(back, x, y), sampleRGBA16(im, x, y); got != want {
					t.Fatalf("%v (%d,%d): round trip %v, want %v", f, x, y, got, want)
				}
			}
		}
	}
	if ToStdImage(&zenmetrics.Image{}) != nil {
		t.Fatal("ToStdImage of an invalid image is not nil")
	}
}

func TestFromStdImage(t *testing.T) {
	// Straight alpha survives exactly, including colour under alpha 0.
	n := image.NewNRGBA(image.Rect(2, 3, 4, 4)) // non-zero origin
	n.SetNRGBA(2, 3, color.NRGBA{200, 100, 50, 0})
	n.SetNRGBA(3, 3, color.NRGBA{1, 2, 3, 4})
	im, err := FromStdImage(n)
	if err != nil || im.Format != zenmetrics.RGBA8 || im.Width != 2 || im.Height != 1 {
		t.Fatalf("NRGBA: %v %v", im, err)
	}
	if got := []byte(im.Row(0)); string(got) != string([]byte{200, 100, 50, 0, 1, 2, 3, 4}) {
		t.Fatalf("NRGBA samples %v", got)
	}
	// The result does not share memory with the source.
	im.Pix[0] = 7
	if n.Pix[0] != 200 {
		t.Fatal("FromStdImage shares the source's pixels")
	}
	// Premultiplied opaque pixels are exact.
	p := image.NewRGBA(image.Rect(0, 0, 1, 1))
	p.SetRGBA(0, 0, color.RGBA{9, 8, 7, 255})
	im, err = FromStdImage(p)
	if err != nil || string(im.Pix) != string([]byte{9, 8, 7, 255}) {
		t.Fatalf("RGBA: %v %v", im, err)
	}
	g := image.NewGray16(image.Rect(0, 0, 1, 1))
	g.SetGray16(0, 0, color.Gray16{0x1234})
	im, err = FromStdImage(g)
	if err != nil || im.Format != zenmetrics.Gray16 || im.Sample(0, 0, 0) != 0x1234 {
		t.Fatalf("Gray16: %v %v", im, err)
	}
	if _, err := FromStdImage(nil); err == nil {
		t.Fatal("FromStdImage(nil) succeeded")
	}
	if _, err := FromStdImage(image.NewGray(image.Rect(0, 0, 0, 3))); err == nil {
		t.Fatal("FromStdImage of an empty image succeeded")
	}
}
