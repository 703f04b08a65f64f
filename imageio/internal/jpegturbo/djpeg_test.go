package jpegturbo

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The oracle is libjpeg-turbo's own command-line tools (Debian's
// libjpeg-turbo-progs 2.1.5): cjpeg/jpegtran make the files at test time,
// djpeg decodes them with the library defaults, and Decode must produce
// exactly djpeg's samples (tolerance: 0, every sample). Generating the
// files at test time instead of committing them lets the set cover every
// coding mode and sampling at many sizes without binary blobs in the
// repository; the tests skip without the tools and fail under CI=true.

func needTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"cjpeg", "djpeg", "jpegtran"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found (CI installs libjpeg-turbo-progs)", tool)
			}
			t.Skipf("%s not found; install libjpeg-turbo-progs", tool)
		}
	}
}

func run(t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, errb.String())
	}
	return out.Bytes()
}

// ppm encodes interleaved samples (1 or 3 channels) as PGM/PPM.
func ppm(w, h, ch int, pix []byte) []byte {
	magic := "P6"
	if ch == 1 {
		magic = "P5"
	}
	return append([]byte(fmt.Sprintf("%s\n%d %d\n255\n", magic, w, h)), pix...)
}

// parsePNM reads djpeg's binary PGM/PPM output.
func parsePNM(t testing.TB, b []byte) (w, h, ch int, pix []byte) {
	t.Helper()
	fields := make([]string, 0, 4)
	i := 0
	for len(fields) < 4 {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
			i++
		}
		j := i
		for j < len(b) && !(b[j] == ' ' || b[j] == '\n' || b[j] == '\r' || b[j] == '\t') {
			j++
		}
		fields = append(fields, string(b[i:j]))
		i = j
	}
	i++
	switch fields[0] {
	case "P5":
		ch = 1
	case "P6":
		ch = 3
	default:
		t.Fatalf("unexpected PNM magic %q", fields[0])
	}
	w, _ = strconv.Atoi(fields[1])
	h, _ = strconv.Atoi(fields[2])
	return w, h, ch, b[i:]
}

// djpegDecode runs djpeg with its defaults. Exit status 2 means djpeg
// wrote the image but warned (say, about an unknown Adobe transform code);
// the image is still the oracle.
func djpegDecode(t testing.TB, jpg []byte) (w, h, ch int, pix []byte) {
	t.Helper()
	cmd := exec.Command("djpeg")
	cmd.Stdin = bytes.NewReader(jpg)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || out.Len() == 0 {
			t.Fatalf("djpeg: %v: %s", err, errb.String())
		}
		t.Logf("djpeg warned: %s", strings.TrimSpace(errb.String()))
	}
	return parsePNM(t, out.Bytes())
}

// synth makes a test picture with smooth gradients, sharp saturated
// colour edges and noise, where IDCT and upsampling differences show.
func synth(w, h, ch int, seed int64) []byte {
	r := rand.New(rand.NewSource(seed))
	pix := make([]byte, w*h*ch)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < ch; c++ {
				v := (x*255/max(w, 1) + y*97/max(h, 1) + c*80) & 255
				if (x/5+y/3+c)%4 == 0 {
					v = 255 - v
				}
				if (x+2*y)%11 < 3 {
					v = r.Intn(256)
				}
				pix[(y*w+x)*ch+c] = byte(v)
			}
		}
	}
	return pix
}

func compareSamples(t testing.TB, name string, got *Image, w, h, ch int, want []byte) {
	t.Helper()
	if got.Width != w || got.Height != h || got.ColorSpace.Channels() != ch {
		t.Fatalf("%s: got %dx%d %v, djpeg %dx%d with %d channels", name, got.Width, got.Height, got.ColorSpace, w, h, ch)
	}
	if len(want) < w*h*ch {
		t.Fatalf("%s: djpeg output short", name)
	}
	n, first := 0, -1
	maxd := 0
	for i := 0; i < w*h*ch; i++ {
		if got.Pix[i] != want[i] {
			if first < 0 {
				first = i
			}
			n++
			maxd = max(maxd, absInt(int(got.Pix[i])-int(want[i])))
		}
	}
	if n > 0 {
		p := first / ch
		t.Errorf("%s: %d of %d samples differ from djpeg (max |diff| %d); first at x=%d y=%d ch=%d: %d vs %d",
			name, n, w*h*ch, maxd, p%w, p/w, first%ch, got.Pix[first], want[first])
	}
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// checkAgainstDjpeg decodes jpg with Decode and with djpeg and compares.
func checkAgainstDjpeg(t testing.TB, name string, jpg []byte) {
	t.Helper()
	got, err := Decode(jpg, Limits{})
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if cfg, err := ConfigAt(bytes.NewReader(jpg), int64(len(jpg))); err != nil || cfg != got.Config {
		t.Errorf("%s: ConfigAt %+v, %v; Decode %+v", name, cfg, err, got.Config)
	}
	w, h, ch, want := djpegDecode(t, jpg)
	if got.ColorSpace == CMYK {
		// djpeg writes CMYK as RGB through cmyk_to_rgb (cdjpeg's cmyk.h):
		// R = round(C·K/255) and so on.
		rgb := make([]byte, got.Width*got.Height*3)
		for i := 0; i < got.Width*got.Height; i++ {
			k := float64(got.Pix[4*i+3])
			for c := 0; c < 3; c++ {
				rgb[3*i+c] = byte(float64(got.Pix[4*i+c])*k/255 + 0.5)
			}
		}
		got = &Image{Config: got.Config, Pix: rgb}
		got.ColorSpace = RGB
	}
	compareSamples(t, name, got, w, h, ch, want)
}

type sizeCase struct{ w, h int }

var oddSizes = []sizeCase{{1, 1}, {2, 2}, {3, 5}, {7, 13}, {17, 9}, {16, 16}, {33, 31}, {64, 48}, {67, 45}, {100, 75}}

// TestMatchesDjpegSynthetic covers coding modes × samplings × sizes on
// synthetic pictures.
func TestMatchesDjpegSynthetic(t *testing.T) {
	needTools(t)
	modes := []string{
		"", "-progressive", "-arithmetic", "-arithmetic -progressive", "-optimize",
		"-restart 1", "-restart 3B -progressive", "-restart 2B -arithmetic",
		"-quality 5", "-quality 100", "-dct float -quality 75",
	}
	samplings := []string{"1x1", "2x1", "2x2", "1x2", "4x1", "2x2,1x2,1x2", "4x2", "1x4", "3x1", "2x2,2x1,1x2", "1x1,1x2,2x1"}
	sizes := oddSizes
	if testing.Short() {
		sizes = []sizeCase{{1, 1}, {7, 13}, {67, 45}}
	}
	for _, sz := range sizes {
		src := ppm(sz.w, sz.h, 3, synth(sz.w, sz.h, 3, int64(sz.w*1000+sz.h)))
		for _, s := range samplings {
			for _, m := range modes {
				args := append(strings.Fields(m), "-sample", s)
				name := fmt.Sprintf("%dx%d %s -sample %s", sz.w, sz.h, m, s)
				jpg := run(t, src, "cjpeg", args...)
				checkAgainstDjpeg(t, name, jpg)
			}
		}
		gray := ppm(sz.w, sz.h, 1, synth(sz.w, sz.h, 1, int64(sz.h)))
		for _, m := range append(modes, "-grayscale") {
			name := fmt.Sprintf("%dx%d gray %s", sz.w, sz.h, m)
			checkAgainstDjpeg(t, name, run(t, gray, "cjpeg", strings.Fields(m)...))
		}
		for _, m := range []string{"-rgb", "-rgb -progressive", "-rgb -arithmetic", "-grayscale", "-grayscale -progressive"} {
			name := fmt.Sprintf("%dx%d %s", sz.w, sz.h, m)
			checkAgainstDjpeg(t, name, run(t, src, "cjpeg", strings.Fields(m)...))
		}
	}
}

func corpusPhotos(t testing.TB) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "shared", "corpus", "images", "*__ref.png"))
	if len(paths) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("../shared/corpus/images missing")
		}
		t.Skip("../shared/corpus/images missing")
	}
	return paths
}

// photoPPM decodes a corpus PNG into PPM (gray PNGs into PGM).
func photoPPM(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if g, ok := img.(*image.Gray); ok {
		pix := make([]byte, 0, w*h)
		for y := 0; y < h; y++ {
			pix = append(pix, g.Pix[y*g.Stride:y*g.Stride+w]...)
		}
		return ppm(w, h, 1, pix)
	}
	pix := make([]byte, 0, w*h*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			pix = append(pix, byte(r>>8), byte(g>>8), byte(bb>>8))
		}
	}
	return ppm(w, h, 3, pix)
}

// TestMatchesDjpegPhotos encodes the corpus photos at several qualities,
// samplings and modes and compares every sample with djpeg.
func TestMatchesDjpegPhotos(t *testing.T) {
	needTools(t)
	paths := corpusPhotos(t)
	if testing.Short() {
		paths = paths[:1]
	}
	cases := []string{
		"-quality 30 -sample 2x2",
		"-quality 60 -sample 2x1 -progressive",
		"-quality 85 -sample 1x1",
		"-quality 95 -sample 1x2 -optimize",
		"-quality 50 -sample 4x1 -arithmetic",
		"-quality 75 -progressive -arithmetic -restart 5",
	}
	for _, p := range paths {
		src := photoPPM(t, p)
		for _, c := range cases {
			name := filepath.Base(p) + " " + c
			checkAgainstDjpeg(t, name, run(t, src, "cjpeg", strings.Fields(c)...))
		}
	}
}

// TestMatchesDjpegScanScripts covers scan scripts that leave coefficients
// incomplete, where libjpeg's block smoothing changes the output (DC-only
// files take its DC-interpolating path), and multi-scan sequential files.
func TestMatchesDjpegScanScripts(t *testing.T) {
	needTools(t)
	scripts := map[string]string{
		"dc-only":            "0,1,2: 0-0, 0, 0;",
		"dc-approx":          "0,1,2: 0-0, 0, 2;",
		"unrefined":          "0,1,2: 0-0, 0, 1;\n0: 1-5, 0, 2;\n2: 1-63, 0, 1;\n1: 1-63, 0, 1;\n0: 6-63, 0, 2;\n0: 1-63, 2, 1;",
		"partial-bands":      "0,1,2: 0-0, 0, 0;\n0: 1-2, 0, 0;\n1: 1-63, 0, 0;\n2: 1-63, 0, 0;",
		"low-only":           "0,1,2: 0-0, 0, 0;\n0: 1-9, 0, 0;\n1: 1-9, 0, 0;\n2: 1-9, 0, 0;",
		"complete":           "0,1,2: 0-0, 0, 1;\n0: 1-63, 0, 1;\n1: 1-63, 0, 0;\n2: 1-63, 0, 0;\n0,1,2: 0-0, 1, 0;\n0: 1-63, 1, 0;",
		"seq-noninterleaved": "0: 0-63, 0, 0;\n1: 0-63, 0, 0;\n2: 0-63, 0, 0;",
		"seq-mixed":          "0: 0-63, 0, 0;\n1,2: 0-63, 0, 0;",
	}
	grayScripts := map[string]string{
		"gray-dc-only":   "0: 0-0, 0, 0;",
		"gray-unrefined": "0: 0-0, 0, 1;\n0: 1-63, 0, 1;",
		"gray-seq":       "0: 0-63, 0, 0;",
	}
	dir := t.TempDir()
	sizes := []sizeCase{{1, 1}, {7, 13}, {17, 9}, {33, 31}, {67, 45}, {40, 72}}
	for name, script := range scripts {
		f := filepath.Join(dir, name+".txt")
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			src := ppm(sz.w, sz.h, 3, synth(sz.w, sz.h, 3, int64(sz.w+7*sz.h)))
			for _, extra := range []string{"-sample 2x2", "-sample 1x1", "-sample 2x1 -arithmetic", "-sample 1x2"} {
				args := append(strings.Fields(extra), "-scans", f)
				checkAgainstDjpeg(t, fmt.Sprintf("%s %dx%d %s", name, sz.w, sz.h, extra), run(t, src, "cjpeg", args...))
			}
		}
	}
	for name, script := range grayScripts {
		f := filepath.Join(dir, name+".txt")
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, sz := range sizes {
			src := ppm(sz.w, sz.h, 1, synth(sz.w, sz.h, 1, int64(sz.w)))
			checkAgainstDjpeg(t, fmt.Sprintf("%s %dx%d", name, sz.w, sz.h), run(t, src, "cjpeg", "-scans", f))
		}
	}
	// A corpus photo, DC only and unrefined: smoothing on real content.
	paths := corpusPhotos(t)
	src := photoPPM(t, paths[0])
	for _, name := range []string{"dc-only", "unrefined"} {
		checkAgainstDjpeg(t, "photo "+name, run(t, src, "cjpeg", "-scans", filepath.Join(dir, name+".txt")))
	}
}

// TestMatchesDjpegJpegtran covers files rewritten by jpegtran: progressive
// and arithmetic transcodes and restart intervals of a baseline file.
func TestMatchesDjpegJpegtran(t *testing.T) {
	needTools(t)
	for _, sz := range []sizeCase{{17, 9}, {67, 45}} {
		src := ppm(sz.w, sz.h, 3, synth(sz.w, sz.h, 3, 5))
		base := run(t, src, "cjpeg", "-quality", "80")
		for _, m := range []string{"-progressive", "-arithmetic", "-restart 1", "-optimize -progressive -restart 2B", "-grayscale", "-arithmetic -progressive"} {
			checkAgainstDjpeg(t, fmt.Sprintf("jpegtran %s %dx%d", m, sz.w, sz.h), run(t, base, "jpegtran", strings.Fields(m)...))
		}
	}
}
