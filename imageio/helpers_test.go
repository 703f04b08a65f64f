package imageio

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// rawPNG describes a PNG written byte by byte, independently of the code
// under test, so that every colour type and bit depth can be produced.
type rawPNG struct {
	w, h      int
	ctype     byte
	depth     byte
	interlace bool
	// samples[y][x] holds the raw channel values as stored (palette index
	// for colour type 3), before any scaling.
	samples [][][]uint16
	plte    []byte // colour type 3
	trns    []byte // optional tRNS payload
	// chunksAfterIHDR are written before PLTE/tRNS (e.g. gAMA, tEXt).
	chunksAfterIHDR [][2]string
}

func pngChannels(ctype byte) int {
	switch ctype {
	case pngGray, pngPalette:
		return 1
	case pngGrayAlpha:
		return 2
	case pngRGB:
		return 3
	}
	return 4
}

func rawChunk(buf *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	buf.Write(n[:])
	buf.WriteString(typ)
	buf.Write(data)
	binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(append([]byte(typ), data...)))
	buf.Write(n[:])
}

// packRows appends filter-0 scanlines for the pixels (x0+i*dx, y0+j*dy).
func (p rawPNG) packRows(out *bytes.Buffer, x0, y0, dx, dy int) {
	ch := pngChannels(p.ctype)
	for y := y0; y < p.h; y += dy {
		if x0 >= p.w {
			return
		}
		out.WriteByte(0)
		var acc, nbits uint
		for x := x0; x < p.w; x += dx {
			for c := 0; c < ch; c++ {
				v := p.samples[y][x][c]
				switch p.depth {
				case 16:
					out.WriteByte(byte(v >> 8))
					out.WriteByte(byte(v))
				case 8:
					out.WriteByte(byte(v))
				default:
					acc = acc<<p.depth | uint(v)
					nbits += uint(p.depth)
					if nbits == 8 {
						out.WriteByte(byte(acc))
						acc, nbits = 0, 0
					}
				}
			}
		}
		if nbits > 0 {
			out.WriteByte(byte(acc << (8 - nbits)))
		}
	}
}

func (p rawPNG) encode() []byte {
	var buf bytes.Buffer
	buf.Write(magicPNG)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(p.w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(p.h))
	ihdr[8], ihdr[9] = p.depth, p.ctype
	if p.interlace {
		ihdr[12] = 1
	}
	rawChunk(&buf, "IHDR", ihdr[:])
	for _, c := range p.chunksAfterIHDR {
		rawChunk(&buf, c[0], []byte(c[1]))
	}
	if p.plte != nil {
		rawChunk(&buf, "PLTE", p.plte)
	}
	if p.trns != nil {
		rawChunk(&buf, "tRNS", p.trns)
	}
	var raw bytes.Buffer
	if p.interlace {
		passes := [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
		for _, ps := range passes {
			p.packRows(&raw, ps[0], ps[1], ps[2], ps[3])
		}
	} else {
		p.packRows(&raw, 0, 0, 1, 1)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	// Split the stream over two IDAT chunks to exercise chunk joining.
	zb := z.Bytes()
	half := len(zb) / 2
	rawChunk(&buf, "IDAT", zb[:half])
	rawChunk(&buf, "IDAT", zb[half:])
	rawChunk(&buf, "IEND", nil)
	return buf.Bytes()
}

// expected computes the image Decode must return, from the raw samples and
// the documented rules, without using any code under test.
func (p rawPNG) expected(t *testing.T) *zenmetrics.Image {
	t.Helper()
	maxRaw := uint16(1<<p.depth - 1)
	scale := func(v uint16) uint16 {
		if p.depth >= 8 {
			return v
		}
		return uint16(uint32(v) * 255 / uint32(maxRaw))
	}
	wide := p.depth == 16
	var f zenmetrics.PixelFormat
	hasT := p.trns != nil
	switch p.ctype {
	case pngGray:
		f = pick(wide, hasT, zenmetrics.Gray8, zenmetrics.GrayA8, zenmetrics.Gray16, zenmetrics.GrayA16)
	case pngRGB:
		f = pick(wide, hasT, zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.RGB16, zenmetrics.RGBA16)
	case pngPalette:
		f = pick(false, hasT, zenmetrics.RGB8, zenmetrics.RGBA8, 0, 0)
	case pngGrayAlpha:
		f = pick(wide, false, zenmetrics.GrayA8, 0, zenmetrics.GrayA16, 0)
	case pngRGBA:
		f = pick(wide, false, zenmetrics.RGBA8, 0, zenmetrics.RGBA16, 0)
	}
	im := zenmetrics.NewImage(p.w, p.h, f)
	full := uint16(f.MaxValue())
	for y := 0; y < p.h; y++ {
		for x := 0; x < p.w; x++ {
			s := p.samples[y][x]
			var out []uint16
			switch p.ctype {
			case pngPalette:
				i := int(s[0])
				r, g, b := uint16(0), uint16(0), uint16(0)
				if 3*i+2 < len(p.plte) {
					r, g, b = uint16(p.plte[3*i]), uint16(p.plte[3*i+1]), uint16(p.plte[3*i+2])
				}
				out = []uint16{r, g, b}
				if hasT {
					a := uint16(255)
					if i < len(p.trns) {
						a = uint16(p.trns[i])
					}
					out = append(out, a)
				}
			case pngGray, pngRGB:
				for _, v := range s {
					out = append(out, scale(v))
				}
				if hasT {
					match := true
					for c, v := range s {
						if binary.BigEndian.Uint16(p.trns[2*c:]) != v {
							match = false
						}
					}
					a := full
					if match {
						a = 0
					}
					out = append(out, a)
				}
			default:
				out = s
			}
			for c, v := range out {
				o := y*im.Stride + (x*f.Channels()+c)*f.BytesPerSample()
				if wide {
					im.Pix[o], im.Pix[o+1] = byte(v>>8), byte(v)
				} else {
					im.Pix[o] = byte(v)
				}
			}
		}
	}
	return im
}

func pick(wide, trns bool, a, b, c, d zenmetrics.PixelFormat) zenmetrics.PixelFormat {
	switch {
	case wide && trns:
		return d
	case wide:
		return c
	case trns:
		return b
	}
	return a
}

// randSamples fills w×h pixels of ch channels with values in [0, max],
// biased so that small values (and hence tRNS matches) occur often.
func randSamples(r *rand.Rand, w, h, ch int, max uint16) [][][]uint16 {
	s := make([][][]uint16, h)
	for y := range s {
		s[y] = make([][]uint16, w)
		for x := range s[y] {
			px := make([]uint16, ch)
			small := r.IntN(4) == 0
			for c := range px {
				if small {
					px[c] = uint16(r.IntN(min(int(max), 3) + 1))
				} else {
					px[c] = uint16(r.IntN(int(max) + 1))
				}
			}
			s[y][x] = px
		}
	}
	return s
}

// sameImage fails the test at the first differing sample.
func sameImage(t *testing.T, what string, got, want *zenmetrics.Image) {
	t.Helper()
	if got == nil || want == nil {
		t.Fatalf("%s: nil image (got %v, want %v)", what, got, want)
	}
	if got.Width != want.Width || got.Height != want.Height || got.Format != want.Format {
		t.Fatalf("%s: got %dx%d %v, want %dx%d %v", what, got.Width, got.Height, got.Format, want.Width, want.Height, want.Format)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for y := 0; y < got.Height; y++ {
		if !bytes.Equal(got.Row(y), want.Row(y)) {
			for x := 0; x < got.Width; x++ {
				for c := 0; c < got.Format.Channels(); c++ {
					if g, w := got.Sample(x, y, c), want.Sample(x, y, c); g != w {
						t.Fatalf("%s: sample (%d,%d) channel %d = %d, want %d", what, x, y, c, g, w)
					}
				}
			}
		}
	}
}

// mustTyped checks the error contract of Decode: an *InputError naming
// name that matches ErrBadInput or ErrUnsupported.
func mustTyped(t testing.TB, err error, name string) {
	t.Helper()
	var ie *zenmetrics.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not a *zenmetrics.InputError", err, err)
	}
	if ie.Path != name {
		t.Fatalf("error names %q, want %q", ie.Path, name)
	}
	if !errors.Is(err, zenmetrics.ErrBadInput) && !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("error %v matches neither ErrBadInput nor ErrUnsupported", err)
	}
}

func testdataFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(shared.Testdata(t, "imageio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testdataPaths(t testing.TB) []string {
	t.Helper()
	m, err := filepath.Glob(shared.Testdata(t, "imageio", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		if filepath.Ext(p) != ".md" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no files in testdata/imageio")
	}
	return out
}

func describe(p rawPNG) string {
	s := fmt.Sprintf("ct%d_d%d_%dx%d", p.ctype, p.depth, p.w, p.h)
	if p.trns != nil {
		s += "_trns"
	}
	if p.interlace {
		s += "_adam7"
	}
	return s
}
