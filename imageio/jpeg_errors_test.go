package imageio

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio/internal/jpegturbo"
)

// stdJPEG encodes a small gradient with image/jpeg (baseline 4:2:0 or
// gray), for seeds and damaged-file tests that need no external tool.
func stdJPEG(t testing.TB, w, h int, gray bool) []byte {
	t.Helper()
	var img image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for i := range g.Pix {
			g.Pix[i] = byte(i * 7)
		}
		img = g
	} else {
		c := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				c.Set(x, y, color.RGBA{byte(x * 9), byte(y * 5), byte(x * y), 255})
			}
		}
		img = c
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestJPEGDamaged: what libjpeg only warns about (premature end, missing
// EOI, bad Huffman codes) is an ErrBadInput error here, never an image;
// features libjpeg-turbo 2.1 refuses (12-bit, lossless, hierarchical) are
// ErrUnsupported.
func TestJPEGDamaged(t *testing.T) {
	good := stdJPEG(t, 67, 45, false)
	if _, err := Decode(good, "good.jpg", Options{}); err != nil {
		t.Fatal(err)
	}
	sos := bytes.Index(good, []byte{0xff, 0xda})
	sof := bytes.Index(good, []byte{0xff, 0xc0})
	if sos < 0 || sof < 0 {
		t.Fatal("no SOS/SOF in image/jpeg output")
	}
	withSOF := func(code, prec byte) []byte {
		b := append([]byte(nil), good...)
		b[sof+1] = code
		b[sof+4] = prec
		return b
	}
	corrupt := append([]byte(nil), good...)
	for i := sos + 20; i < len(corrupt)-2; i += 3 {
		corrupt[i] = 0xfe // leaves no stuffed 0xFF 0x00 pairs intact, breaks codes
	}
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"truncated in the scan", good[:sos+(len(good)-sos)/2], zenmetrics.ErrBadInput},
		{"no EOI", good[:len(good)-2], zenmetrics.ErrBadInput},
		{"truncated header", good[:sof+5], zenmetrics.ErrBadInput},
		{"corrupt entropy data", corrupt, zenmetrics.ErrBadInput},
		{"12-bit", withSOF(0xc1, 12), zenmetrics.ErrUnsupported},
		{"lossless SOF3", withSOF(0xc3, 8), zenmetrics.ErrUnsupported},
		{"hierarchical SOF5", withSOF(0xc5, 8), zenmetrics.ErrUnsupported},
		{"arithmetic lossless SOF11", withSOF(0xcb, 8), zenmetrics.ErrUnsupported},
	} {
		im, err := Decode(c.data, c.name, Options{})
		mustTyped(t, err, c.name)
		if im != nil || !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.name, im, err, c.want)
		}
	}
}

// TestJPEGPixelLimit: the frame header is checked before anything is
// allocated.
func TestJPEGPixelLimit(t *testing.T) {
	data := stdJPEG(t, 67, 45, true)
	_, err := Decode(data, "big.jpg", Options{MaxPixels: 67*45 - 1})
	if !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("over the pixel limit: %v", err)
	}
	if _, err := Decode(data, "ok.jpg", Options{MaxPixels: 67 * 45}); err != nil {
		t.Fatal(err)
	}
}

// FuzzJPEGDecode feeds arbitrary bytes to the decoder itself (no recover
// in between, so a panic fails the fuzzer) under a small pixel limit: every
// result is either a consistent image or an error wrapping ErrBadInput or
// ErrUnsupported.
func FuzzJPEGDecode(f *testing.F) {
	f.Add(stdJPEG(f, 17, 9, false))
	f.Add(stdJPEG(f, 8, 8, true))
	for _, n := range []string{"jpeg420_67x45.jpg", "jpegprog_64x48.jpg", "jpeggray_67x45.jpg"} {
		f.Add(testdataFile(f, n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := jpegturbo.Decode(data, jpegturbo.Limits{MaxPixels: 1 << 16})
		if err != nil {
			if im != nil {
				t.Fatal("image with an error")
			}
			if !errors.Is(err, zenmetrics.ErrBadInput) && !errors.Is(err, zenmetrics.ErrUnsupported) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if int64(im.Width)*int64(im.Height) > 1<<16 {
			t.Fatalf("%dx%d decoded over the limit", im.Width, im.Height)
		}
		if len(im.Pix) != im.Width*im.Height*im.ColorSpace.Channels() {
			t.Fatalf("%d samples for %dx%d %v", len(im.Pix), im.Width, im.Height, im.ColorSpace)
		}
		cfg, err := jpegturbo.DecodeConfig(data)
		if err != nil || cfg != im.Config {
			t.Fatalf("DecodeConfig %+v, %v disagrees with Decode %+v", cfg, err, im.Config)
		}
		if cfg, err := jpegturbo.ConfigAt(bytes.NewReader(data), int64(len(data))); err != nil || cfg != im.Config {
			t.Fatalf("ConfigAt %+v, %v disagrees with Decode %+v", cfg, err, im.Config)
		}
	})
}
