package imageio

import (
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/zenmetrics-go/zenmetrics"
)

// EncodePNG writes im as a PNG in its own layout: Gray8/Gray16 as gray,
// GrayA8/GrayA16 as gray+alpha, RGB8/RGB16 as truecolour, RGBA8/RGBA16 as
// truecolour+alpha, at 8 or 16 bits. Samples are written unchanged
// (straight alpha, big-endian 16-bit), so Decode gives back exactly im.
// (image/png's encoder cannot write gray+alpha and picks its own colour
// type, hence this small encoder.)
func EncodePNG(w io.Writer, im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	var ctype byte
	switch im.Format.Channels() {
	case 1:
		ctype = pngGray
	case 2:
		ctype = pngGrayAlpha
	case 3:
		ctype = pngRGB
	case 4:
		ctype = pngRGBA
	}
	if im.Width > 1<<31-1 || im.Height > 1<<31-1 {
		return fmt.Errorf("%w: %dx%d is too large for PNG", zenmetrics.ErrUnsupported, im.Width, im.Height)
	}
	if _, err := w.Write(magicPNG); err != nil {
		return err
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(im.Width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(im.Height))
	ihdr[8] = byte(8 * im.Format.BytesPerSample())
	ihdr[9] = ctype
	if err := writeChunk(w, "IHDR", ihdr[:]); err != nil {
		return err
	}
	cw := &idatWriter{w: w, buf: make([]byte, 0, 1<<16)}
	zw, err := zlib.NewWriterLevel(cw, zlib.DefaultCompression)
	if err != nil {
		return err
	}
	bpp := im.Format.BytesPerPixel()
	n := im.Width * bpp
	prev := make([]byte, n) // the row above the first is zeros
	var cand [5][]byte
	for i := range cand {
		cand[i] = make([]byte, 1+n)
		cand[i][0] = byte(i)
	}
	for y := 0; y < im.Height; y++ {
		cur := im.Row(y)
		best := filterRow(cur, prev, bpp, &cand)
		if _, err := zw.Write(cand[best]); err != nil {
			return err
		}
		prev = cur
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := cw.flush(); err != nil {
		return err
	}
	return writeChunk(w, "IEND", nil)
}

// filterRow fills cand[f][1:] with row cur filtered by each of the five
// PNG filters and returns the one with the smallest sum of absolute
// (signed) bytes, the usual heuristic.
func filterRow(cur, prev []byte, bpp int, cand *[5][]byte) int {
	n := len(cur)
	none, sub, up, avg, paeth := cand[0][1:], cand[1][1:], cand[2][1:], cand[3][1:], cand[4][1:]
	var sums [5]int
	for i := 0; i < n; i++ {
		var a, c byte
		if i >= bpp {
			a, c = cur[i-bpp], prev[i-bpp]
		}
		x, b := cur[i], prev[i]
		none[i] = x
		sub[i] = x - a
		up[i] = x - b
		avg[i] = x - byte((int(a)+int(b))/2)
		paeth[i] = x - paethPredict(a, b, c)
		sums[0] += absSigned(none[i])
		sums[1] += absSigned(sub[i])
		sums[2] += absSigned(up[i])
		sums[3] += absSigned(avg[i])
		sums[4] += absSigned(paeth[i])
	}
	best := 0
	for f := 1; f < 5; f++ {
		if sums[f] < sums[best] {
			best = f
		}
	}
	return best
}

func absSigned(b byte) int {
	v := int(int8(b))
	if v < 0 {
		return -v
	}
	return v
}

func paethPredict(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := p-int(a), p-int(b), p-int(c)
	if pa < 0 {
		pa = -pa
	}
	if pb < 0 {
		pb = -pb
	}
	if pc < 0 {
		pc = -pc
	}
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func writeChunk(w io.Writer, typ string, data []byte) error {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, p := range [][]byte{hdr[:], data, tail[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// idatWriter cuts the zlib stream into IDAT chunks of up to cap(buf) bytes.
type idatWriter struct {
	w   io.Writer
	buf []byte
}

func (c *idatWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf = c.buf[:len(c.buf)+k]
		p = p[k:]
		if len(c.buf) == cap(c.buf) {
			if err := c.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (c *idatWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := writeChunk(c.w, "IDAT", c.buf)
	c.buf = c.buf[:0]
	return err
}
