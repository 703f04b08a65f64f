package imageio

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// bothPNG decodes data with decodePNG and with the image/png path it
// replaced. Neither is wrapped in Decode's recover, so a panic fails the
// test. Files over maxPixels are skipped (ok false), like those whose
// header Decode refuses.
func bothPNG(t testing.TB, data []byte, maxPixels int64) (fast, std *zenmetrics.Image, errFast, errStd error, ok bool) {
	t.Helper()
	hd, err := readHeader(data)
	if err != nil {
		return nil, nil, nil, nil, false
	}
	if hd.format != FormatPNG || checkPixels(FormatPNG, hd.w, hd.h, Options{MaxPixels: maxPixels}) != nil || checkPNGData(hd.png) != nil {
		return nil, nil, nil, nil, false
	}
	fast, errFast = decodePNG(data, hd)
	if errFast == nil {
		errFast = checkDecoded(fast, hd)
	}
	std, errStd = decodePNGStd(data, hd)
	if errStd == nil {
		errStd = checkDecoded(std, hd)
	}
	return fast, std, errFast, errStd, true
}

// samePNG requires identical pixels from both decoders (tolerance 0: every
// byte of every row equal) and fails if either refused the file.
func samePNG(t *testing.T, name string, data []byte) {
	t.Helper()
	fast, std, errFast, errStd, ok := bothPNG(t, data, DefaultMaxPixels)
	if !ok {
		t.Fatalf("%s: header refused", name)
	}
	if errFast != nil || errStd != nil {
		t.Fatalf("%s: decodePNG error %v, image/png path error %v", name, errFast, errStd)
	}
	sameImage(t, name, fast, std)
}

// extraPNGCases adds what pngCases leaves out: every mode interlaced, a
// palette with a tRNS longer than PLTE and indices past both, gray tRNS
// values with the high byte set or out of range for the depth, a
// truecolour tRNS whose high bytes differ from the samples', and images
// of one row or one column.
func extraPNGCases() []rawPNG {
	r := rand.New(rand.NewPCG(11, 12))
	var out []rawPNG
	for _, p := range pngCases() {
		q := p
		q.interlace = true
		out = append(out, q)
	}
	// Palette: 3 entries, 5 alphas, indices up to 15.
	p := rawPNG{w: 9, h: 9, ctype: pngPalette, depth: 4, plte: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9},
		trns: []byte{10, 20, 30, 40, 50}, samples: randSamples(r, 9, 9, 1, 15)}
	out = append(out, p)
	p.depth, p.samples = 8, randSamples(r, 9, 9, 1, 255)
	out = append(out, p)
	p.interlace = true
	out = append(out, p)
	// Palette without tRNS, 2-bit, indices past a 1-entry PLTE.
	out = append(out, rawPNG{w: 13, h: 3, ctype: pngPalette, depth: 2, plte: []byte{200, 100, 50},
		samples: randSamples(r, 13, 3, 1, 3)})
	// Gray tRNS quirks: image/png compares the low byte only (8-bit) and
	// the low byte times the depth's scale, wrapping (1-4 bit).
	for _, c := range []struct {
		depth byte
		trns  []byte
	}{{8, []byte{0x12, 0x01}}, {1, []byte{0, 1}}, {1, []byte{0, 3}}, {2, []byte{0, 2}}, {2, []byte{0, 7}}, {4, []byte{1, 5}}, {16, []byte{0, 1}}} {
		q := rawPNG{w: 17, h: 5, ctype: pngGray, depth: c.depth, trns: c.trns,
			samples: randSamples(r, 17, 5, 1, uint16(1<<c.depth-1))}
		out = append(out, q)
	}
	// Truecolour tRNS with high bytes that no 8-bit sample has.
	q := rawPNG{w: 8, h: 8, ctype: pngRGB, depth: 8, trns: []byte{0xff, 1, 0xff, 2, 0xff, 3},
		samples: randSamples(r, 8, 8, 3, 3)}
	out = append(out, q)
	q.depth, q.trns = 16, []byte{0, 1, 0, 2, 0, 3}
	out = append(out, q)
	for _, ct := range []byte{pngGray, pngRGB, pngRGBA, pngGrayAlpha} {
		for _, wh := range [][2]int{{1, 9}, {9, 1}, {1, 1}} {
			out = append(out, rawPNG{w: wh[0], h: wh[1], ctype: ct, depth: 8, interlace: wh[0] == 1,
				samples: randSamples(r, wh[0], wh[1], pngChannels(ct), 255)})
		}
	}
	return out
}

// stdEncoded writes images of every type image/png's encoder handles, at
// sizes and contents that make it pick every filter type.
func stdEncoded() map[string][]byte {
	r := rand.New(rand.NewPCG(13, 14))
	rect := image.Rect(0, 0, 61, 37)
	smooth := func(p []byte, stride int) {
		for i := range p {
			y := i / stride
			x := i % stride
			switch {
			case y < 12:
				p[i] = byte(x + 3*y)
			case y < 24:
				p[i] = byte(r.IntN(256))
			default:
				p[i] = byte(x*y/7 + r.IntN(4))
			}
		}
	}
	out := map[string][]byte{}
	add := func(name string, img image.Image, level png.CompressionLevel) {
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: level}
		if err := enc.Encode(&buf, img); err != nil {
			panic(err)
		}
		out[name] = buf.Bytes()
	}
	for _, level := range []png.CompressionLevel{png.DefaultCompression, png.NoCompression, png.BestSpeed, png.BestCompression} {
		ls := []string{"default", "none", "speed", "best"}[-int(level)%4]
		g := image.NewGray(rect)
		smooth(g.Pix, g.Stride)
		add("gray-"+ls, g, level)
		g16 := image.NewGray16(rect)
		smooth(g16.Pix, g16.Stride)
		add("gray16-"+ls, g16, level)
		n := image.NewNRGBA(rect)
		smooth(n.Pix, n.Stride)
		add("nrgba-"+ls, n, level)
		o := image.NewRGBA(rect)
		smooth(o.Pix, o.Stride)
		for i := 3; i < len(o.Pix); i += 4 {
			o.Pix[i] = 0xff
		}
		add("rgb-"+ls, o, level)
		n64 := image.NewNRGBA64(rect)
		smooth(n64.Pix, n64.Stride)
		add("nrgba64-"+ls, n64, level)
		o64 := image.NewRGBA64(rect)
		smooth(o64.Pix, o64.Stride)
		for i := 6; i < len(o64.Pix); i += 8 {
			o64.Pix[i], o64.Pix[i+1] = 0xff, 0xff
		}
		add("rgb16-"+ls, o64, level)
		for _, np := range []int{2, 4, 16, 256} {
			pal := make(color.Palette, np)
			for i := range pal {
				pal[i] = color.NRGBA{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(255 - i%3*100)}
			}
			pm := image.NewPaletted(rect, pal)
			for i := range pm.Pix {
				pm.Pix[i] = byte(r.IntN(np))
			}
			add("paletted"+string(rune('0'+np%10))+"-"+ls, pm, level)
		}
	}
	return out
}

// TestPNGMatchesImagePNG: every colour type × bit depth × tRNS ×
// interlace, hand-built and from image/png's encoder at every compression
// level, decodes to exactly the bytes the image/png path gives.
func TestPNGMatchesImagePNG(t *testing.T) {
	for _, p := range append(pngCases(), extraPNGCases()...) {
		t.Run(describe(p), func(t *testing.T) { samePNG(t, describe(p), p.encode()) })
	}
	for name, data := range stdEncoded() {
		t.Run(name, func(t *testing.T) { samePNG(t, name, data) })
	}
}

// pngFiles lists the PNGs of the shared corpus and reference vectors.
// Without shared/ the test is skipped, except under CI=true, where it
// fails: the corpus comparison is what proves the decoder on real photos.
func pngFiles(t *testing.T) []string {
	t.Helper()
	root, err := shared.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared material absent under CI: %v", err)
		}
		t.Skipf("shared material absent: %v", err)
	}
	var files []string
	for _, sub := range []string{"corpus", "refvectors"} {
		_ = filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".png") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) == 0 {
		t.Fatalf("no PNG under %s/corpus or %s/refvectors", root, root)
	}
	return files
}

// TestPNGCorpusMatchesImagePNG decodes every corpus and reference-vector
// PNG both ways and compares the bytes (tolerance 0). -short keeps the
// files under 1 MB.
func TestPNGCorpusMatchesImagePNG(t *testing.T) {
	n := 0
	for _, p := range pngFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if testing.Short() && len(data) > 1<<20 {
			continue
		}
		samePNG(t, p, data)
		n++
	}
	t.Logf("%d files identical", n)
}

// TestPNGCorruptMatchesImagePNG truncates a PNG at every byte and flips
// bytes all over it: both decoders refuse or both give the same pixels,
// and decodePNG's refusals are ErrBadInput.
func TestPNGCorruptMatchesImagePNG(t *testing.T) {
	base := extraPNGCases()[0].encode()
	for n := 0; n < len(base); n++ {
		comparePNGDecoders(t, base[:n])
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, p := range append(pngCases(), extraPNGCases()...) {
		data := p.encode()
		for i := 0; i < 40; i++ {
			b := bytes.Clone(data)
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			comparePNGDecoders(t, b)
		}
	}
}

// comparePNGDecoders is the differential contract: the same pixels, or
// both refuse (decodePNG with ErrBadInput). The one documented exception
// (pngdecode.go): bytes after the end of the zlib stream inside the IDAT
// chunks, which image/png refuses or not depending on its read buffer and
// decodePNG ignores; then decodePNG must succeed.
func comparePNGDecoders(t testing.TB, data []byte) {
	t.Helper()
	// 4 MP at most: the fuzzer's mutations of a size field must not make
	// each run allocate gigabytes.
	fast, std, errFast, errStd, ok := bothPNG(t, data, 1<<22)
	if !ok {
		return
	}
	switch {
	case errFast == nil && errStd == nil:
		if !bytes.Equal(packRows(fast), packRows(std)) || fast.Format != std.Format {
			t.Fatalf("decoders disagree on pixels (%v vs %v)", fast.Format, std.Format)
		}
	case errFast != nil && errStd != nil:
		if !errors.Is(errFast, zenmetrics.ErrBadInput) {
			t.Fatalf("decodePNG error %v is not ErrBadInput", errFast)
		}
	case errFast != nil:
		t.Fatalf("decodePNG refused (%v) what image/png decodes", errFast)
	default:
		if !strings.Contains(errStd.Error(), "too much pixel data") || !trailingIDATData(t, data) {
			t.Fatalf("decodePNG accepted what image/png refuses: %v", errStd)
		}
	}
}

// packRows returns an image's rows without padding.
func packRows(im *zenmetrics.Image) []byte {
	var out []byte
	for y := 0; y < im.Height; y++ {
		out = append(out, im.Row(y)[:im.Width*im.Format.BytesPerPixel()]...)
	}
	return out
}

// trailingIDATData reports whether the first IDAT run of data holds bytes
// after the end of its zlib stream, found with compress/zlib independently
// of the code under test (a bytes.Reader is read exactly up to the end of
// the stream).
func trailingIDATData(t testing.TB, data []byte) bool {
	t.Helper()
	var idat []byte
	rest := data[8:]
	inRun := false
	for len(rest) >= 12 {
		n := int(binary.BigEndian.Uint32(rest))
		if n < 0 || n+12 > len(rest) {
			break
		}
		if string(rest[4:8]) == "IDAT" {
			if idat != nil && !inRun {
				break
			}
			idat = append(idat, rest[8:8+n]...)
			inRun = true
		} else if inRun {
			break
		}
		rest = rest[12+n:]
	}
	br := bytes.NewReader(idat)
	z, err := zlib.NewReader(br)
	if err != nil {
		return false
	}
	if _, err := io.Copy(io.Discard, z); err != nil {
		return false
	}
	return br.Len() > 0
}

// TestPNGTrailingIDATData pins the documented difference: garbage after
// the zlib stream in the last IDAT chunk is ignored.
func TestPNGTrailingIDATData(t *testing.T) {
	p := pngCases()[0]
	data := p.encode()
	// Rebuild with 5000 garbage bytes appended to the last IDAT payload:
	// more than image/png's 4 KiB buffer, so image/png refuses it.
	var idat []byte
	rest := data[8:]
	var head []byte
	for len(rest) >= 12 {
		n := int(binary.BigEndian.Uint32(rest))
		switch string(rest[4:8]) {
		case "IDAT":
			idat = append(idat, rest[8:8+n]...)
		case "IEND":
		default:
			head = append(head, rest[:12+n]...)
		}
		rest = rest[12+n:]
	}
	var buf bytes.Buffer
	buf.Write(magicPNG)
	buf.Write(head)
	rawChunk(&buf, "IDAT", append(idat, bytes.Repeat([]byte{0xA5}, 5000)...))
	rawChunk(&buf, "IEND", nil)
	fast, _, errFast, errStd, ok := bothPNG(t, buf.Bytes(), DefaultMaxPixels)
	if !ok || errFast != nil {
		t.Fatalf("decodePNG refused trailing IDAT bytes: %v", errFast)
	}
	if errStd == nil || !strings.Contains(errStd.Error(), "too much pixel data") {
		t.Fatalf("image/png now gives %v; update the comment in pngdecode.go", errStd)
	}
	sameImage(t, "trailing", fast, p.expected(t))
}

// FuzzPNGAgainstImagePNG runs the differential contract on any bytes.
// Seeds: every PNG case of the tests, truncated and whole.
func FuzzPNGAgainstImagePNG(f *testing.F) {
	for _, p := range append(pngCases(), extraPNGCases()...) {
		data := p.encode()
		f.Add(data)
		f.Add(data[:len(data)*2/3])
	}
	for _, data := range stdEncoded() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		comparePNGDecoders(t, data)
	})
}

// TestPNGManyEmptyIDATChunks: a file of 200000 empty IDAT chunks around
// the real ones decodes like image/png, and the chunk walk allocates
// nothing however many chunks there are (they are walked again, not
// listed).
func TestPNGManyEmptyIDATChunks(t *testing.T) {
	p := pngCases()[0]
	data := p.encode()
	var head, idat []byte
	rest := data[8:]
	for len(rest) >= 12 {
		n := int(binary.BigEndian.Uint32(rest))
		switch string(rest[4:8]) {
		case "IDAT":
			idat = append(idat, rest[8:8+n]...)
		case "IEND":
		default:
			head = append(head, rest[:12+n]...)
		}
		rest = rest[12+n:]
	}
	var buf bytes.Buffer
	buf.Write(magicPNG)
	buf.Write(head)
	for i := 0; i < 100000; i++ {
		rawChunk(&buf, "IDAT", nil)
	}
	rawChunk(&buf, "IDAT", idat[:len(idat)/2])
	for i := 0; i < 100000; i++ {
		rawChunk(&buf, "IDAT", nil)
	}
	rawChunk(&buf, "IDAT", idat[len(idat)/2:])
	rawChunk(&buf, "IEND", nil)
	samePNG(t, "empty IDATs", buf.Bytes())
	hd, err := readHeader(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(3, func() { _, _ = walkPNG(buf.Bytes(), hd.png) }); a != 0 {
		t.Fatalf("walkPNG allocated %v times", a)
	}
}
