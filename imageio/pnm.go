package imageio

import (
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
)

// Binary Netpbm: PGM (P5), PPM (P6) and PAM (P7), read as libjxl's PNM
// reader (lib/extras/dec/pnm.cc) reads them, with the strictness of the
// rest of this package.
//
// Header grammar (Netpbm's pgm(5), ppm(5) and pam(5) pages):
//
//	P5|P6  ws  width  ws  height  ws  maxval  one whitespace byte  raster
//	P7 \n  lines "KEYWORD value" (WIDTH HEIGHT DEPTH MAXVAL TUPLTYPE) ... "ENDHDR\n"  raster
//
// where ws is one or more of space, TAB, CR, LF, VT and FF, and a comment,
// '#' to the end of its line, may stand wherever whitespace may (after
// maxval it ends at the line break that delimits the raster, as libnetpbm
// reads it). The raster is rows of width × channels samples, one byte
// each when maxval ≤ 255, two (big-endian) above, top row first.
//
// Samples and maxval. zenmetrics.Image holds 8-bit samples as v/255 and
// 16-bit ones as v/65535. libjxl accepts a maxval of 2^n − 1 only (and
// refuses others with "unsupported MaxVal"), and reads its samples as
// n-bit values, v/(2^n − 1). So a file with maxval 255 or 65535 is kept
// exactly as stored, and one with maxval 1, 3 or 15 (1, 2 or 4 bits) is
// scaled to 8 bits by ×255, ×85 or ×17, which is exact (PNG's low bit
// depths are expanded the same way). Every other maxval is refused with
// ErrUnsupported: for 2^n − 1 at n = 3, 5, 6, 7 or 9..15 (10- and 12-bit
// files among them), v·255/maxval or v·65535/maxval is not an integer,
// so storing it in 8 or 16 bits would round the samples libjxl reads
// exactly; and a maxval that is not 2^n − 1 libjxl refuses itself
// (ImageMagick would rescale it with rounding, an invented answer here).
//
// Everything else a valid file may hold that this package does not read
// is refused with ErrUnsupported: plain (ASCII) formats P1-P3, PBM (P4),
// PFM (Pf/PF: zenmetrics.Image has no float format), PAM tuple types
// other than GRAYSCALE, GRAYSCALE_ALPHA, RGB and RGB_ALPHA, and headers
// longer than probePrefix. A stream of several images is refused as
// trailing data (ErrBadInput), as is any byte after the raster: with an
// exact size check a second whitespace byte after maxval (a common
// hand-written mistake that would shift every sample by one byte) cannot
// be mistaken for a valid raster. Messages name byte offsets and
// numbers, never the file's text (a PAM keyword or tuple type included),
// as everywhere in this package.

// FormatPNM is the format name of PGM, PPM and PAM files.
const FormatPNM = "pnm"

// pnmHeader is what a Netpbm header says.
type pnmHeader struct {
	kind     byte // '5', '6' or '7'
	w, h     int
	maxval   int
	channels int
	off      int   // offset of the raster
	raster   int64 // raster bytes: w·h·channels·(1 or 2)
}

func (p pnmHeader) format() zenmetrics.PixelFormat {
	f := [...]zenmetrics.PixelFormat{1: zenmetrics.Gray8, 2: zenmetrics.GrayA8, 3: zenmetrics.RGB8, 4: zenmetrics.RGBA8}[p.channels]
	if p.maxval > 255 {
		f += zenmetrics.Gray16 - zenmetrics.Gray8
	}
	return f
}

// maxPNMSide bounds a declared width or height before anything is
// multiplied: 2^31 − 1, so that w·h·8 fits int64 (the pixel limit then
// refuses anything near it).
const maxPNMSide = 1<<31 - 1

// pnmSniff reports whether data starts like a binary Netpbm file this
// package reads: "P5", "P6" or "P7" followed by whitespace.
func pnmSniff(data []byte) bool {
	return len(data) >= 3 && data[0] == 'P' && data[1] >= '5' && data[1] <= '7' && isPNMSpace(data[2])
}

func isPNMSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isLineBreak(c byte) bool { return c == '\n' || c == '\r' }

func pnmErr(format string, a ...any) error {
	return fmt.Errorf("%w: pnm: "+format, append([]any{zenmetrics.ErrBadInput}, a...)...)
}

func pnmUnsupported(format string, a ...any) error {
	return fmt.Errorf("%w: pnm: "+format, append([]any{zenmetrics.ErrUnsupported}, a...)...)
}

// pnmScanner walks a header held in data (a prefix of the file, or all of
// it); size is the whole file's length, for the messages.
type pnmScanner struct {
	data []byte
	pos  int
}

// errHeaderEnd is returned when the header runs past the bytes scanned:
// past probePrefix (a header that long is refused), or past the end of
// the file (truncated).
func (s *pnmScanner) endErr() error {
	if s.pos >= probePrefix {
		return pnmUnsupported("header longer than %d bytes (comments?) is not supported", probePrefix)
	}
	return pnmErr("truncated header")
}

// skipSpace skips whitespace and comments; it needs at least one byte of
// either unless optional.
func (s *pnmScanner) skipSpace(optional bool) error {
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case isPNMSpace(c):
			s.pos++
		case c == '#':
			for s.pos < len(s.data) && !isLineBreak(s.data[s.pos]) {
				s.pos++
			}
		default:
			if s.pos == start && !optional {
				return pnmErr("expected whitespace at byte %d", s.pos)
			}
			return nil
		}
	}
	return s.endErr()
}

// number reads a decimal unsigned integer of at most max.
func (s *pnmScanner) number(what string, max int) (int, error) {
	start := s.pos
	v := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		v = v*10 + int(s.data[s.pos]-'0')
		if v > max {
			return 0, pnmErr("%s is larger than %d", what, max)
		}
		s.pos++
	}
	if s.pos == start {
		if s.pos >= len(s.data) {
			return 0, s.endErr()
		}
		return 0, pnmErr("expected the %s (a decimal number) at byte %d", what, s.pos)
	}
	if s.pos >= len(s.data) {
		return 0, s.endErr()
	}
	return v, nil
}

// parsePNMHeader reads the header at the start of data (the first
// probePrefix bytes of a file, or more). The file's size is checked
// separately (checkFileSize), so that DecodeConfig works on a prefix, as
// it does for the other formats.
func parsePNMHeader(data []byte) (pnmHeader, error) {
	if len(data) > probePrefix {
		data = data[:probePrefix]
	}
	p := pnmHeader{kind: data[1]}
	s := &pnmScanner{data: data, pos: 2}
	var err error
	if p.kind == '7' {
		err = s.pamHeader(&p)
	} else {
		err = s.pnmHeader(&p)
	}
	if err != nil {
		return pnmHeader{}, err
	}
	p.off = s.pos
	if err := checkMaxval(p.maxval); err != nil {
		return pnmHeader{}, err
	}
	bps := int64(1)
	if p.maxval > 255 {
		bps = 2
	}
	// Sides are below 2^31, so w·h fits; bounding it keeps the product
	// with up to 8 bytes a pixel in range too (the pixel limit refuses far
	// less later).
	if px := int64(p.w) * int64(p.h); px > 1<<56 {
		return pnmHeader{}, pnmErr("a %d×%d image is too large", p.w, p.h)
	}
	p.raster = int64(p.w) * int64(p.h) * int64(p.channels) * bps
	return p, nil
}

// checkFileSize demands that a file of size bytes be exactly the header
// plus the raster: fewer is truncated, more is a second image or stray
// bytes (one more whitespace byte after maxval, say, which would
// otherwise shift every sample). Decode checks it before allocating,
// ProbeFile before reading past the header.
func (p pnmHeader) checkFileSize(size int64) error {
	if have := size - int64(p.off); have < p.raster {
		return pnmErr("truncated: the raster of a %d×%d image needs %d bytes after the %d-byte header, the file has %d",
			p.w, p.h, p.raster, p.off, have)
	} else if have > p.raster {
		return pnmErr("%d bytes after the raster of a %d×%d image (a second image, or extra whitespace after maxval, is not supported)",
			have-p.raster, p.w, p.h)
	}
	return nil
}

// pnmHeader reads a P5 or P6 header after its magic.
func (s *pnmScanner) pnmHeader(p *pnmHeader) error {
	p.channels = 1
	if p.kind == '6' {
		p.channels = 3
	}
	var err error
	for _, f := range []struct {
		dst  *int
		name string
		max  int
	}{{&p.w, "width", maxPNMSide}, {&p.h, "height", maxPNMSide}, {&p.maxval, "maxval", 65535}} {
		if err = s.skipSpace(false); err != nil {
			return err
		}
		if *f.dst, err = s.number(f.name, f.max); err != nil {
			return err
		}
	}
	// One whitespace byte ends the header; a comment there runs to the
	// line break that does (libnetpbm's pm_getc).
	if s.data[s.pos] == '#' {
		for s.pos < len(s.data) && !isLineBreak(s.data[s.pos]) {
			s.pos++
		}
		if s.pos >= len(s.data) {
			return s.endErr()
		}
	}
	if !isPNMSpace(s.data[s.pos]) {
		return pnmErr("expected one whitespace byte after maxval at byte %d", s.pos)
	}
	s.pos++
	return p.checkSize()
}

func (p *pnmHeader) checkSize() error {
	if p.w == 0 || p.h == 0 {
		return pnmErr("empty %d×%d image", p.w, p.h)
	}
	return nil
}

// checkMaxval applies the maxval rules of the comment at the top.
func checkMaxval(m int) error {
	switch m {
	case 0:
		return pnmErr("maxval 0")
	case 1, 3, 15, 255, 65535:
		return nil
	}
	if m&(m+1) == 0 {
		bits := 0
		for v := m; v > 0; v >>= 1 {
			bits++
		}
		target := 65535
		if m < 255 {
			target = 255
		}
		return pnmUnsupported("maxval %d (%d-bit samples) is not supported: images here are 8- or 16-bit and %d·v/%d would be rounded; convert to maxval 255 or 65535 (pamdepth)",
			m, bits, target, m)
	}
	return pnmUnsupported("maxval %d is not 2^n − 1 (libjxl refuses it too); convert to maxval 255 or 65535 (pamdepth)", m)
}

// pamHeader reads a P7 header after its magic: lines of a keyword and a
// value up to ENDHDR.
func (s *pnmScanner) pamHeader(p *pnmHeader) error {
	if !isLineBreak(s.data[s.pos]) {
		return pnmErr("expected a line break after P7")
	}
	seen := map[string]bool{}
	depth, tupl := -1, ""
	p.maxval = -1
	p.w, p.h = -1, -1
	for {
		// Blank lines, indentation and comment lines.
		if err := s.skipSpace(true); err != nil {
			return err
		}
		start := s.pos
		for s.pos < len(s.data) && !isPNMSpace(s.data[s.pos]) {
			s.pos++
		}
		if s.pos >= len(s.data) {
			return s.endErr()
		}
		key := string(s.data[start:s.pos])
		if key == "ENDHDR" {
			// ENDHDR's line ends the header: the raster starts after its
			// line break.
			if s.data[s.pos] == '\r' && s.pos+1 < len(s.data) && s.data[s.pos+1] == '\n' {
				s.pos++
			}
			if s.data[s.pos] != '\n' && s.data[s.pos] != '\r' {
				return pnmErr("expected a line break after ENDHDR")
			}
			s.pos++
			break
		}
		if seen[key] {
			return pnmErr("PAM header repeats a keyword (at byte %d)", start)
		}
		seen[key] = true
		// The value: the rest of the line, blanks trimmed.
		for s.pos < len(s.data) && (s.data[s.pos] == ' ' || s.data[s.pos] == '\t') {
			s.pos++
		}
		vs := s.pos
		for s.pos < len(s.data) && !isLineBreak(s.data[s.pos]) {
			s.pos++
		}
		if s.pos >= len(s.data) {
			return s.endErr()
		}
		val := s.data[vs:s.pos]
		for len(val) > 0 && (val[len(val)-1] == ' ' || val[len(val)-1] == '\t') {
			val = val[:len(val)-1]
		}
		var err error
		switch key {
		case "WIDTH":
			p.w, err = pamNumber(val, "WIDTH", maxPNMSide)
		case "HEIGHT":
			p.h, err = pamNumber(val, "HEIGHT", maxPNMSide)
		case "DEPTH":
			depth, err = pamNumber(val, "DEPTH", 4)
		case "MAXVAL":
			p.maxval, err = pamNumber(val, "MAXVAL", 65535)
		case "TUPLTYPE":
			tupl = string(val)
		default:
			return pnmErr("unknown PAM header keyword at byte %d", start)
		}
		if err != nil {
			return err
		}
	}
	if p.w < 0 || p.h < 0 || depth < 0 || p.maxval < 0 {
		return pnmErr("PAM header lacks one of WIDTH, HEIGHT, DEPTH and MAXVAL")
	}
	switch tupl {
	case "GRAYSCALE":
		p.channels = 1
	case "GRAYSCALE_ALPHA":
		p.channels = 2
	case "RGB", "":
		// No TUPLTYPE: RGB, as libjxl reads it (DEPTH must then be 3).
		p.channels = 3
	case "RGB_ALPHA":
		p.channels = 4
	default:
		return pnmUnsupported("PAM tuple type of %d bytes is not supported (only GRAYSCALE, GRAYSCALE_ALPHA, RGB and RGB_ALPHA)", len(tupl))
	}
	if depth != p.channels {
		return pnmErr("PAM DEPTH %d does not match the TUPLTYPE's %d channels (RGB when none is given)", depth, p.channels)
	}
	return p.checkSize()
}

// pamNumber parses a PAM header value: a decimal number of at most max.
func pamNumber(val []byte, key string, max int) (int, error) {
	if len(val) == 0 {
		return 0, pnmErr("PAM %s has no value", key)
	}
	v := 0
	for _, c := range val {
		if c < '0' || c > '9' {
			return 0, pnmErr("PAM %s is not a decimal number", key)
		}
		v = v*10 + int(c-'0')
		if v > max {
			return 0, pnmErr("PAM %s is larger than %d", key, max)
		}
	}
	return v, nil
}

// decodePNM copies (or, when owned, keeps) the raster as the image's
// pixels: the file's samples are already in zenmetrics.Image's layout
// (interleaved, tightly packed rows, 16-bit big-endian). owned says that
// data belongs to this package (DecodeFile's read buffer), so the image
// may point into it instead of copying. Low maxvals are scaled to 8 bits.
func decodePNM(data []byte, p pnmHeader, owned bool) (*zenmetrics.Image, error) {
	f := p.format()
	raster := data[p.off : int64(p.off)+p.raster : int64(p.off)+p.raster]
	im := &zenmetrics.Image{Width: p.w, Height: p.h, Format: f, Stride: p.w * f.BytesPerPixel()}
	switch {
	case p.maxval == 255 || p.maxval == 65535:
		if owned {
			im.Pix = raster
		} else {
			im.Pix = make([]byte, len(raster))
			copy(im.Pix, raster)
		}
	default:
		// 1, 3 or 15: scale by 255/maxval, exactly; a sample above maxval
		// is corrupt.
		var lut [256]byte
		mul := 255 / p.maxval
		for v := 0; v <= p.maxval; v++ {
			lut[v] = byte(v * mul)
		}
		pix := make([]byte, len(raster))
		for i, v := range raster {
			if int(v) > p.maxval {
				return nil, pnmErr("the sample at byte %d exceeds maxval %d", p.off+i, p.maxval)
			}
			pix[i] = lut[v]
		}
		im.Pix = pix
	}
	return im, nil
}
