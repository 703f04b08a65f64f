package imageio

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestJPEGFilesMatchDjpeg goes through the file path (ProbeFile, then
// DecodeFile) for the coding modes image/jpeg never read (arithmetic
// coding among them) and compares with djpeg's PNM output, tolerance 0.
func TestJPEGFilesMatchDjpeg(t *testing.T) {
	for _, tool := range []string{"cjpeg", "djpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found (CI installs libjpeg-turbo-progs)", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
	src := testdataFile(t, "src_rgb_67x45.png")
	im, err := Decode(src, "src", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ppm := append([]byte("P6\n67 45\n255\n"), im.Pix[:67*45*3]...)
	dir := t.TempDir()
	for i, mode := range []string{"-sample 2x2", "-arithmetic", "-arithmetic -progressive -sample 1x2", "-progressive -restart 1 -sample 2x1", "-grayscale -arithmetic", "-rgb"} {
		cmd := exec.Command("cjpeg", strings.Fields(mode)...)
		cmd.Stdin = bytes.NewReader(ppm)
		jpg, err := cmd.Output()
		if err != nil {
			t.Fatalf("cjpeg %s: %v", mode, err)
		}
		path := filepath.Join(dir, string(rune('a'+i))+".jpg")
		if err := os.WriteFile(path, jpg, 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := ProbeFile(path, Options{})
		if err != nil || info.Width != 67 || info.Height != 45 || info.Format != FormatJPEG {
			t.Fatalf("%s: ProbeFile %+v, %v", mode, info, err)
		}
		got, err := DecodeFile(path)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		cmd = exec.Command("djpeg", path)
		pnm, err := cmd.Output()
		if err != nil {
			t.Fatalf("djpeg %s: %v", mode, err)
		}
		f := zenmetrics.RGB8
		if pnm[1] == '5' {
			f = zenmetrics.Gray8
		}
		want := &zenmetrics.Image{Width: 67, Height: 45, Format: f, Stride: 67 * f.BytesPerPixel()}
		want.Pix = pnm[len(pnm)-67*45*f.BytesPerPixel():]
		sameImage(t, mode, got, want)
	}
}
