package imageio

import (
	"github.com/zenmetrics-go/zenmetrics"
)

// pngRows turns unfiltered PNG rows into rows of the zenmetrics format
// that pngHeader.format chose. For most files (8- and 16-bit gray, gray
// plus alpha, RGB and RGBA without tRNS) a stored row already is the
// destination row, and conv is nil: the row is inflated into the image and
// unfiltered there. The others (palette, tRNS, 1-4 bit gray) go through
// one conv call per row; no per-pixel interface call is made anywhere.
type pngRows struct {
	w, h   int
	depth  int
	bits   int // bits per pixel as stored
	bpp    int // filter byte distance: max(1, bits/8)
	dbpp   int // destination bytes per pixel
	conv   func(r *pngRows, dst, src []byte, w int)
	scale  byte // 1-4 bit gray: multiplier to 8 bits
	ty     byte // gray tRNS value as image/png compares it (8 bits)
	tr     [3]byte
	ty16   [3]uint16 // 16-bit gray (ty16[0]) or RGB tRNS values
	idx    []byte    // 1-4 bit samples unpacked, one byte each
	lut    [256][4]byte
	format zenmetrics.PixelFormat
}

// newPNGRows prepares the row conversion for f, which must produce pf.
func newPNGRows(f *pngFile, pf zenmetrics.PixelFormat) (*pngRows, error) {
	h := f.hdr
	want := pngHeader{depth: h.depth, ctype: h.ctype, trns: f.hasTRNS}.format()
	if want != pf {
		// The header walk and the chunk walk disagree about tRNS: refuse
		// rather than return samples in the wrong layout.
		return nil, pngBad("inconsistent tRNS chunks")
	}
	r := &pngRows{w: h.width, h: h.height, depth: int(h.depth), dbpp: pf.BytesPerPixel(), format: pf}
	r.bits = r.depth * pngChannelCount(h.ctype)
	r.bpp = max(1, r.bits/8)
	switch h.ctype {
	case pngGray:
		switch h.depth {
		case 1:
			r.scale = 0xff
		case 2:
			r.scale = 0x55
		case 4:
			r.scale = 0x11
		default:
			r.scale = 1
		}
		switch {
		case h.depth == 16 && f.hasTRNS:
			r.ty16[0] = uint16(f.trns[0])<<8 | uint16(f.trns[1])
			r.conv = (*pngRows).gray16TRNS
		case h.depth == 16:
		case f.hasTRNS:
			// image/png scales the low byte of the stored value by the
			// same factor as the samples, in byte arithmetic.
			r.ty = f.trns[1] * r.scale
			r.conv = (*pngRows).grayTRNS
		case h.depth < 8:
			r.conv = (*pngRows).grayLow
		}
		if h.depth < 8 {
			r.idx = make([]byte, r.w)
		}
	case pngRGB:
		if f.hasTRNS {
			if h.depth == 16 {
				for c := range 3 {
					r.ty16[c] = uint16(f.trns[2*c])<<8 | uint16(f.trns[2*c+1])
				}
				r.conv = (*pngRows).rgb16TRNS
			} else {
				r.tr = [3]byte{f.trns[1], f.trns[3], f.trns[5]}
				r.conv = (*pngRows).rgbTRNS
			}
		}
	case pngPalette:
		for i := range r.lut {
			r.lut[i] = [4]byte{0, 0, 0, 0xff}
		}
		for i := 0; i+3 <= len(f.plte); i += 3 {
			r.lut[i/3] = [4]byte{f.plte[i], f.plte[i+1], f.plte[i+2], 0xff}
		}
		if f.hasTRNS {
			for i, a := range f.trns {
				r.lut[i][3] = a
			}
			r.conv = (*pngRows).paletteRGBA
		} else {
			r.conv = (*pngRows).paletteRGB
		}
		if h.depth < 8 {
			r.idx = make([]byte, r.w)
		}
	}
	return r, nil
}

func pngChannelCount(ctype byte) int {
	switch ctype {
	case pngRGB:
		return 3
	case pngGrayAlpha:
		return 2
	case pngRGBA:
		return 4
	}
	return 1
}

// rowBytes is the stored size of a row of w pixels, without its filter
// byte.
func (r *pngRows) rowBytes(w int) int { return (w*r.bits + 7) / 8 }

// rawSize is the length of the inflated stream: every row of every pass
// with its filter byte. A pass with no pixels has no rows (and no filter
// bytes) at all.
func (r *pngRows) rawSize(interlaced bool) int64 {
	if !interlaced {
		return int64(r.h) * int64(r.rowBytes(r.w)+1)
	}
	var n int64
	for _, p := range adam7 {
		pw, ph := adam7Size(r.w, r.h, p)
		if pw > 0 && ph > 0 {
			n += int64(ph) * int64(r.rowBytes(pw)+1)
		}
	}
	return n
}

// adam7 lists the interlace passes as x offset, y offset, x step, y step.
var adam7 = [7][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}

func adam7Size(w, h int, p [4]int) (pw, ph int) {
	return (w - p[0] + p[2] - 1) / p[2], (h - p[1] + p[3] - 1) / p[3]
}

// compactRows turns buf, which holds the h stored rows of n bytes each
// behind their filter bytes, into the h unfiltered rows packed from its
// start: row y moves back by y+1 bytes, onto bytes that rows before it no
// longer need and that are not yet row y+1's, and is unfiltered against
// row y-1, already in place. So a file whose stored rows are destination
// rows is decoded with no buffer beside the image.
func (r *pngRows) compactRows(buf []byte, n int) error {
	prev := make([]byte, n) // zeros above the first row
	for y := 0; y < r.h; y++ {
		src := buf[y*(n+1) : (y+1)*(n+1)]
		ft := src[0]
		row := buf[y*n : (y+1)*n]
		copy(row, src[1:])
		if err := unfilter(ft, row, prev, r.bpp); err != nil {
			return err
		}
		prev = row
	}
	return nil
}

// convertRows unfilters the stored rows in raw in place and converts each
// into im.
func (r *pngRows) convertRows(raw []byte, im *zenmetrics.Image) error {
	n := r.rowBytes(r.w)
	prev := make([]byte, n)
	for y := 0; y < r.h; y++ {
		row := raw[y*(n+1) : (y+1)*(n+1)]
		cur := row[1:]
		if err := unfilter(row[0], cur, prev, r.bpp); err != nil {
			return err
		}
		r.conv(r, im.Row(y)[:r.w*r.dbpp], cur, r.w)
		prev = cur
	}
	return nil
}

// convertAdam7 unfilters the seven passes of an interlaced image in raw,
// converts each row to the destination format and scatters its pixels
// into im.
func (r *pngRows) convertAdam7(raw []byte, im *zenmetrics.Image) error {
	zero := make([]byte, r.rowBytes(r.w))
	var tmp []byte
	if r.conv != nil {
		tmp = make([]byte, r.w*r.dbpp)
	}
	b := r.dbpp
	for _, p := range adam7 {
		pw, ph := adam7Size(r.w, r.h, p)
		if pw <= 0 || ph <= 0 {
			continue
		}
		n := r.rowBytes(pw)
		prev := zero[:n]
		for j := 0; j < ph; j++ {
			row := raw[:n+1]
			raw = raw[n+1:]
			cur := row[1:]
			if err := unfilter(row[0], cur, prev, r.bpp); err != nil {
				return err
			}
			prev = cur
			src := cur
			if r.conv != nil {
				r.conv(r, tmp[:pw*b], cur, pw)
				src = tmp
			}
			dst := im.Row(p[1] + j*p[3])
			for i, x := 0, p[0]; i < pw; i, x = i+1, x+p[2] {
				copy(dst[x*b:x*b+b], src[i*b:i*b+b])
			}
		}
	}
	return nil
}

// unpack spreads the w samples of a 1, 2 or 4 bit row into r.idx, one
// byte each, unscaled.
func (r *pngRows) unpack(src []byte, w int) []byte {
	out := r.idx[:w]
	d := uint(r.depth)
	per := 8 / int(d)
	x := 0
	for _, b := range src {
		for k := 0; k < per && x < w; k++ {
			out[x] = b >> (8 - d)
			b <<= d
			x++
		}
	}
	return out
}

func (r *pngRows) grayLow(dst, src []byte, w int) {
	for x, v := range r.unpack(src, w) {
		dst[x] = v * r.scale
	}
}

// grayTRNS writes gray plus alpha: alpha 0 where the (scaled) gray value
// equals the tRNS value, 255 elsewhere.
func (r *pngRows) grayTRNS(dst, src []byte, w int) {
	var s []byte
	if r.depth < 8 {
		s = r.unpack(src, w)
	} else {
		s = src[:w]
	}
	for x, v := range s {
		v *= r.scale
		a := byte(0xff)
		if v == r.ty {
			a = 0
		}
		dst[2*x], dst[2*x+1] = v, a
	}
}

func (r *pngRows) gray16TRNS(dst, src []byte, w int) {
	for x := 0; x < w; x++ {
		s := src[2*x : 2*x+2 : 2*x+2]
		d := dst[4*x : 4*x+4 : 4*x+4]
		a := byte(0xff)
		if uint16(s[0])<<8|uint16(s[1]) == r.ty16[0] {
			a = 0
		}
		d[0], d[1], d[2], d[3] = s[0], s[1], a, a
	}
}

func (r *pngRows) rgbTRNS(dst, src []byte, w int) {
	for x := 0; x < w; x++ {
		s := src[3*x : 3*x+3 : 3*x+3]
		d := dst[4*x : 4*x+4 : 4*x+4]
		a := byte(0xff)
		if s[0] == r.tr[0] && s[1] == r.tr[1] && s[2] == r.tr[2] {
			a = 0
		}
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], a
	}
}

func (r *pngRows) rgb16TRNS(dst, src []byte, w int) {
	for x := 0; x < w; x++ {
		s := src[6*x : 6*x+6 : 6*x+6]
		d := dst[8*x : 8*x+8 : 8*x+8]
		a := byte(0xff)
		if uint16(s[0])<<8|uint16(s[1]) == r.ty16[0] &&
			uint16(s[2])<<8|uint16(s[3]) == r.ty16[1] &&
			uint16(s[4])<<8|uint16(s[5]) == r.ty16[2] {
			a = 0
		}
		copy(d[:6], s)
		d[6], d[7] = a, a
	}
}

func (r *pngRows) paletteRGB(dst, src []byte, w int) {
	var s []byte
	if r.depth < 8 {
		s = r.unpack(src, w)
	} else {
		s = src[:w]
	}
	for x, v := range s {
		e := &r.lut[v]
		d := dst[3*x : 3*x+3 : 3*x+3]
		d[0], d[1], d[2] = e[0], e[1], e[2]
	}
}

func (r *pngRows) paletteRGBA(dst, src []byte, w int) {
	var s []byte
	if r.depth < 8 {
		s = r.unpack(src, w)
	} else {
		s = src[:w]
	}
	for x, v := range s {
		copy(dst[4*x:4*x+4], r.lut[v][:])
	}
}
