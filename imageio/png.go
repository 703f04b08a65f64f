package imageio

import (
	"encoding/binary"
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
)

// PNG colour types (IHDR byte 9).
const (
	pngGray      = 0
	pngRGB       = 2
	pngPalette   = 3
	pngGrayAlpha = 4
	pngRGBA      = 6
)

// pngHeader is IHDR plus whether a tRNS chunk comes before the image data.
// image/png loses the colour type (gray+alpha comes back as NRGBA, gray
// with tRNS as NRGBA, ...), so the layout is decided from these fields.
type pngHeader struct {
	width, height int
	depth, ctype  byte
	interlace     byte
	trns          bool
	idatBytes     int64 // IDAT payload present in the file
}

func (p pngHeader) format() zenmetrics.PixelFormat {
	wide := p.depth == 16
	switch p.ctype {
	case pngGray:
		switch {
		case wide && p.trns:
			return zenmetrics.GrayA16
		case wide:
			return zenmetrics.Gray16
		case p.trns:
			return zenmetrics.GrayA8
		}
		return zenmetrics.Gray8
	case pngRGB:
		switch {
		case wide && p.trns:
			return zenmetrics.RGBA16
		case wide:
			return zenmetrics.RGB16
		case p.trns:
			return zenmetrics.RGBA8
		}
		return zenmetrics.RGB8
	case pngPalette:
		if p.trns {
			return zenmetrics.RGBA8
		}
		return zenmetrics.RGB8
	case pngGrayAlpha:
		if wide {
			return zenmetrics.GrayA16
		}
		return zenmetrics.GrayA8
	case pngRGBA:
		if wide {
			return zenmetrics.RGBA16
		}
		return zenmetrics.RGBA8
	}
	return 0
}

// parseIHDR reads the IHDR chunk that must follow the signature. It needs
// only the first 33 bytes of the file.
func parseIHDR(data []byte) (pngHeader, error) {
	var p pngHeader
	d := data[len(magicPNG):]
	if len(d) < 8+13 {
		return p, fmt.Errorf("%w: png: truncated before the end of IHDR (%d bytes)", zenmetrics.ErrBadInput, len(data))
	}
	if binary.BigEndian.Uint32(d) != 13 || string(d[4:8]) != "IHDR" {
		return p, fmt.Errorf("%w: png: the first chunk is not a 13-byte IHDR", zenmetrics.ErrBadInput)
	}
	ih := d[8:21]
	w, h := binary.BigEndian.Uint32(ih[0:4]), binary.BigEndian.Uint32(ih[4:8])
	if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 {
		return p, fmt.Errorf("%w: png: invalid size %dx%d in IHDR", zenmetrics.ErrBadInput, w, h)
	}
	p.width, p.height = int(w), int(h)
	p.depth, p.ctype, p.interlace = ih[8], ih[9], ih[12]
	ok := false
	switch p.ctype {
	case pngGray:
		ok = p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8 || p.depth == 16
	case pngRGB, pngGrayAlpha, pngRGBA:
		ok = p.depth == 8 || p.depth == 16
	case pngPalette:
		ok = p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8
	}
	if !ok {
		return p, fmt.Errorf("%w: png: invalid colour type %d with bit depth %d", zenmetrics.ErrBadInput, p.ctype, p.depth)
	}
	if ih[10] != 0 || ih[11] != 0 || p.interlace > 1 {
		return p, fmt.Errorf("%w: png: invalid compression/filter/interlace method %d/%d/%d",
			zenmetrics.ErrBadInput, ih[10], ih[11], p.interlace)
	}
	return p, nil
}

// parsePNGHeader reads IHDR and walks the chunk list, noting whether a
// tRNS chunk comes before the first IDAT and adding up the IDAT bytes
// present (for checkPNGData). It does not check CRCs or chunk order:
// image/png does that when it decodes, and a file it refuses is refused
// either way.
func parsePNGHeader(data []byte) (pngHeader, error) {
	p, err := parseIHDR(data)
	if err != nil {
		return p, err
	}
	// Walk the chunks that follow IHDR (and its CRC).
	if len(data) < len(magicPNG)+8+13+4 {
		return p, fmt.Errorf("%w: png: truncated in the IHDR checksum (%d bytes)", zenmetrics.ErrBadInput, len(data))
	}
	rest := data[len(magicPNG)+8+13+4:]
	seenIDAT := false
	for len(rest) >= 8 {
		n := int64(binary.BigEndian.Uint32(rest))
		typ := string(rest[4:8])
		if typ == "IEND" {
			break
		}
		avail := min(n, int64(len(rest)-8))
		switch typ {
		case "IDAT":
			seenIDAT = true
			p.idatBytes += avail
		case "tRNS":
			if !seenIDAT {
				p.trns = true
			}
		}
		if n+12 > int64(len(rest)) {
			break // truncated; the decoder will say so
		}
		rest = rest[12+n:]
	}
	if p.trns && (p.ctype == pngGrayAlpha || p.ctype == pngRGBA) {
		// image/png refuses this too; say it plainly.
		return p, fmt.Errorf("%w: png: tRNS chunk in an image that already has an alpha channel", zenmetrics.ErrBadInput)
	}
	return p, nil
}
