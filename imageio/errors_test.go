package imageio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

func TestTruncated(t *testing.T) {
	for _, p := range testdataPaths(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		cuts := []int{0, 1, 7, 8, 16, 30, len(data) / 4, len(data) / 2, len(data) * 9 / 10, len(data) - 8}
		for _, n := range cuts {
			if n < 0 || n >= len(data) {
				continue
			}
			im, err := Decode(data[:n], name, Options{})
			if err == nil {
				t.Errorf("%s cut to %d of %d bytes decoded to %dx%d", name, n, len(data), im.Width, im.Height)
				continue
			}
			mustTyped(t, err, name)
			if !errors.Is(err, zenmetrics.ErrBadInput) {
				t.Errorf("%s cut to %d bytes: %v does not match ErrBadInput", name, n, err)
			}
		}
	}
}

// TestCorruptPNG: a wrong CRC is reported as such; a flipped byte inside
// IDAT (CRC fixed up) breaks the zlib stream or the filter bytes. Either
// way ErrBadInput, with the decoder's own message kept.
func TestCorruptPNG(t *testing.T) {
	data := testdataFile(t, "src_rgb_67x45.png")
	// Find the first IDAT.
	off := 8
	for string(data[off+4:off+8]) != "IDAT" {
		off += 12 + int(binary.BigEndian.Uint32(data[off:]))
	}
	n := int(binary.BigEndian.Uint32(data[off:]))
	bad := bytes.Clone(data)
	bad[off+8+n] ^= 0x55 // first CRC byte
	_, err := Decode(bad, "crc.png", Options{})
	mustTyped(t, err, "crc.png")
	if !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("bad CRC: %v", err)
	}
	bad = bytes.Clone(data)
	bad[off+8+n/2] ^= 0x55
	binary.BigEndian.PutUint32(bad[off+8+n:], crc32.ChecksumIEEE(bad[off+4:off+8+n]))
	_, err = Decode(bad, "zlib.png", Options{})
	mustTyped(t, err, "zlib.png")
	if !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("corrupt zlib: %v", err)
	}
}

// TestCorruptBytes flips bytes all over every test file: the result must be
// a valid image matching the header or a typed error, never a panic.
func TestCorruptBytes(t *testing.T) {
	for _, p := range testdataPaths(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		for i := 0; i < len(data); i += max(1, len(data)/97) {
			bad := bytes.Clone(data)
			bad[i] ^= 0xa5
			checkDecodeContract(t, bad, name)
		}
	}
}

// checkDecodeContract is what FuzzDecode asserts.
func checkDecodeContract(t testing.TB, data []byte, name string) {
	t.Helper()
	im, err := Decode(data, name, Options{MaxPixels: 1 << 22})
	if err != nil {
		if im != nil {
			t.Fatalf("Decode returned both an image and %v", err)
		}
		mustTyped(t, err, name)
		return
	}
	if err := im.Validate(); err != nil {
		t.Fatalf("Decode returned an invalid image: %v", err)
	}
	w, h, f, _, err := DecodeConfig(data, name)
	if err != nil || w != im.Width || h != im.Height || f != im.Format {
		t.Fatalf("DecodeConfig = %d %d %v %v, but Decode gave %dx%d %v", w, h, f, err, im.Width, im.Height, im.Format)
	}
}

func TestUnknownFormat(t *testing.T) {
	_, err := Decode([]byte("hello, world: not an image"), "note.txt", Options{})
	mustTyped(t, err, "note.txt")
	if !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("unknown format: %v", err)
	}
	for _, want := range []string{"note.txt", "unknown image format"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// The file's content must not reach the message (issue #21: a path
	// naming /etc/shadow must not print its first bytes).
	for _, leak := range []string{"hello", "68 65 6c", "world"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error %q quotes the file's content (%q)", err, leak)
		}
	}
	_, err = Decode(nil, "empty.png", Options{})
	mustTyped(t, err, "empty.png")
	if !strings.Contains(err.Error(), "empty file") {
		t.Errorf("empty file: %v", err)
	}
	// Recognised but unsupported formats say what they are.
	for name, data := range map[string][]byte{
		"a.gif": []byte("GIF89a\x01\x00\x01\x00"),
		"a.jxl": {0xff, 0x0a, 0, 0},
		"a.bmp": []byte("BM\x00\x00\x00\x00"),
	} {
		_, err := Decode(data, name, Options{})
		mustTyped(t, err, name)
		if !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}

// hugePNG is a well-formed PNG header declaring w×h RGBA8 pixels, followed
// by a tiny IDAT and IEND.
func hugePNG(w, h uint32) []byte {
	var buf bytes.Buffer
	buf.Write(magicPNG)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, pngRGBA
	rawChunk(&buf, "IHDR", ihdr[:])
	rawChunk(&buf, "IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	rawChunk(&buf, "IEND", nil)
	return buf.Bytes()
}

func TestOverLimitAllocatesNothing(t *testing.T) {
	data := hugePNG(100000, 100000)
	w, h, f, _, err := DecodeConfig(data, "huge.png")
	if err != nil || w != 100000 || h != 100000 || f != zenmetrics.RGBA8 {
		t.Fatalf("DecodeConfig = %d %d %v %v", w, h, f, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Decode(data, "huge.png", Options{})
	runtime.ReadMemStats(&after)
	mustTyped(t, err, "huge.png")
	if !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("over-limit: %v", err)
	}
	for _, want := range []string{"100000×100000", "1073741824"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("refusing a 100000×100000 header allocated %d bytes", grew)
	}
}

func TestMaxPixelsOption(t *testing.T) {
	for _, name := range []string{"src_rgb_67x45.png", "jpeg420_67x45.jpg", "lossy_67x45.webp", "lossless_67x45.webp"} {
		data := testdataFile(t, name)
		if _, err := Decode(data, name, Options{MaxPixels: 67 * 45}); err != nil {
			t.Errorf("%s at exactly the limit: %v", name, err)
		}
		_, err := Decode(data, name, Options{MaxPixels: 67*45 - 1})
		mustTyped(t, err, name)
		if !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "67×45") {
			t.Errorf("%s over the limit: %v", name, err)
		}
	}
}

func TestDecodeFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.png")
	_, err := DecodeFile(missing)
	mustTyped(t, err, missing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v does not match fs.ErrNotExist", err)
	}
	if strings.Count(err.Error(), missing) != 1 {
		t.Errorf("path repeated or absent in %q", err)
	}
	dir := t.TempDir()
	_, err = DecodeFile(dir)
	mustTyped(t, err, dir)
}

func TestPanicBecomesError(t *testing.T) {
	f := func() (err error) {
		defer recoverInto("boom.png", &err)
		var s []int
		_ = s[3]
		return nil
	}
	err := f()
	mustTyped(t, err, "boom.png")
	var pe *zenmetrics.PanicError
	if !errors.As(err, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("panic error %v does not carry a *zenmetrics.PanicError with a stack", err)
	}
}

func TestTinyCorpusDecodes(t *testing.T) {
	files, err := filepath.Glob(shared.Testdata(t, "tiny", "*.png"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/tiny PNGs: %v", err)
	}
	for _, p := range files {
		im, err := DecodeFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := zenmetrics.RGB8
		if strings.HasPrefix(filepath.Base(p), "camera") {
			want = zenmetrics.Gray8 // the corpus README: camera is 8-bit gray
		}
		if im.Format != want {
			t.Errorf("%s: %v, want %v", p, im.Format, want)
		}
	}
}

func TestSharedCorpusDecodes(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes ~100 MB of PNG")
	}
	dir := shared.Dir(t, "corpus")
	table, err := shared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string][2]string{}
	for r := range table.Rows {
		for _, col := range []string{"ref", "dist"} {
			sizes[filepath.Base(table.Get(r, col))] = [2]string{table.Get(r, "width"), table.Get(r, "height")}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "images", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus images: %v", err)
	}
	for _, p := range files {
		im, err := DecodeFile(p)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if s, ok := sizes[filepath.Base(p)]; ok {
			if got := [2]string{strconv.Itoa(im.Width), strconv.Itoa(im.Height)}; got != s {
				t.Errorf("%s: %v, scores.tsv says %v", p, got, s)
			}
		}
		if strings.HasPrefix(filepath.Base(p), "tulips_alpha") && im.Format != zenmetrics.RGBA8 {
			t.Errorf("%s: %v, want rgba8", p, im.Format)
		}
	}
}
