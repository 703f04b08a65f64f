package jpegturbo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// A minimal baseline JPEG writer for the colour-space cases cjpeg cannot
// make (CMYK, YCCK, Adobe transform flags, 3-component files without JFIF
// and chosen component IDs, 2 components). Its quality does not matter:
// djpeg decodes the very same file and is the oracle.

type encComp struct {
	id, h, v int
}

type encOpts struct {
	comps []encComp
	jfif  bool
	adobe int // -1: no Adobe APP14 marker
}

type bitWriter struct {
	buf  bytes.Buffer
	acc  uint32
	nacc uint
}

func (b *bitWriter) put(code uint32, n uint) {
	for i := int(n) - 1; i >= 0; i-- {
		b.acc = b.acc<<1 | (code>>uint(i))&1
		b.nacc++
		if b.nacc == 8 {
			c := byte(b.acc)
			b.buf.WriteByte(c)
			if c == 0xff {
				b.buf.WriteByte(0)
			}
			b.acc, b.nacc = 0, 0
		}
	}
}

func (b *bitWriter) flush() {
	for b.nacc != 0 {
		b.put(1, 1)
	}
}

// huffCodes derives the canonical codes of a DHT table.
func huffCodes(counts [17]int, vals []byte) (code [256]uint32, size [256]uint) {
	c, k := uint32(0), 0
	for l := 1; l <= 16; l++ {
		for i := 0; i < counts[l]; i++ {
			code[vals[k]], size[vals[k]] = c, uint(l)
			c++
			k++
		}
		c <<= 1
	}
	return
}

func magnitude(v int) (uint32, uint) {
	a := v
	if a < 0 {
		a = -a
	}
	n := uint(0)
	for a > 0 {
		n++
		a >>= 1
	}
	if v < 0 {
		v += 1<<n - 1
	}
	return uint32(v), n
}

// encodeBaseline writes a w×h baseline JPEG whose component ci has the
// samples sample(ci, x, y) (in that component's downsampled grid).
func encodeBaseline(w, h int, o encOpts, sample func(ci, x, y int) int) []byte {
	var out bytes.Buffer
	seg := func(m byte, p []byte) {
		out.Write([]byte{0xff, m, byte((len(p) + 2) >> 8), byte(len(p) + 2)})
		out.Write(p)
	}
	out.Write([]byte{0xff, 0xd8})
	if o.jfif {
		seg(0xe0, []byte("JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"))
	}
	if o.adobe >= 0 {
		seg(0xee, []byte{'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, byte(o.adobe)})
	}
	var q [64]int
	dqt := []byte{0}
	for i := range q {
		q[i] = 3 + i/8
		dqt = append(dqt, byte(q[naturalOrder[i]]))
	}
	seg(0xdb, dqt)
	maxH, maxV := 1, 1
	for _, c := range o.comps {
		maxH, maxV = max(maxH, c.h), max(maxV, c.v)
	}
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(len(o.comps))}
	for _, c := range o.comps {
		sof = append(sof, byte(c.id), byte(c.h<<4|c.v), 0)
	}
	seg(0xc0, sof)
	dht := []byte{0x00}
	for l := 1; l <= 16; l++ {
		dht = append(dht, byte(stdDCLumCounts[l]))
	}
	dht = append(dht, stdDCVals...)
	dht = append(dht, 0x10)
	for l := 1; l <= 16; l++ {
		dht = append(dht, byte(stdACLumCounts[l]))
	}
	dht = append(dht, stdACLumVals...)
	seg(0xc4, dht)
	sos := []byte{byte(len(o.comps))}
	for _, c := range o.comps {
		sos = append(sos, byte(c.id), 0x00)
	}
	sos = append(sos, 0, 63, 0)
	seg(0xda, sos)
	dcCode, dcSize := huffCodes(stdDCLumCounts, stdDCVals)
	acCode, acSize := huffCodes(stdACLumCounts, stdACLumVals)
	var bw bitWriter
	pred := make([]int, len(o.comps))
	mcusX, mcusY := ceilDiv(w, maxH*8), ceilDiv(h, maxV*8)
	for my := 0; my < mcusY; my++ {
		for mx := 0; mx < mcusX; mx++ {
			for ci, c := range o.comps {
				dsW, dsH := ceilDiv(w*c.h, maxH), ceilDiv(h*c.v, maxV)
				for by := 0; by < c.v; by++ {
					for bx := 0; bx < c.h; bx++ {
						var blk [64]float64
						for y := 0; y < 8; y++ {
							for x := 0; x < 8; x++ {
								sx := min((mx*c.h+bx)*8+x, dsW-1)
								sy := min((my*c.v+by)*8+y, dsH-1)
								blk[y*8+x] = float64(sample(ci, sx, sy) - 128)
							}
						}
						var coef [64]int
						for u := 0; u < 8; u++ {
							for v := 0; v < 8; v++ {
								s := 0.0
								for y := 0; y < 8; y++ {
									for x := 0; x < 8; x++ {
										s += blk[y*8+x] * math.Cos(float64(2*x+1)*float64(v)*math.Pi/16) *
											math.Cos(float64(2*y+1)*float64(u)*math.Pi/16)
									}
								}
								cu, cv := 1.0, 1.0
								if u == 0 {
									cu = 1 / math.Sqrt2
								}
								if v == 0 {
									cv = 1 / math.Sqrt2
								}
								coef[u*8+v] = int(math.Round(s * cu * cv / 4 / float64(q[u*8+v])))
							}
						}
						diff := coef[0] - pred[ci]
						pred[ci] = coef[0]
						bits, n := magnitude(diff)
						bw.put(dcCode[n], dcSize[n])
						bw.put(bits, n)
						run := 0
						for k := 1; k < 64; k++ {
							a := coef[naturalOrder[k]]
							if a == 0 {
								run++
								continue
							}
							for run > 15 {
								bw.put(acCode[0xf0], acSize[0xf0])
								run -= 16
							}
							bits, n := magnitude(a)
							sym := byte(run<<4) | byte(n)
							bw.put(acCode[sym], acSize[sym])
							bw.put(bits, n)
							run = 0
						}
						if run > 0 {
							bw.put(acCode[0], acSize[0])
						}
					}
				}
			}
		}
	}
	bw.flush()
	out.Write(bw.buf.Bytes())
	out.Write([]byte{0xff, 0xd9})
	return out.Bytes()
}

// TestColorSpacesMatchDjpeg covers libjpeg's colour-space guesses
// (jdapimin.c default_decompress_parms) and the CMYK/YCCK conversions.
// djpeg writes CMYK as RGB through cdjpeg's cmyk_to_rgb, so for 4-component
// files the comparison goes through that projection (checkAgainstDjpeg);
// TestYCCKInvertsLikeYCbCr checks the raw CMYK samples of YCCK files more
// directly.
func TestColorSpacesMatchDjpeg(t *testing.T) {
	needTools(t)
	ycc := []encComp{{1, 2, 2}, {2, 1, 1}, {3, 1, 1}}
	rgbIDs := []encComp{{'R', 1, 1}, {'G', 1, 1}, {'B', 1, 1}}
	other := []encComp{{7, 1, 1}, {8, 1, 1}, {9, 1, 1}}
	four := []encComp{{1, 2, 2}, {2, 1, 1}, {3, 1, 1}, {4, 2, 2}}
	four11 := []encComp{{1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {4, 1, 1}}
	cases := []struct {
		name   string
		o      encOpts
		jcolor string
	}{
		{"jfif ycc", encOpts{ycc, true, -1}, "YCbCr"},
		{"ids 1 2 3", encOpts{ycc, false, -1}, "YCbCr"},
		{"ids R G B", encOpts{rgbIDs, false, -1}, "RGB"},
		{"other ids", encOpts{other, false, -1}, "YCbCr"},
		{"adobe 0", encOpts{other, false, 0}, "RGB"},
		{"adobe 1", encOpts{rgbIDs, false, 1}, "YCbCr"},
		{"adobe 7", encOpts{other, false, 7}, "YCbCr"},
		{"jfif and adobe 0", encOpts{rgbIDs, true, 0}, "YCbCr"},
		{"cmyk no adobe", encOpts{four11, false, -1}, "CMYK"},
		{"cmyk adobe 0", encOpts{four, false, 0}, "CMYK"},
		{"ycck adobe 2", encOpts{four, false, 2}, "YCCK"},
		{"ycck adobe 1", encOpts{four11, false, 1}, "YCCK"},
	}
	for _, c := range cases {
		for _, sz := range []sizeCase{{1, 1}, {17, 9}, {33, 31}} {
			data := encodeBaseline(sz.w, sz.h, c.o, func(ci, x, y int) int {
				return (x*37 + y*23 + ci*71 + (x*y)%13*9) & 255
			})
			name := fmt.Sprintf("%s %dx%d", c.name, sz.w, sz.h)
			cfg, err := DecodeConfig(data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if cfg.JPEGColor != c.jcolor {
				t.Errorf("%s: colour space %s, want %s", name, cfg.JPEGColor, c.jcolor)
			}
			checkAgainstDjpeg(t, name, data)
		}
	}
	// Two components: libjpeg knows no colour space for them.
	two := encodeBaseline(8, 8, encOpts{[]encComp{{1, 1, 1}, {2, 1, 1}}, false, -1}, func(ci, x, y int) int { return 100 })
	if _, err := Decode(two, Limits{}); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("2-component file: %v, want ErrUnsupported", err)
	}
}

// TestYCCKInvertsLikeYCbCr: a YCCK file's C, M, Y samples are 255 minus the
// RGB that the same Y, Cb, Cr planes give in a 3-component YCbCr file
// (decoded with identical upsampling), and K passes through; the YCbCr
// file itself is checked against djpeg.
func TestYCCKInvertsLikeYCbCr(t *testing.T) {
	needTools(t)
	f := func(ci, x, y int) int { return (x*29 + y*41 + ci*53 + (x^y)*3) & 255 }
	ycck := encodeBaseline(19, 11, encOpts{[]encComp{{1, 2, 2}, {2, 1, 1}, {3, 1, 1}, {4, 2, 2}}, false, 2}, f)
	ycc := encodeBaseline(19, 11, encOpts{[]encComp{{1, 2, 2}, {2, 1, 1}, {3, 1, 1}}, true, -1}, f)
	checkAgainstDjpeg(t, "ycc twin", ycc)
	a, err := Decode(ycck, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(ycc, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 19*11; i++ {
		for c := 0; c < 3; c++ {
			if a.Pix[4*i+c] != 255-b.Pix[3*i+c] {
				t.Fatalf("pixel %d channel %d: YCCK gives %d, 255-RGB %d", i, c, a.Pix[4*i+c], 255-b.Pix[3*i+c])
			}
		}
	}
}
