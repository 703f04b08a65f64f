package imageio

import (
	"bytes"
	"errors"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

func decodeTestdata(t *testing.T, name string) *zenmetrics.Image {
	t.Helper()
	im, err := DecodeFile(testdataPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func testdataPath(t *testing.T, name string) string {
	t.Helper()
	for _, p := range testdataPaths(t) {
		if bytes.HasSuffix([]byte(p), []byte("/"+name)) {
			return p
		}
	}
	t.Fatalf("testdata/imageio/%s missing", name)
	return ""
}

func TestWebPLosslessExact(t *testing.T) {
	for _, c := range []struct{ webp, src string }{
		{"lossless_67x45.webp", "src_rgb_67x45.png"},
		{"lossless_alpha_67x45.webp", "src_rgba_67x45.png"},
	} {
		got := decodeTestdata(t, c.webp)
		want := decodeTestdata(t, c.src)
		sameImage(t, c.webp, got, want)
	}
}

// TestWebPLossyMatchesDwebp checks the libwebp-exact colour conversion and
// fancy upsampling against dwebp's own PNG output, for odd and even sizes
// and with an alpha channel.
func TestWebPLossyMatchesDwebp(t *testing.T) {
	for _, n := range []string{"lossy_67x45", "lossy_64x48", "lossy_alpha_67x45"} {
		t.Run(n, func(t *testing.T) {
			got := decodeTestdata(t, n+".webp")
			want := decodeTestdata(t, n+".dwebp.png")
			sameImage(t, n, got, want)
		})
	}
}

func TestWebPHeader(t *testing.T) {
	for name, want := range map[string]zenmetrics.PixelFormat{
		"lossy_67x45.webp":          zenmetrics.RGB8,
		"lossy_alpha_67x45.webp":    zenmetrics.RGBA8,
		"lossless_67x45.webp":       zenmetrics.RGB8,
		"lossless_alpha_67x45.webp": zenmetrics.RGBA8,
	} {
		data := testdataFile(t, name)
		w, h, f, format, err := DecodeConfig(data, name)
		if err != nil || w != 67 || h != 45 || f != want || format != FormatWebP {
			t.Errorf("%s: DecodeConfig = %d %d %v %q %v, want 67 45 %v webp", name, w, h, f, format, err, want)
		}
	}
	// An animated file (VP8X with the animation flag) is refused clearly.
	anim := append([]byte("RIFF\x1e\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00"), 0x02, 0, 0, 0, 9, 0, 0, 9, 0, 0)
	_, err := Decode(anim, "anim.webp", Options{})
	mustTyped(t, err, "anim.webp")
	if !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("animated WebP: %v, want ErrUnsupported", err)
	}
}

// TestJPEGMatchesDjpeg checks the layouts and that Decode gives exactly
// the samples libjpeg-turbo's djpeg wrote for the committed test files
// (tolerance 0: the decoder is meant to be bit-exact).
func TestJPEGMatchesDjpeg(t *testing.T) {
	for _, c := range []struct {
		name string
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{"jpeg420_67x45", 67, 45, zenmetrics.RGB8},
		{"jpegprog_64x48", 64, 48, zenmetrics.RGB8},
		{"jpeggray_67x45", 67, 45, zenmetrics.Gray8},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := testdataFile(t, c.name+".jpg")
			got, err := Decode(data, c.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != c.w || got.Height != c.h || got.Format != c.f {
				t.Fatalf("got %dx%d %v, want %dx%d %v", got.Width, got.Height, got.Format, c.w, c.h, c.f)
			}
			sameImage(t, c.name, got, decodeTestdata(t, c.name+".djpeg.png"))
		})
	}
}

func TestJPEGCMYKRefused(t *testing.T) {
	// SOI, SOF0 declaring 4 components (8-bit, 16x16), the start of an SOS
	// segment, EOI: enough for the header reader (which reads up to SOS to
	// see any Adobe marker), and it must refuse before decoding.
	sof := []byte{0xff, 0xc0, 0, 20, 8, 0, 16, 0, 16, 4,
		1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0, 4, 0x11, 0}
	data := append(append([]byte{0xff, 0xd8}, sof...), 0xff, 0xda, 0, 14, 0xff, 0xd9)
	_, err := Decode(data, "cmyk.jpg", Options{})
	mustTyped(t, err, "cmyk.jpg")
	if !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("CMYK JPEG: %v, want ErrUnsupported", err)
	}
	if _, _, _, _, err := DecodeConfig(data, "cmyk.jpg"); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("DecodeConfig of CMYK JPEG: %v, want ErrUnsupported", err)
	}
}
