package imageio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// encodeNetpbm writes im as binary Netpbm: P5 or P6 for gray and RGB
// when pam is false, else P7 with the matching TUPLTYPE; maxval 255 or
// 65535 by the format's depth. Written here from the Netpbm manual pages,
// independently of pnm.go.
func encodeNetpbm(im *zenmetrics.Image, pam bool) []byte {
	var b bytes.Buffer
	maxv := im.Format.MaxValue()
	if pam {
		tupl := [...]string{1: "GRAYSCALE", 2: "GRAYSCALE_ALPHA", 3: "RGB", 4: "RGB_ALPHA"}[im.Format.Channels()]
		fmt.Fprintf(&b, "P7\nWIDTH %d\nHEIGHT %d\nDEPTH %d\nMAXVAL %d\nTUPLTYPE %s\nENDHDR\n",
			im.Width, im.Height, im.Format.Channels(), maxv, tupl)
	} else {
		magic := "P6"
		if im.Format.IsGray() {
			magic = "P5"
		}
		fmt.Fprintf(&b, "%s\n%d %d\n%d\n", magic, im.Width, im.Height, maxv)
	}
	for y := 0; y < im.Height; y++ {
		b.Write(im.Row(y))
	}
	return b.Bytes()
}

// noiseImage is a w×h image of format f whose every byte is pseudo-random
// (an xorshift stream from seed), so that any misplaced byte shows.
func noiseImage(w, h int, seed uint64, f zenmetrics.PixelFormat) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range im.Pix {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		im.Pix[i] = byte(x >> 32)
	}
	return im
}

var allFormats = []zenmetrics.PixelFormat{zenmetrics.Gray8, zenmetrics.GrayA8, zenmetrics.RGB8, zenmetrics.RGBA8,
	zenmetrics.Gray16, zenmetrics.GrayA16, zenmetrics.RGB16, zenmetrics.RGBA16}

// TestPNMRoundTrip: every pixel format written as PAM (and gray and RGB
// also as PGM/PPM) comes back sample for sample (tolerance 0) through
// Decode, DecodeFile (which keeps the read buffer as the pixels) and
// DecodeConfig (given the first 200 bytes only), and ProbeFile reports
// the format, size and file size.
func TestPNMRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for i, f := range allFormats {
		im := noiseImage(37+i, 23, uint64(i), f)
		for _, pam := range []bool{false, true} {
			if !pam && f.HasAlpha() {
				continue
			}
			data := encodeNetpbm(im, pam)
			what := fmt.Sprintf("%v pam=%v", f, pam)
			got, err := Decode(data, "a.pnm", Options{})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			sameImage(t, what, got, im)
			w, h, pf, format, err := DecodeConfig(data[:min(len(data), 200)], "a.pnm")
			if err != nil || w != im.Width || h != im.Height || pf != f || format != FormatPNM {
				t.Fatalf("%s: DecodeConfig = %d %d %v %q %v", what, w, h, pf, format, err)
			}
			// Decode copies: changing the file's bytes leaves the image alone.
			data[len(data)-1] ^= 0xff
			if got.Pix[len(got.Pix)-1] != im.Pix[len(im.Pix)-1] {
				t.Fatalf("%s: Decode's image shares the caller's buffer", what)
			}
			data[len(data)-1] ^= 0xff
			path := filepath.Join(dir, fmt.Sprintf("%d%v.pnm", i, pam))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			info, err := ProbeFile(path, Options{})
			if err != nil || info.Format != FormatPNM || info.Width != im.Width || info.Height != im.Height || info.FileSize != int64(len(data)) {
				t.Fatalf("%s: ProbeFile = %+v, %v", what, info, err)
			}
			if min := int64(len(data)) + int64(len(im.Pix)); info.DecodeBytes < min {
				t.Fatalf("%s: DecodeBytes %d < file + image %d", what, info.DecodeBytes, min)
			}
			got, err = DecodeFile(path)
			if err != nil {
				t.Fatalf("%s: DecodeFile: %v", what, err)
			}
			sameImage(t, what+" (DecodeFile)", got, im)
		}
	}
}

// TestPNMMatchesDjpeg: djpeg's PGM and PPM output (libjpeg-turbo's own
// writer) read by this decoder equals, sample for sample, this package's
// JPEG decoder, which is bit-identical to djpeg (TestJPEGFilesMatchDjpeg).
func TestPNMMatchesDjpeg(t *testing.T) {
	if _, err := exec.LookPath("djpeg"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("djpeg not found (CI installs libjpeg-turbo-progs)")
		}
		t.Skip("djpeg not found")
	}
	for _, name := range []string{"jpeg420_67x45.jpg", "jpeggray_67x45.jpg", "jpegprog_64x48.jpg"} {
		jpg := testdataFile(t, name)
		want, err := Decode(jpg, name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("djpeg")
		cmd.Stdin = bytes.NewReader(jpg)
		pnm, err := cmd.Output()
		if err != nil {
			t.Fatalf("djpeg %s: %v", name, err)
		}
		got, err := Decode(pnm, name+".pnm", Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameImage(t, name, got, want)
	}
}

// TestPNMMaxval: maxval 1, 3 and 15 are scaled to 8 bits exactly (×255,
// ×85, ×17, as PNG's 1-, 2- and 4-bit gray), a sample above maxval is
// corrupt, maxval 0 and values past 65535 are corrupt, and every other
// maxval is refused as unsupported (it would need rounding, or libjxl
// refuses it).
func TestPNMMaxval(t *testing.T) {
	for _, c := range []struct {
		maxval int
		in     []byte
		want   []byte
	}{
		{1, []byte{0, 1, 1, 0}, []byte{0, 255, 255, 0}},
		{3, []byte{0, 1, 2, 3}, []byte{0, 85, 170, 255}},
		{15, []byte{0, 1, 14, 15}, []byte{0, 17, 238, 255}},
		{255, []byte{0, 1, 254, 255}, []byte{0, 1, 254, 255}},
	} {
		data := append([]byte(fmt.Sprintf("P5 2 2 %d\n", c.maxval)), c.in...)
		im, err := Decode(data, "m.pgm", Options{})
		if err != nil || im.Format != zenmetrics.Gray8 || !bytes.Equal(im.Pix, c.want) {
			t.Errorf("maxval %d: %v, %v; want Gray8 %v", c.maxval, im, err, c.want)
		}
		// The same samples as a PAM.
		pam := append([]byte(fmt.Sprintf("P7\nWIDTH 2\nHEIGHT 2\nDEPTH 1\nMAXVAL %d\nTUPLTYPE GRAYSCALE\nENDHDR\n", c.maxval)), c.in...)
		if im, err := Decode(pam, "m.pam", Options{}); err != nil || !bytes.Equal(im.Pix, c.want) {
			t.Errorf("PAM maxval %d: %v, %v; want %v", c.maxval, im, err, c.want)
		}
	}
	// 16-bit samples are kept as stored (big-endian).
	im, err := Decode([]byte("P5 2 1 65535\n\x12\x34\xff\xfe"), "m.pgm", Options{})
	if err != nil || im.Format != zenmetrics.Gray16 || im.Sample(0, 0, 0) != 0x1234 || im.Sample(1, 0, 0) != 0xfffe {
		t.Errorf("maxval 65535: %v, %v", im, err)
	}
	for _, c := range []struct {
		data string
		want error
		msg  string
	}{
		{"P5 2 1 15\n\x0f\x10", zenmetrics.ErrBadInput, "the sample at byte 11 exceeds maxval 15"},
		{"P5 2 1 0\n\x00\x00", zenmetrics.ErrBadInput, "maxval 0"},
		{"P5 2 1 65536\n\x00\x00\x00\x00", zenmetrics.ErrBadInput, "maxval is larger than 65535"},
		{"P5 2 1 7\n\x00\x00", zenmetrics.ErrUnsupported, "maxval 7 (3-bit samples)"},
		{"P5 2 1 1023\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "maxval 1023 (10-bit samples)"},
		{"P6 1 1 4095\n\x00\x00\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "maxval 4095 (12-bit samples)"},
		{"P5 2 1 1000\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "not 2^n − 1"},
		{"P5 2 1 256\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "not 2^n − 1"},
		{"P5 2 1 65534\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "not 2^n − 1"},
		{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 100\nTUPLTYPE GRAYSCALE\nENDHDR\n\x00", zenmetrics.ErrUnsupported, "not 2^n − 1"},
	} {
		checkPNMErr(t, []byte(c.data), c.want, c.msg)
	}
}

// checkPNMErr decodes data and wants an *InputError matching want whose
// message holds msg, and an error from DecodeConfig too unless the fault
// lies in the raster.
func checkPNMErr(t *testing.T, data []byte, want error, msg string) {
	t.Helper()
	what := fmt.Sprintf("%.40q", data)
	im, err := Decode(data, "h.pnm", Options{MaxPixels: 1 << 20})
	if im != nil || err == nil {
		t.Errorf("%s: decoded %v, want %v", what, im, want)
		return
	}
	mustTyped(t, err, "h.pnm")
	if !errors.Is(err, want) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v; want %v with %q", what, err, want, msg)
	}
	// DecodeConfig reads the header only: it refuses what is wrong there
	// and accepts a file whose raster is short, long or corrupt.
	rasterErr := strings.Contains(msg, "exceeds") || strings.Contains(msg, "the raster")
	if _, _, _, _, cerr := DecodeConfig(data, "h.pnm"); (cerr == nil) != rasterErr {
		t.Errorf("%s: DecodeConfig gives %v where Decode gives %v", what, cerr, err)
	}
}

// TestPNMHeaderSyntax: what the Netpbm pages allow in a header decodes to
// the same 2×1 image: comments between any two tokens and after maxval,
// every whitespace byte, leading zeros, PAM comment and blank lines,
// CR LF line ends and indentation, and a PAM without TUPLTYPE at DEPTH 3
// (RGB, as libjxl reads it).
func TestPNMHeaderSyntax(t *testing.T) {
	gray := []byte{7, 200}
	rgb := []byte{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		hdr string
		pix []byte
	}{
		{"P5\n2 1\n255\n", gray},
		{"P5 2 1 255 ", gray},
		{"P5\t2\r1\v255\f", gray},
		{"P5\r\n2 1\r\n255\r", gray},
		{"P5\n# a comment\n2 # width\n1\n# maxval next\n255\n", gray},
		{"P5\n#\n#\n2 1\n255#comment up to the delimiting line break\n", gray},
		{"P5 0002 00001 000255\n", gray},
		{"P6\n2 1\n255\n", rgb},
		{"P7\nWIDTH 2\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n", gray},
		{"P7\n# comment\n\n  WIDTH   2  \nHEIGHT 1\r\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\r\n", gray},
		{"P7\nHEIGHT 1\nWIDTH 2\nDEPTH 3\nMAXVAL 255\nENDHDR\n", rgb},
	} {
		data := append([]byte(c.hdr), c.pix...)
		im, err := Decode(data, "s.pnm", Options{})
		if err != nil {
			t.Errorf("%q: %v", c.hdr, err)
			continue
		}
		if im.Width != 2 || im.Height != 1 || !bytes.Equal(im.Pix, c.pix) {
			t.Errorf("%q: %dx%d %v %v, want 2×1 %v", c.hdr, im.Width, im.Height, im.Format, im.Pix, c.pix)
		}
	}
}

// hostilePNM lists malformed and unsupported files and the error each must
// give (all of them are fuzz seeds too).
var hostilePNM = []struct {
	data string
	want error
	msg  string
}{
	{"P5\n2 1\n255\n\x00", zenmetrics.ErrBadInput, "truncated: the raster"},
	{"P6\n2 2\n255\n", zenmetrics.ErrBadInput, "truncated: the raster"},
	{"P5\n2 1\n", zenmetrics.ErrBadInput, "truncated header"},
	{"P5\n2 1\n255", zenmetrics.ErrBadInput, "truncated header"},
	{"P5 ", zenmetrics.ErrBadInput, "truncated header"},
	{"P5\n2 1\n255\n\x00\x00\x00", zenmetrics.ErrBadInput, "1 bytes after the raster"},
	{"P5\n2 1\n255\n\n\x00\x00", zenmetrics.ErrBadInput, "1 bytes after the raster"},
	{"P5\n2 1\n255\n\x00\x00P5\n2 1\n255\n\x00\x00", zenmetrics.ErrBadInput, "after the raster"},
	{"P5\n0 1\n255\n", zenmetrics.ErrBadInput, "empty 0×1 image"},
	{"P6\n3 0\n255\n", zenmetrics.ErrBadInput, "empty 3×0 image"},
	{"P5\n-2 1\n255\n\x00\x00", zenmetrics.ErrBadInput, "expected the width"},
	{"P5\n2x 1\n255\n\x00\x00", zenmetrics.ErrBadInput, "expected whitespace"},
	{"P5\n2 1\n255x\x00\x00", zenmetrics.ErrBadInput, "one whitespace byte after maxval"},
	{"P5\n99999999999 1\n255\n", zenmetrics.ErrBadInput, "width is larger than"},
	{"P6\n100000 100000\n255\n\x00\x00\x00", zenmetrics.ErrBadInput, "exceeds the limit of"},
	{"P6\n1000 1000\n255\n\x00\x00\x00", zenmetrics.ErrBadInput, "truncated: the raster"},
	{"P7 WIDTH 1\n", zenmetrics.ErrBadInput, "line break after P7"},
	{"P7\nWIDTH 2147483647\nHEIGHT 2147483647\nDEPTH 4\nMAXVAL 65535\nTUPLTYPE RGB_ALPHA\nENDHDR\n", zenmetrics.ErrBadInput, "too large"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nCOLOR red\nENDHDR\n\x00", zenmetrics.ErrBadInput, "unknown PAM header keyword"},
	{"P7\nWIDTH 1\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n\x00", zenmetrics.ErrBadInput, "repeats"},
	{"P7\nWIDTH 1\nHEIGHT 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n\x00", zenmetrics.ErrBadInput, "lacks one of"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 3\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n\x00\x00\x00", zenmetrics.ErrBadInput, "DEPTH 3 does not match the TUPLTYPE's 1 channels"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 9\nMAXVAL 255\nENDHDR\n", zenmetrics.ErrBadInput, "DEPTH is larger than 4"},
	{"P7\nWIDTH one\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n\x00", zenmetrics.ErrBadInput, "WIDTH is not a decimal"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDRx\n\x00", zenmetrics.ErrBadInput, "unknown PAM header keyword"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 1\nTUPLTYPE BLACKANDWHITE\nENDHDR\n\x00", zenmetrics.ErrUnsupported, "tuple type"},
	{"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 4\nMAXVAL 255\nTUPLTYPE CMYK\nENDHDR\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "tuple type"},
	{"P1\n1 1\n1\n", zenmetrics.ErrUnsupported, "plain (ASCII) PNM and PBM"},
	{"P3\n1 1\n255\n0 0 0\n", zenmetrics.ErrUnsupported, "plain (ASCII) PNM and PBM"},
	{"P4\n8 1\n\x00", zenmetrics.ErrUnsupported, "plain (ASCII) PNM and PBM"},
	{"PF\n1 1\n-1.0\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "PFM"},
	{"Pf\n1 1\n1.0\n\x00\x00\x00\x00", zenmetrics.ErrUnsupported, "PFM"},
}

// TestPNMHostile: every malformed file is an *InputError wrapping
// ErrBadInput (unsupported ones ErrUnsupported) with a message saying
// what is wrong; none panics, and none allocates in proportion to the
// image its header claims (a 30000² 16-bit PPM claim with 3 bytes of
// raster costs less than smallAlloc).
func TestPNMHostile(t *testing.T) {
	for _, c := range hostilePNM {
		checkPNMErr(t, []byte(c.data), c.want, c.msg)
	}
	// 30000² RGB16 (5.4 GB) is under the default pixel limit: only the
	// size check stands between the claim and the allocation.
	huge := []byte("P6\n30000 30000\n65535\n\x00\x00\x00")
	var err error
	if n := allocated(func() { _, err = Decode(huge, "huge.ppm", Options{}) }); n > smallAlloc || !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("a 30000² RGB16 claim with 3 bytes of raster: %v, allocated %d bytes", err, n)
	}
	// The pixel limit is checked on the header's claim as for other
	// formats, here with a raster that is all there.
	big := append([]byte("P5 2000 1000 255\n"), make([]byte, 2000*1000)...)
	if _, err := Decode(big, "big.pgm", Options{MaxPixels: 1000000}); !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("over MaxPixels: %v", err)
	}
	// A header longer than the probe's prefix (a long comment) is refused
	// as unsupported, the same by Decode and ProbeFile.
	long := append([]byte("P5\n#"+strings.Repeat("c", probePrefix)+"\n1 1\n255\n"), 0)
	checkPNMErr(t, long, zenmetrics.ErrUnsupported, "header longer than")
	path := filepath.Join(t.TempDir(), "long.pgm")
	if err := os.WriteFile(path, long, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ProbeFile(path, Options{}); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("ProbeFile of a long header: %v", err)
	}
}

// TestPNMProbeSize: ProbeFile refuses a file whose size is not the header
// plus the raster from its first bytes, before reading the rest: a
// truncated file and one with trailing bytes, as Decode does.
func TestPNMProbeSize(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"short.ppm":    append([]byte("P6 4 4 255\n"), make([]byte, 47)...),
		"trailing.ppm": append([]byte("P6 4 4 255\n"), make([]byte, 49)...),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ProbeFile(path, Options{}); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("ProbeFile %s: %v", name, err)
		}
		if _, err := DecodeFile(path); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("DecodeFile %s: %v", name, err)
		}
	}
}

// pnmSeeds are valid files of every kind and the hostile ones.
func pnmSeeds() [][]byte {
	var out [][]byte
	for i, f := range allFormats {
		im := noiseImage(5+i, 3, uint64(i), f)
		out = append(out, encodeNetpbm(im, true))
		if !f.HasAlpha() {
			out = append(out, encodeNetpbm(im, false))
		}
	}
	out = append(out, []byte("P5 2 2 15\n\x00\x01\x0e\x0f"), []byte("P5\n# c\n2 1\n255#c\n\x07\xc8"))
	for _, c := range hostilePNM {
		out = append(out, []byte(c.data))
	}
	return out
}

// FuzzDecodePNM: any bytes after a Netpbm magic give either a valid image
// agreeing with DecodeConfig or a typed *InputError; never a panic.
// Seeds: pnmSeeds and testdata/fuzz/FuzzDecodePNM.
func FuzzDecodePNM(f *testing.F) {
	for _, s := range pnmSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeContract(t, data, "fuzz.pnm")
		// The same bytes behind each binary magic, so the fuzzer's
		// mutations reach every header parser.
		if len(data) >= 3 && data[0] == 'P' {
			for _, m := range []byte{'5', '6', '7'} {
				d := bytes.Clone(data)
				d[1] = m
				checkDecodeContract(t, d, "fuzz.pnm")
			}
		}
	})
}
