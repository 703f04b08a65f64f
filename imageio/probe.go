package imageio

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio/internal/jpegturbo"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// Info is what a file's first bytes say about it, read by ProbeFile
// without decoding anything.
type Info struct {
	Format        string // FormatPNG, FormatJPEG, FormatWebP or FormatPNM
	Width, Height int
	FileSize      int64
	// DecodeBytes bounds the memory decoding the file takes at its peak:
	// the decoder's own image, the converted one and the file's bytes. It
	// is an upper bound computed from the header, for a caller that must
	// decide before decoding whether the image fits its memory budget.
	DecodeBytes int64
}

// probePrefix is how many leading bytes are read to find the format and
// the header: enough for PNG's IHDR and WebP's first chunk, and the
// longest PNM header accepted (comments included). JPEG's frame header
// may come after large APPn segments and is read on from the file.
const probePrefix = 4096

// maxFileBytes is the largest file accepted for a w×h image: no format
// here stores a pixel in more than 8 bytes (16-bit RGBA, uncompressed,
// which deflate's stored blocks can grow by 5 bytes per 64 KiB), plus up
// to 64 MiB of metadata (ICC profiles, text, Exif). A larger file is not
// an image of that size, and is refused before it is read.
func maxFileBytes(w, h int) int64 { return int64(w)*int64(h)*9 + 64<<20 }

// ProbeFile opens path (a regular file only), reads its first bytes and
// reports its format and size, checking them against opt.MaxPixels. It
// reads at most a few KiB (JPEG: up to its frame header) and allocates
// nothing in proportion to the image, so two images' sizes can be compared
// and their memory predicted before either is decoded. Errors are
// *zenmetrics.InputError values as DecodeFile's.
func ProbeFile(path string, opt Options) (Info, error) {
	f, st, err := safeio.Open(path)
	if err != nil {
		return Info{}, inputErr(path, err)
	}
	defer f.Close()
	info, err := probe(f, st.Size(), opt)
	if err != nil {
		return Info{}, inputErr(path, err)
	}
	return info, nil
}

// probe reads the header of a file of size bytes through r.
func probe(r io.ReaderAt, size int64, opt Options) (info Info, err error) {
	defer zenmetrics.Recover(&err)
	prefix := make([]byte, min(size, probePrefix))
	if n, err := r.ReadAt(prefix, 0); n < len(prefix) {
		return Info{}, fmt.Errorf("%w: reading the header: %w", zenmetrics.ErrBadInput, err)
	}
	format, err := sniffKnown(prefix)
	if err != nil {
		return Info{}, err
	}
	info = Info{Format: format, FileSize: size}
	// Bytes per pixel of the decoder's own image (std) and of the
	// converted one (out), as upper bounds.
	var std, out int64
	switch format {
	case FormatPNG:
		p, err := parseIHDR(prefix)
		if err != nil {
			return Info{}, err
		}
		info.Width, info.Height = p.width, p.height
		// decodePNG inflates straight into the image when the stored
		// rows are its rows (one filter byte per row more); otherwise the
		// inflated rows sit beside the image: at most 3 B/px plus a
		// filter byte per row at 8 bits or fewer, 6 B/px at 16, and an
		// interlaced file's passes add fewer than two bytes per row. So
		// std covers them, as it covered image/png's own images (and,
		// interlaced, its per-pass images); fixed costs such as inflate's
		// tables (about 50 KiB) are not counted, as before.
		std, out = 4, 4
		if p.depth == 16 {
			std, out = 8, 8
		}
		if p.interlace == 1 {
			std *= 2
		}
	case FormatWebP:
		wi, err := parseWebPHeader(prefix)
		if err != nil {
			return Info{}, err
		}
		info.Width, info.Height = wi.width, wi.height
		// Lossy: Y'CbCr 4:2:0 plus alpha (2.5 B/px); lossless: NRGBA
		// plus the alpha copy (5 B/px).
		std, out = 5, 4
	case FormatJPEG:
		// The decoder's own header walk, so every file it decodes
		// (arithmetic coding included) passes the probe.
		cfg, err := jpegturbo.ConfigAt(r, size)
		if err != nil {
			return Info{}, jpegErr(err)
		}
		info.Width, info.Height = cfg.Width, cfg.Height
		if err := checkJPEGData(cfg, size); err != nil {
			return Info{}, err
		}
		// Multi-scan files keep every DCT coefficient (2 bytes × 3
		// components at 4:4:4) beside the component planes (up to 3 B/px);
		// the interleaved output is what Decode returns.
		std, out = 9, 3
	case FormatPNM:
		p, err := parsePNMHeader(prefix)
		if err != nil {
			return Info{}, err
		}
		if err := p.checkFileSize(size); err != nil {
			return Info{}, err
		}
		info.Width, info.Height = p.w, p.h
		// No decoder image: the raster is copied (Decode) or kept
		// (DecodeFile) as the image, at most 8 B/px; the file's bytes
		// are counted below.
		std, out = 0, int64(p.format().BytesPerPixel())
	}
	if info.Width <= 0 || info.Height <= 0 {
		return Info{}, fmt.Errorf("%w: %s header declares an empty %dx%d image", zenmetrics.ErrBadInput, format, info.Width, info.Height)
	}
	if err := checkPixels(format, info.Width, info.Height, opt); err != nil {
		return Info{}, err
	}
	if lim := maxFileBytes(info.Width, info.Height); size > lim {
		return Info{}, fmt.Errorf("%w: %s file of %d bytes is larger than any %d×%d image (at most %d bytes)",
			zenmetrics.ErrBadInput, format, size, info.Width, info.Height, lim)
	}
	px := int64(info.Width) * int64(info.Height)
	info.DecodeBytes = px*(std+out) + size
	return info, nil
}

// checkPixels applies the pixel limit to a header's claim.
func checkPixels(format string, w, h int, opt Options) error {
	if max := opt.maxPixels(); int64(w)*int64(h) > max {
		return fmt.Errorf("%w: %s image of %d×%d pixels exceeds the limit of %d pixels",
			zenmetrics.ErrBadInput, format, w, h, max)
	}
	return nil
}

// sniffKnown is sniff turned into the error readHeader and probe give
// for a file this package cannot decode. The message never quotes the
// file's bytes: the path may name a file that is not an image at all (a
// manifest row pointing at a secret), and its content must not reach logs
// or output rows.
func sniffKnown(data []byte) (string, error) {
	format, known := sniff(data)
	if known {
		return format, nil
	}
	if len(data) == 0 {
		return "", fmt.Errorf("%w: empty file", zenmetrics.ErrBadInput)
	}
	if format != "" {
		return "", fmt.Errorf("%w: %s files are not supported (only PNG, JPEG, WebP and binary PGM/PPM/PAM); convert to PNG first",
			zenmetrics.ErrUnsupported, format)
	}
	return "", fmt.Errorf("%w: unknown image format (the first bytes are not a PNG, JPEG, WebP or PNM signature)", zenmetrics.ErrBadInput)
}

// maxDeflateRatio is the most any deflate stream expands: one
// length/distance pair codes at most 258 bytes in no fewer than 2 bits
// (RFC 1951 §3.2.5; zlib's FAQ and zlib.h give the same 1032:1 limit).
const maxDeflateRatio = 1032

// checkPNGData refuses a PNG whose IDAT chunks hold fewer bytes than any
// deflate stream of its claimed image could: image/png allocates the whole
// image when it starts reading pixels, so without this a 68-byte file
// claiming 32768×32768 RGBA16 takes 8 GiB before failing as truncated.
// With it, what is allocated is at most maxDeflateRatio times the data
// actually present.
func checkPNGData(p pngHeader) error {
	bits := int64(p.depth)
	switch p.ctype {
	case pngRGB:
		bits *= 3
	case pngGrayAlpha:
		bits *= 2
	case pngRGBA:
		bits *= 4
	}
	// Unfiltered samples alone, without the filter byte of each row: a
	// lower bound on the inflated size, interlaced or not.
	raw := (int64(p.width)*int64(p.height)*bits + 7) / 8
	// 1 KiB of slack for rounding (the bound is exact; zlib's header and
	// checksum only add bytes).
	if need := raw/maxDeflateRatio - 1024; p.idatBytes < need {
		return fmt.Errorf("%w: png: truncated: the IDAT chunks hold %d bytes, fewer than the %d that any deflate stream of a %d×%d image needs",
			zenmetrics.ErrBadInput, p.idatBytes, need, p.width, p.height)
	}
	return nil
}

// checkVP8Data refuses a lossy WebP whose VP8 data is too short for its
// claimed size, before x/image/webp allocates the frame. Every macroblock
// of a key frame codes its luma and chroma prediction modes with fixed
// probabilities (RFC 6386 §11.2-11.4: kf_ymode_prob {145, 156, 163, 128},
// kf_uv_mode_prob {142, 114, 183}); the cheapest choices cost
// log2(256/145) + log2(256/142) ≈ 1.67 bits, so a frame needs at least
// one bit per macroblock. Lossless (VP8L) files have no such bound (a
// Huffman code of one symbol takes no bits): their decode memory is
// Info.DecodeBytes, checked by the callers' memory budget.
func checkVP8Data(data []byte, wi webpInfo) error {
	n, ok := vp8ChunkLen(data)
	if !ok {
		return nil // VP8L, or no VP8 chunk found: the decoder decides
	}
	mbs := int64((wi.width+15)/16) * int64((wi.height+15)/16)
	if need := mbs / 8; n < need {
		return fmt.Errorf("%w: webp: truncated: the VP8 data holds %d bytes, fewer than the %d that a %d×%d frame needs",
			zenmetrics.ErrBadInput, n, need, wi.width, wi.height)
	}
	return nil
}

// vp8ChunkLen finds the "VP8 " chunk of a WebP file (the first chunk, or
// one following VP8X and other chunks) and returns its declared length
// capped to the bytes present.
func vp8ChunkLen(data []byte) (int64, bool) {
	rest := data[12:]
	for len(rest) >= 8 {
		n := int64(binary.LittleEndian.Uint32(rest[4:8]))
		switch string(rest[:4]) {
		case "VP8 ":
			return min(n, int64(len(rest)-8)), true
		case "VP8L":
			return 0, false
		}
		skip := 8 + n + n&1
		if skip > int64(len(rest)) {
			return 0, false
		}
		rest = rest[skip:]
	}
	return 0, false
}

// checkJPEGData refuses a Huffman-coded JPEG too short for its claimed
// size, before the decoder allocates the frame: every MCU holds at least
// one data unit whose DC difference is Huffman-coded in the first scan
// that covers it, a Huffman code is at least one bit long (ITU-T T.81
// Annex C: code lengths 1 to 16), and an MCU covers at most 32×32 pixels
// (sampling factors ≤ 4, T.81 B.2.2). So a w×h frame needs at least
// ⌈w/32⌉·⌈h/32⌉ bits of entropy-coded data. Arithmetic coding has no such
// bound (an adaptive coder can spend less than a bit on a likely symbol);
// its decode memory is Info.DecodeBytes, checked by the memory budget.
func checkJPEGData(cfg jpegturbo.Config, size int64) error {
	if cfg.Arithmetic {
		return nil
	}
	need := (int64(cfg.Width+31) / 32) * (int64(cfg.Height+31) / 32) / 8
	if size < need {
		return fmt.Errorf("%w: jpeg: truncated: the file holds %d bytes, fewer than the %d that the entropy-coded data of a %d×%d frame needs",
			zenmetrics.ErrBadInput, size, need, cfg.Width, cfg.Height)
	}
	return nil
}

// checkJPEGSize is checkJPEGData for a file in memory.
func checkJPEGSize(r io.ReaderAt, size int64, w, h int) error {
	cfg, err := jpegturbo.ConfigAt(r, size)
	if err != nil {
		return nil // readHeader accepted it; the decoder reports its own error
	}
	return checkJPEGData(cfg, size)
}
