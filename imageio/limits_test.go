package imageio

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/hostile"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// allocated returns the bytes the Go heap hands out while fn runs
// (runtime.MemStats.TotalAlloc, which counts every allocation, even one
// freed again at once). The package's tests do not run in parallel, so
// the delta is fn's plus a little testing noise.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// smallAlloc is the bound used for inputs that must be refused from their
// first bytes: 4 MiB, room for the probe's 4 KiB prefix, the decoders'
// tables and error values, and nothing proportional to a claimed image
// (the smallest claim tested is 400 MB).
const smallAlloc = 4 << 20

func mustBadInput(t *testing.T, err error, path string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", path)
	}
	var ie *zenmetrics.InputError
	if !errors.As(err, &ie) || ie.Path != path {
		t.Fatalf("%s: error %v (%T) is not an InputError naming the file", path, err, err)
	}
	if !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("%s: error %v does not wrap ErrBadInput", path, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", path, err, w)
		}
	}
}

// TestNotRegularFiles: a directory, FIFO, socket or device is refused at
// once by DecodeFile and ProbeFile, and a FIFO without a writer does not
// block (this test would hang until go test's timeout if it did).
func TestNotRegularFiles(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{"directory": dir}
	if runtime.GOOS != "windows" {
		fifo := filepath.Join(dir, "fifo.png")
		if err := mkfifo(fifo); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
		paths["FIFO"] = fifo
		sock := filepath.Join(dir, "s.png")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		defer l.Close()
		paths["socket"] = sock
		if _, err := os.Stat("/dev/zero"); err == nil {
			paths["character device"] = "/dev/zero"
		}
		// A symbolic link is followed: one to a FIFO is still refused.
		link := filepath.Join(dir, "link.png")
		if err := os.Symlink(paths["FIFO"], link); err != nil {
			t.Fatalf("symlink: %v", err)
		}
		paths["link to FIFO"] = link
	}
	for what, p := range paths {
		t.Run(what, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = DecodeFile(p) })
			t.Logf("%s: %d bytes allocated: %v", what, n, err)
			mustBadInput(t, err, p, "not a regular file")
			if !errors.Is(err, safeio.ErrNotRegular) {
				t.Errorf("error %v does not wrap safeio.ErrNotRegular", err)
			}
			if n > smallAlloc {
				t.Errorf("refusing %s allocated %d bytes, want ≤ %d", what, n, smallAlloc)
			}
			_, err = ProbeFile(p, Options{})
			mustBadInput(t, err, p, "not a regular file")
		})
	}
}

// TestHugeFileRefusedUnread: a 3 GB file (sparse, so the test writes
// almost nothing) is refused from its first bytes, whether its header is
// junk or a valid PNG header of a small image, without reading it: the
// heap grows by far less than the file.
func TestHugeFileRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.png")
	small := filepath.Join(dir, "small-header.png")
	header := hostile.ClaimingPNG(64, 64, 8, 2)[:33] // signature + IHDR
	for _, c := range []struct {
		path string
		head []byte
		want string
	}{
		{junk, nil, "unknown image format"},
		{small, header, "larger than any 64×64 image"},
	} {
		f, err := os.Create(c.path)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(c.head)
		if err := f.Truncate(3 << 30); err != nil {
			f.Close()
			t.Skipf("cannot make a 3 GB sparse file here: %v", err)
		}
		f.Close()
		var derr error
		n := allocated(func() { _, derr = DecodeFile(c.path) })
		t.Logf("3 GB file: %d bytes allocated: %v", n, derr)
		mustBadInput(t, derr, c.path, c.want)
		if n > smallAlloc {
			t.Errorf("%s: refusing a 3 GB file allocated %d bytes, want ≤ %d", c.path, n, smallAlloc)
		}
	}
}

// TestClaimedSizeNotAllocated: a 73-byte PNG (the issue had 68) whose IHDR claims
// 32768×32768 RGBA16 (8 GiB decoded; exactly at the default pixel limit,
// so only the data check can stop it) is refused as truncated with a
// few KiB allocated; so is a 1.5 KB lossy WebP patched to 16383².
func TestClaimedSizeNotAllocated(t *testing.T) {
	png := hostile.ClaimingPNG(32768, 32768, 16, 6)
	if len(png) > 100 {
		t.Fatalf("test file is %d bytes, expected a few dozen", len(png))
	}
	lossy, err := os.ReadFile("../testdata/imageio/lossy_64x48.webp")
	if err != nil {
		t.Fatal(err)
	}
	webp := hostile.PatchVP8Size(lossy, 16383, 16383)
	if webp == nil {
		t.Fatal("lossy_64x48.webp is not a simple VP8 file")
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"claim.png": png, "claim.webp": webp} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Decode(data, name, Options{}) })
			t.Logf("%d-byte file: %d bytes allocated: %v", len(data), n, err)
			mustBadInput(t, err, name, "truncated")
			if n > smallAlloc {
				t.Errorf("Decode allocated %d bytes, want ≤ %d", n, smallAlloc)
			}
			p := filepath.Join(dir, name)
			os.WriteFile(p, data, 0o644)
			n = allocated(func() { _, err = DecodeFile(p) })
			mustBadInput(t, err, p, "truncated")
			if n > smallAlloc {
				t.Errorf("DecodeFile allocated %d bytes, want ≤ %d", n, smallAlloc)
			}
		})
	}
}

// TestPixelLimit: Options.MaxPixels refuses from the header, in Decode,
// DecodeFile and ProbeFile alike.
func TestPixelLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.png")
	if err := hostile.WriteFlatPNG(p, 300, 200, 128); err != nil {
		t.Fatal(err)
	}
	opt := Options{MaxPixels: 300*200 - 1}
	_, err := DecodeFileOptions(p, opt)
	mustBadInput(t, err, p, "exceeds the limit of 59999 pixels")
	_, err = ProbeFile(p, opt)
	mustBadInput(t, err, p, "exceeds the limit")
	info, err := ProbeFile(p, Options{MaxPixels: 300 * 200})
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 300 || info.Height != 200 || info.Format != FormatPNG {
		t.Fatalf("ProbeFile = %+v", info)
	}
	im, err := DecodeFileOptions(p, Options{MaxPixels: 300 * 200})
	if err != nil {
		t.Fatal(err)
	}
	// DecodeBytes must bound what decoding really takes.
	if need := int64(len(im.Pix)); info.DecodeBytes < need {
		t.Fatalf("DecodeBytes %d < the decoded image's %d bytes", info.DecodeBytes, need)
	}
}

// TestProbeLargeFlatPNG: a 20000×20000 PNG of 1.5 MB is probed from its
// header (size and predicted decode memory) with a few KiB allocated.
func TestProbeLargeFlatPNG(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20000² PNG (about 1.5 s)")
	}
	p := filepath.Join(t.TempDir(), "huge.png")
	if err := hostile.WriteFlatPNG(p, 20000, 20000, 7); err != nil {
		t.Fatal(err)
	}
	var info Info
	var err error
	n := allocated(func() { info, err = ProbeFile(p, Options{}) })
	t.Logf("probe: %d bytes allocated: %+v", n, info)
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 20000 || info.Height != 20000 {
		t.Fatalf("ProbeFile = %+v", info)
	}
	// image/png's RGBA (4 B/px) plus the RGB8 result (3 B/px) at least.
	if info.DecodeBytes < 20000*20000*7 {
		t.Errorf("DecodeBytes %d is below what decoding takes", info.DecodeBytes)
	}
	if n > smallAlloc {
		t.Errorf("ProbeFile allocated %d bytes, want ≤ %d", n, smallAlloc)
	}
}

// patchJPEGSize rewrites the frame size in the SOF marker of a JPEG.
func patchJPEGSize(t *testing.T, data []byte, w, h uint16) []byte {
	t.Helper()
	out := append([]byte(nil), data...)
	for i := 2; i+9 < len(out); {
		if out[i] != 0xff {
			t.Fatal("lost the marker chain")
		}
		m := out[i+1]
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			out[i+5], out[i+6] = byte(h>>8), byte(h)
			out[i+7], out[i+8] = byte(w>>8), byte(w)
			return out
		}
		i += 2 + (int(out[i+2])<<8 | int(out[i+3]))
	}
	t.Fatal("no SOF marker")
	return nil
}

// TestClaimedSizeJPEG: a baseline and a progressive JPEG of a few KB
// patched to claim 30000×30000 (0.9 gigapixel, under the default limit)
// are refused as truncated from their size, with a few KiB allocated,
// before the decoder allocates the frame.
func TestClaimedSizeJPEG(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"jpeg420_67x45.jpg", "jpegprog_64x48.jpg"} {
		data, err := os.ReadFile(filepath.Join("../testdata/imageio", name))
		if err != nil {
			t.Fatal(err)
		}
		big := patchJPEGSize(t, data, 30000, 30000)
		var derr error
		n := allocated(func() { _, derr = Decode(big, name, Options{}) })
		t.Logf("%s (%d bytes) claiming 30000²: %d bytes allocated: %v", name, len(big), n, derr)
		mustBadInput(t, derr, name, "truncated")
		if n > smallAlloc {
			t.Errorf("%s: Decode allocated %d bytes, want ≤ %d", name, n, smallAlloc)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, big, 0o644)
		n = allocated(func() { _, derr = DecodeFile(p) })
		mustBadInput(t, derr, p, "truncated")
		if n > smallAlloc {
			t.Errorf("%s: DecodeFile allocated %d bytes, want ≤ %d", name, n, smallAlloc)
		}
	}
}
