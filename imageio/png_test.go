package imageio

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// pngCases builds one raw PNG per colour type × bit depth × tRNS, some
// interlaced, at odd sizes so partial bytes and short Adam7 passes occur.
func pngCases() []rawPNG {
	r := rand.New(rand.NewPCG(1, 2))
	var cases []rawPNG
	add := func(ctype, depth byte, trns, interlace bool, w, h int) {
		p := rawPNG{w: w, h: h, ctype: ctype, depth: depth, interlace: interlace}
		ch := pngChannels(ctype)
		maxv := uint16(1<<depth - 1)
		if ctype == pngPalette {
			n := min(1<<depth, 200) // fewer entries than indices for 8-bit
			p.plte = make([]byte, 3*n)
			for i := range p.plte {
				p.plte[i] = byte(r.IntN(256))
			}
			if trns {
				p.trns = make([]byte, max(1, n-1)) // shorter than PLTE: the last entry stays opaque
				for i := range p.trns {
					p.trns[i] = byte(r.IntN(256))
				}
			}
			p.samples = randSamples(r, w, h, 1, maxv)
			if depth == 8 {
				p.samples[0][0][0] = 250 // past PLTE: opaque black
			}
		} else {
			p.samples = randSamples(r, w, h, ch, maxv)
			if trns {
				p.trns = make([]byte, 2*ch)
				for c := 0; c < ch; c++ {
					binary.BigEndian.PutUint16(p.trns[2*c:], p.samples[1][1][c])
				}
			}
		}
		cases = append(cases, p)
	}
	for _, trns := range []bool{false, true} {
		for _, d := range []byte{1, 2, 4, 8, 16} {
			add(pngGray, d, trns, false, 13, 7)
		}
		for _, d := range []byte{1, 2, 4, 8} {
			add(pngPalette, d, trns, false, 11, 5)
		}
		add(pngRGB, 8, trns, false, 9, 6)
		add(pngRGB, 16, trns, false, 9, 6)
	}
	add(pngGrayAlpha, 8, false, false, 10, 3)
	add(pngGrayAlpha, 16, false, false, 10, 3)
	add(pngRGBA, 8, false, false, 7, 7)
	add(pngRGBA, 16, false, false, 7, 7)
	// Interlaced, including images smaller than an Adam7 block.
	add(pngGray, 2, true, true, 19, 11)
	add(pngPalette, 4, true, true, 17, 9)
	add(pngRGBA, 16, false, true, 10, 10)
	add(pngGrayAlpha, 8, false, true, 3, 2)
	add(pngRGB, 8, false, true, 1, 1)
	// Ancillary chunks before the image data are skipped.
	p := rawPNG{w: 4, h: 4, ctype: pngGray, depth: 8, samples: randSamples(r, 4, 4, 1, 255),
		chunksAfterIHDR: [][2]string{{"gAMA", "\x00\x00\xb1\x8f"}, {"tEXt", "Comment\x00tRNS not here"}}}
	cases = append(cases, p)
	return cases
}

func TestPNGEveryMode(t *testing.T) {
	for _, p := range pngCases() {
		t.Run(describe(p), func(t *testing.T) {
			data := p.encode()
			want := p.expected(t)
			got, err := Decode(data, "case.png", Options{})
			if err != nil {
				t.Fatal(err)
			}
			sameImage(t, "Decode", got, want)
			w, h, f, format, err := DecodeConfig(data, "case.png")
			if err != nil || w != p.w || h != p.h || f != want.Format || format != FormatPNG {
				t.Fatalf("DecodeConfig = %d %d %v %q %v, want %d %d %v png", w, h, f, format, err, p.w, p.h, want.Format)
			}
			// The image Go's own decoder sees must agree (independent check of
			// the test writer): compare through straight NRGBA64 values.
			std, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for y := 0; y < p.h; y++ {
				for x := 0; x < p.w; x++ {
					c := stdStraight(t, std, x, y)
					if g := sampleRGBA16(got, x, y); c != g {
						t.Fatalf("(%d,%d): image/png says %v, Decode gave %v", x, y, c, g)
					}
				}
			}
		})
	}
}

// sampleRGBA16 reads any format as 16-bit straight R, G, B, A.
func sampleRGBA16(im *zenmetrics.Image, x, y int) [4]uint16 {
	f := im.Format
	up := func(v int) uint16 {
		if f.BytesPerSample() == 1 {
			return uint16(v) * 0x101
		}
		return uint16(v)
	}
	var out [4]uint16
	switch f.Channels() {
	case 1, 2:
		g := up(im.Sample(x, y, 0))
		out = [4]uint16{g, g, g, 0xffff}
	default:
		out = [4]uint16{up(im.Sample(x, y, 0)), up(im.Sample(x, y, 1)), up(im.Sample(x, y, 2)), 0xffff}
	}
	if f.HasAlpha() {
		out[3] = up(im.Sample(x, y, f.Channels()-1))
	}
	return out
}

// stdStraight reads pixel (x, y) of an image/png result as straight 16-bit
// R, G, B, A without going through premultiplied colour models.
func stdStraight(t *testing.T, img image.Image, x, y int) [4]uint16 {
	t.Helper()
	up := func(v uint8) uint16 { return uint16(v) * 0x101 }
	from8 := func(c color.NRGBA) [4]uint16 { return [4]uint16{up(c.R), up(c.G), up(c.B), up(c.A)} }
	switch m := img.(type) {
	case *image.Gray:
		g := up(m.GrayAt(x, y).Y)
		return [4]uint16{g, g, g, 0xffff}
	case *image.Gray16:
		g := m.Gray16At(x, y).Y
		return [4]uint16{g, g, g, 0xffff}
	case *image.NRGBA:
		return from8(m.NRGBAAt(x, y))
	case *image.NRGBA64:
		c := m.NRGBA64At(x, y)
		return [4]uint16{c.R, c.G, c.B, c.A}
	case *image.RGBA:
		c := m.RGBAAt(x, y)
		if c.A != 0xff {
			t.Fatalf("image/png returned a translucent premultiplied pixel")
		}
		return from8(color.NRGBA(c))
	case *image.RGBA64:
		c := m.RGBA64At(x, y)
		if c.A != 0xffff {
			t.Fatalf("image/png returned a translucent premultiplied pixel")
		}
		return [4]uint16{c.R, c.G, c.B, c.A}
	case *image.Paletted:
		switch c := m.Palette[m.ColorIndexAt(x, y)].(type) {
		case color.NRGBA:
			return from8(c)
		case color.RGBA:
			return from8(color.NRGBA(c))
		}
	}
	t.Fatalf("unexpected image/png result %T", img)
	return [4]uint16{}
}

// TestPNGFromStdlibEncoder decodes files written by image/png and checks
// the samples against the source image's Pix bytes.
func TestPNGFromStdlibEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rect := image.Rect(0, 0, 23, 17)
	fill := func(p []byte) {
		for i := range p {
			p[i] = byte(r.IntN(256))
		}
	}
	gray := image.NewGray(rect)
	fill(gray.Pix)
	gray16 := image.NewGray16(rect)
	fill(gray16.Pix)
	nrgba := image.NewNRGBA(rect)
	fill(nrgba.Pix)
	nrgba64 := image.NewNRGBA64(rect)
	fill(nrgba64.Pix)
	opaque := image.NewNRGBA(rect)
	fill(opaque.Pix)
	for i := 3; i < len(opaque.Pix); i += 4 {
		opaque.Pix[i] = 0xff
	}
	pal := color.Palette{color.NRGBA{1, 2, 3, 0}, color.NRGBA{200, 100, 50, 128}, color.NRGBA{9, 8, 7, 255}}
	paletted := image.NewPaletted(rect, pal)
	for i := range paletted.Pix {
		paletted.Pix[i] = byte(r.IntN(len(pal)))
	}
	cases := []struct {
		name string
		img  image.Image
		want zenmetrics.PixelFormat
		// sample returns the expected channel values of pixel (x, y).
		sample func(x, y int) []int
	}{
		{"gray", gray, zenmetrics.Gray8, func(x, y int) []int { return []int{int(gray.GrayAt(x, y).Y)} }},
		{"gray16", gray16, zenmetrics.Gray16, func(x, y int) []int { return []int{int(gray16.Gray16At(x, y).Y)} }},
		{"nrgba", nrgba, zenmetrics.RGBA8, func(x, y int) []int {
			c := nrgba.NRGBAAt(x, y)
			return []int{int(c.R), int(c.G), int(c.B), int(c.A)}
		}},
		{"nrgba64", nrgba64, zenmetrics.RGBA16, func(x, y int) []int {
			c := nrgba64.NRGBA64At(x, y)
			return []int{int(c.R), int(c.G), int(c.B), int(c.A)}
		}},
		{"opaque-nrgba-written-as-rgb", opaque, zenmetrics.RGB8, func(x, y int) []int {
			c := opaque.NRGBAAt(x, y)
			return []int{int(c.R), int(c.G), int(c.B)}
		}},
		{"paletted-with-alpha", paletted, zenmetrics.RGBA8, func(x, y int) []int {
			c := pal[paletted.ColorIndexAt(x, y)].(color.NRGBA)
			return []int{int(c.R), int(c.G), int(c.B), int(c.A)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := png.Encode(&buf, c.img); err != nil {
				t.Fatal(err)
			}
			got, err := Decode(buf.Bytes(), c.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Format != c.want || got.Width != 23 || got.Height != 17 {
				t.Fatalf("got %dx%d %v, want 23x17 %v", got.Width, got.Height, got.Format, c.want)
			}
			for y := 0; y < 17; y++ {
				for x := 0; x < 23; x++ {
					for ch, v := range c.sample(x, y) {
						if g := got.Sample(x, y, ch); g != v {
							t.Fatalf("(%d,%d) ch %d = %d, want %d", x, y, ch, g, v)
						}
					}
				}
			}
		})
	}
}

// TestEncodePNGRoundTrip writes every format (with a padded stride) and
// reads it back with Decode and, independently, with image/png.
func TestEncodePNGRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for f := zenmetrics.Gray8; f <= zenmetrics.RGBA16; f++ {
		t.Run(f.String(), func(t *testing.T) {
			w, h := 31, 9
			im := &zenmetrics.Image{Width: w, Height: h, Format: f, Stride: w*f.BytesPerPixel() + 5}
			im.Pix = make([]byte, im.Stride*h)
			for i := range im.Pix {
				im.Pix[i] = byte(r.IntN(256))
			}
			// A smooth area too, so every filter type gets chosen somewhere.
			for x := 0; x < w*f.BytesPerPixel(); x++ {
				im.Pix[3*im.Stride+x] = byte(x)
			}
			var buf bytes.Buffer
			if err := EncodePNG(&buf, im); err != nil {
				t.Fatal(err)
			}
			got, err := Decode(buf.Bytes(), "rt.png", Options{})
			if err != nil {
				t.Fatal(err)
			}
			sameImage(t, "round trip", got, im)
			std, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					c := stdStraight(t, std, x, y)
					if want := sampleRGBA16(im, x, y); c != want {
						t.Fatalf("(%d,%d): image/png reads %v, wrote %v", x, y, c, want)
					}
				}
			}
		})
	}
	if err := EncodePNG(&bytes.Buffer{}, &zenmetrics.Image{}); err == nil {
		t.Fatal("EncodePNG accepted an invalid image")
	}
}

func TestPNGHeaderErrors(t *testing.T) {
	base := rawPNG{w: 2, h: 2, ctype: pngRGB, depth: 8, samples: randSamples(rand.New(rand.NewPCG(1, 1)), 2, 2, 3, 255)}
	cases := map[string]func() []byte{
		"bad depth for RGB": func() []byte { p := base; p.depth = 4; return p.encode() },
		"bad colour type": func() []byte {
			p := base
			p.ctype = 5
			p.samples = randSamples(rand.New(rand.NewPCG(1, 1)), 2, 2, 4, 255)
			return p.encode()
		},
		"zero width": func() []byte { p := base; p.w = 0; p.samples = nil; return p.encode() },
		"tRNS with alpha": func() []byte {
			p := base
			p.ctype = pngRGBA
			p.samples = randSamples(rand.New(rand.NewPCG(1, 1)), 2, 2, 4, 255)
			p.trns = make([]byte, 6)
			return p.encode()
		},
		"first chunk not IHDR": func() []byte {
			b := base.encode()
			copy(b[12:16], "IHDX")
			return b
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(mk(), "bad.png", Options{})
			if err == nil {
				t.Fatal("decoded an invalid header")
			}
			mustTyped(t, err, "bad.png")
			if _, _, _, _, err := DecodeConfig(mk(), "bad.png"); err == nil {
				t.Fatal("DecodeConfig accepted an invalid header")
			}
		})
	}
}
