package imageio

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestGenerateTestdata rewrites testdata/imageio from synthetic images made
// here, with libwebp's cwebp/dwebp and libjpeg-turbo's cjpeg/djpeg. It only
// runs with ZM_GEN_TESTDATA=1 (the tools are not needed otherwise):
//
//	ZM_GEN_TESTDATA=1 go test ./imageio -run TestGenerateTestdata
func TestGenerateTestdata(t *testing.T) {
	if os.Getenv("ZM_GEN_TESTDATA") != "1" {
		t.Skip("set ZM_GEN_TESTDATA=1 to regenerate testdata/imageio")
	}
	dir := shared.Testdata(t, "imageio")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(name string, im *zenmetrics.Image) string {
		var buf bytes.Buffer
		if err := EncodePNG(&buf, im); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ppm := func(name string, im *zenmetrics.Image) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, encodePNM(im), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(name string, args ...string) {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	odd := synthetic(67, 45, zenmetrics.RGB8)
	even := synthetic(64, 48, zenmetrics.RGB8)
	alpha := synthetic(67, 45, zenmetrics.RGBA8)
	gray := synthetic(67, 45, zenmetrics.Gray8)
	srcOdd := write("src_rgb_67x45.png", odd)
	srcEven := write("src_rgb_64x48.png", even)
	srcAlpha := write("src_rgba_67x45.png", alpha)
	write("src_gray_67x45.png", gray)
	out := func(name string) string { return filepath.Join(dir, name) }

	run("cwebp", "-quiet", "-q", "75", srcOdd, "-o", out("lossy_67x45.webp"))
	run("cwebp", "-quiet", "-q", "60", srcEven, "-o", out("lossy_64x48.webp"))
	run("cwebp", "-quiet", "-q", "75", srcAlpha, "-o", out("lossy_alpha_67x45.webp"))
	run("cwebp", "-quiet", "-lossless", srcOdd, "-o", out("lossless_67x45.webp"))
	run("cwebp", "-quiet", "-lossless", "-exact", srcAlpha, "-o", out("lossless_alpha_67x45.webp"))
	for _, n := range []string{"lossy_67x45", "lossy_64x48", "lossy_alpha_67x45"} {
		run("dwebp", "-quiet", out(n+".webp"), "-o", out(n+".dwebp.png"))
	}

	run("cjpeg", "-quality", "50", "-outfile", out("jpeg420_67x45.jpg"), ppm("odd.ppm", odd))
	run("cjpeg", "-quality", "80", "-progressive", "-outfile", out("jpegprog_64x48.jpg"), ppm("even.ppm", even))
	run("cjpeg", "-quality", "60", "-outfile", out("jpeggray_67x45.jpg"), ppm("gray.pgm", gray))
	for _, n := range []string{"jpeg420_67x45", "jpegprog_64x48", "jpeggray_67x45"} {
		pnm := filepath.Join(tmp, n+".pnm")
		run("djpeg", "-outfile", pnm, out(n+".jpg"))
		b, err := os.ReadFile(pnm)
		if err != nil {
			t.Fatal(err)
		}
		im, err := readDjpegPNM(b)
		if err != nil {
			t.Fatal(err)
		}
		write(n+".djpeg.png", im)
	}
}

// synthetic draws smooth gradients, sharp edges and fine texture, so that
// lossy codecs produce chroma detail worth upsampling.
func synthetic(w, h int, f zenmetrics.PixelFormat) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	ch := f.Channels()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			v := [4]float64{
				255 * fx,
				127.5 + 127.5*math.Sin(9*fx+4*fy),
				255 * fy,
				255 * (1 - fx*fy),
			}
			if (x/8+y/8)%2 == 0 && x > w/2 {
				v[0], v[2] = 255-v[0], 20
			}
			if (x*7+y*13)%5 == 0 {
				v[1] = 255 - v[1]
			}
			row := im.Row(y)
			switch ch {
			case 1:
				row[x] = byte(0.3*v[0] + 0.6*v[1] + 0.1*v[2])
			default:
				for c := 0; c < ch; c++ {
					row[x*ch+c] = byte(v[c])
				}
			}
		}
	}
	return im
}

// encodePNM writes a Gray8 image as PGM and an RGB8 image as PPM.
func encodePNM(im *zenmetrics.Image) []byte {
	magic := "P6"
	if im.Format == zenmetrics.Gray8 {
		magic = "P5"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s\n%d %d\n255\n", magic, im.Width, im.Height)
	for y := 0; y < im.Height; y++ {
		buf.Write(im.Row(y))
	}
	return buf.Bytes()
}

// readDjpegPNM reads the binary 8-bit PGM/PPM files djpeg writes (a
// minimal reader kept apart from pnm.go, for generating test data).
func readDjpegPNM(b []byte) (*zenmetrics.Image, error) {
	var fields []string
	i := 0
	for len(fields) < 4 && i < len(b) {
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
	i++ // the single whitespace byte after maxval
	if len(fields) != 4 || fields[3] != "255" {
		return nil, fmt.Errorf("unsupported PNM header %q", fields)
	}
	w, _ := strconv.Atoi(fields[1])
	h, _ := strconv.Atoi(fields[2])
	f := zenmetrics.RGB8
	if fields[0] == "P5" {
		f = zenmetrics.Gray8
	} else if fields[0] != "P6" {
		return nil, fmt.Errorf("unsupported PNM type %q", fields[0])
	}
	im := zenmetrics.NewImage(w, h, f)
	if len(b)-i < len(im.Pix) {
		return nil, fmt.Errorf("short PNM data")
	}
	copy(im.Pix, b[i:])
	return im, nil
}
