package imageio

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/zenmetrics-go/zenmetrics"
)

// This file holds the PNG decoder that Decode uses. It replaces image/png
// because image/png spends more than half of a large photo's decode time
// outside inflate: it fills an image.RGBA through per-pixel loops that
// imageio then repacks to RGB8, and it inflates with compress/flate. Here
// the rows are inflated with klauspost/compress (faster on the same
// streams), unfiltered in place by loops specialised per filter and pixel
// size, and written straight into the zenmetrics layout Decode returns, so
// an 8-bit RGB file is never held as RGBA.
//
// What it accepts and what it gives back is image/png's behaviour, sample
// for sample (TestPNGMatchesImagePNG, FuzzPNGAgainstImagePNG):
//   - chunk order, chunk lengths and every CRC up to IEND are checked with
//     image/png's rules (PLTE before IDAT for palette images, tRNS between
//     IHDR/PLTE and IDAT, IDAT runs, trailing IDAT chunks ignored, nothing
//     read after IEND);
//   - palette indices past the palette read as opaque black; a tRNS longer
//     than PLTE gives black entries with those alphas;
//   - gray and truecolour tRNS compare only the low byte of each stored
//     value for 8-bit and smaller depths, and the scaled value for 1-4 bit
//     gray (image/png multiplies the byte, wrapping), the full 16 bits for
//     16-bit images;
//   - the zlib stream must hold exactly the image's rows (more decompressed
//     data is an error) and end with a valid Adler-32.
//
// One deliberate difference: bytes left in the IDAT chunks after the end of
// the zlib stream are ignored. image/png refuses them or not depending on
// how its 4 KiB read buffer happened to fall across the chunk boundaries
// ("too much pixel data"), which is not a rule that can be written down;
// libpng ignores them too. So every file image/png decodes is decoded here
// to the same pixels, and a few it refuses for trailing garbage are not.

// PNG chunk-order stages, in the order they must come (image/png's).
const (
	stStart = iota
	stIHDR
	stPLTE
	stTRNS
	stIDAT
	stIEND
)

// pngFile is what the chunk walk keeps of a PNG for decoding: slices of
// data, nothing copied.
type pngFile struct {
	hdr     pngHeader
	plte    []byte  // PLTE payload of a palette image
	trns    []byte  // tRNS payload, valid for the colour type
	hasTRNS bool    // a tRNS chunk came before IDAT
	idat    idatRun // the first run of consecutive IDAT chunks
}

func pngBad(format string, a ...any) error {
	return fmt.Errorf("%w: png: "+format, append([]any{zenmetrics.ErrBadInput}, a...)...)
}

var errPNGTruncated = fmt.Errorf("%w: png: truncated file: %w", zenmetrics.ErrBadInput, io.ErrUnexpectedEOF)

// walkPNG checks every chunk from IHDR to IEND (order, lengths, CRCs) as
// image/png does and returns what decoding needs. It allocates nothing:
// the IDAT chunks are walked again by idatRun rather than listed, since a
// hostile file may hold millions of empty ones.
func walkPNG(data []byte, hdr pngHeader) (pngFile, error) {
	f := pngFile{hdr: hdr}
	if len(data) < len(magicPNG) || string(data[:len(magicPNG)]) != string(magicPNG) {
		return f, pngBad("not a PNG file")
	}
	rest := data[len(magicPNG):]
	paletted := hdr.ctype == pngPalette
	stage := stStart
	inRun := false // the previous chunk was part of the first IDAT run
	for stage != stIEND {
		if len(rest) < 8 {
			return f, errPNGTruncated
		}
		n := uint64(binary.BigEndian.Uint32(rest))
		typ := rest[4:8]
		if n+12 > uint64(len(rest)) {
			return f, errPNGTruncated
		}
		body := rest[8 : 8+n]
		want := binary.BigEndian.Uint32(rest[8+n:])
		if crc32.Update(crc32.ChecksumIEEE(typ), crc32.IEEETable, body) != want {
			return f, pngBad("invalid checksum in %s chunk", chunkName(typ))
		}
		chunk := rest
		rest = rest[12+n:]
		wasRun := inRun
		inRun = false
		switch string(typ) {
		case "IHDR":
			if stage != stStart {
				return f, pngBad("chunk out of order")
			}
			if n != 13 {
				return f, pngBad("bad IHDR length")
			}
			stage = stIHDR
		case "PLTE":
			if stage != stIHDR {
				return f, pngBad("chunk out of order")
			}
			stage = stPLTE
			np := n / 3
			if n%3 != 0 || np == 0 || np > 256 || np > 1<<hdr.depth {
				return f, pngBad("bad PLTE length")
			}
			switch hdr.ctype {
			case pngPalette:
				f.plte = body
			case pngRGB, pngRGBA:
				// Optional and ignored for truecolour (PNG spec 4.1.2).
			default:
				return f, pngBad("PLTE, color type mismatch")
			}
		case "tRNS":
			switch {
			case paletted:
				if stage != stPLTE {
					return f, pngBad("chunk out of order")
				}
			case hdr.ctype == pngRGB:
				if stage != stIHDR && stage != stPLTE {
					return f, pngBad("chunk out of order")
				}
			default:
				if stage != stIHDR {
					return f, pngBad("chunk out of order")
				}
			}
			stage = stTRNS
			switch hdr.ctype {
			case pngGray:
				if n != 2 {
					return f, pngBad("bad tRNS length")
				}
			case pngRGB:
				if n != 6 {
					return f, pngBad("bad tRNS length")
				}
			case pngPalette:
				if n > 256 {
					return f, pngBad("bad tRNS length")
				}
			default:
				return f, pngBad("tRNS, color type mismatch")
			}
			f.trns, f.hasTRNS = body, true
		case "IDAT":
			if stage < stIHDR || stage > stIDAT || (stage == stIHDR && paletted) {
				return f, pngBad("chunk out of order")
			}
			if stage == stIDAT && !wasRun {
				break // a later IDAT run: ignored, as image/png does
			}
			if stage != stIDAT {
				f.idat = idatRun(chunk)
			}
			stage = stIDAT
			inRun = true
		case "IEND":
			if stage != stIDAT {
				return f, pngBad("chunk out of order")
			}
			if n != 0 {
				return f, pngBad("bad IEND length")
			}
			stage = stIEND
		default:
			if n > 0x7fffffff {
				return f, pngBad("bad chunk length %d", n)
			}
		}
	}
	return f, nil
}

// chunkName quotes a chunk type for an error message, printable bytes only.
func chunkName(typ []byte) string {
	for _, c := range typ {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", typ)
		}
	}
	return string(typ)
}

// decodePNG decodes a whole PNG file whose header readHeader parsed into
// hd, into the format hd.pf. Every chunk is checked before anything the
// size of the image is allocated; that allocation (the image, plus the
// inflated rows when they are not already in the image's layout) is what
// Decode's pixel limit and checkPNGData have bounded, and stays within
// Info.DecodeBytes.
func decodePNG(data []byte, hd header) (*zenmetrics.Image, error) {
	f, err := walkPNG(data, hd.png)
	if err != nil {
		return nil, err
	}
	if f.idat == nil {
		return nil, pngBad("no IDAT chunk")
	}
	d, err := newPNGRows(&f, hd.pf)
	if err != nil {
		return nil, err
	}
	interlaced := hd.png.interlace != 0
	size := d.rawSize(interlaced)
	if size > int64(maxInt) {
		return nil, fmt.Errorf("%w: png: %dx%d image too large for this platform", zenmetrics.ErrUnsupported, hd.w, hd.h)
	}
	if !interlaced && d.conv == nil {
		// Stored rows are destination rows: inflate into the image's own
		// buffer (h bytes longer, for the filter bytes) and pack the rows
		// down in place.
		n := d.rowBytes(d.w)
		buf := make([]byte, size)
		if err := pngInflate(&f.idat, buf); err != nil {
			return nil, err
		}
		if err := d.compactRows(buf, n); err != nil {
			return nil, err
		}
		return &zenmetrics.Image{Width: hd.w, Height: hd.h, Format: hd.pf, Stride: n, Pix: buf[: d.h*n : d.h*n]}, nil
	}
	raw := make([]byte, size)
	if err := pngInflate(&f.idat, raw); err != nil {
		return nil, err
	}
	im := zenmetrics.NewImage(hd.w, hd.h, hd.pf)
	if interlaced {
		err = d.convertAdam7(raw, im)
	} else {
		err = d.convertRows(raw, im)
	}
	if err != nil {
		return nil, err
	}
	return im, nil
}

const maxInt = int(^uint(0) >> 1)

// idatRun is a file from the header of an IDAT chunk on; next returns the
// payload of each chunk of the run of consecutive IDAT chunks that starts
// there. walkPNG has checked their lengths and CRCs.
type idatRun []byte

func (r *idatRun) next() ([]byte, bool) {
	d := *r
	if len(d) < 12 || string(d[4:8]) != "IDAT" {
		return nil, false
	}
	n := uint64(binary.BigEndian.Uint32(d))
	if n+12 > uint64(len(d)) {
		return nil, false
	}
	*r = d[12+n:]
	return d[8 : 8+n], true
}
