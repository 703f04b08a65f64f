package imageio

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// DefaultMaxPixels is the pixel limit used when Options.MaxPixels is 0: one
// gigapixel.
const DefaultMaxPixels = 1 << 30

// Options tune decoding. The zero value uses the defaults.
type Options struct {
	// MaxPixels refuses images whose header declares more than this many
	// pixels (width × height), before anything is allocated for them.
	// 0 (or a negative value) means DefaultMaxPixels.
	MaxPixels int64
}

func (o Options) maxPixels() int64 {
	if o.MaxPixels <= 0 {
		return DefaultMaxPixels
	}
	return o.MaxPixels
}

// Format names returned by DecodeConfig.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	FormatWebP = "webp"
	// FormatPNM (pnm.go) is binary PGM, PPM and PAM.
)

// DecodeFile reads and decodes the file at path with default options.
func DecodeFile(path string) (*zenmetrics.Image, error) {
	return DecodeFileOptions(path, Options{})
}

// DecodeFileOptions reads and decodes the file at path. Only a regular
// file is opened (a directory, device, FIFO or socket is refused at once,
// and a FIFO is never waited on); its header is checked against
// opt.MaxPixels and its size against what that header allows before the
// rest is read, so a huge or endless file is refused after its first bytes.
func DecodeFileOptions(path string, opt Options) (*zenmetrics.Image, error) {
	f, st, err := safeio.Open(path)
	if err != nil {
		return nil, inputErr(path, err)
	}
	defer f.Close()
	info, err := probe(f, st.Size(), opt)
	if err != nil {
		return nil, inputErr(path, err)
	}
	data, err := safeio.ReadAll(f, st.Size(), maxFileBytes(info.Width, info.Height))
	if err != nil {
		return nil, inputErr(path, err)
	}
	// data is this call's own buffer: a PNM raster can become the image's
	// pixels without a copy.
	return decode(data, path, opt, true)
}

func inputErr(name string, err error) error {
	return &zenmetrics.InputError{Path: name, Err: err}
}

// header is what the first bytes of a file say about the decoded image.
type header struct {
	format string
	w, h   int
	pf     zenmetrics.PixelFormat
	png    pngHeader // format == FormatPNG
	webp   webpInfo  // format == FormatWebP
	pnm    pnmHeader // format == FormatPNM
}

// DecodeConfig reads only the header of an image file and reports its size,
// the pixel format Decode would produce and the file format ("png", "jpeg",
// "webp" or "pnm"). Errors are *zenmetrics.InputError values naming name.
func DecodeConfig(data []byte, name string) (w, h int, f zenmetrics.PixelFormat, format string, err error) {
	defer func() {
		if err != nil {
			w, h, f, format = 0, 0, 0, ""
		}
	}()
	defer recoverInto(name, &err)
	hd, err := readHeader(data)
	if err != nil {
		return 0, 0, 0, "", inputErr(name, err)
	}
	return hd.w, hd.h, hd.pf, hd.format, nil
}

// Decode decodes an image file held in memory. name is used in errors only
// (usually the file's path). See the package documentation for the formats
// and the pixel layouts produced.
func Decode(data []byte, name string, opt Options) (im *zenmetrics.Image, err error) {
	return decode(data, name, opt, false)
}

// decode is Decode; owned says that data belongs to the caller of decode
// alone (DecodeFileOptions' read buffer), so the image may share it.
func decode(data []byte, name string, opt Options, owned bool) (im *zenmetrics.Image, err error) {
	defer func() {
		if err != nil {
			im = nil
		}
	}()
	defer recoverInto(name, &err)
	hd, err := readHeader(data)
	if err != nil {
		return nil, inputErr(name, err)
	}
	if err := checkPixels(hd.format, hd.w, hd.h, opt); err != nil {
		return nil, inputErr(name, err)
	}
	// The data must be able to hold what the header claims before the
	// decoders allocate the whole image for it.
	switch hd.format {
	case FormatPNG:
		err = checkPNGData(hd.png)
	case FormatWebP:
		err = checkVP8Data(data, hd.webp)
	case FormatJPEG:
		err = checkJPEGSize(bytes.NewReader(data), int64(len(data)), hd.w, hd.h)
	case FormatPNM:
		err = hd.pnm.checkFileSize(int64(len(data)))
	}
	if err != nil {
		return nil, inputErr(name, err)
	}
	switch hd.format {
	case FormatPNG:
		im, err = decodePNG(data, hd)
	case FormatJPEG:
		im, err = decodeJPEG(data, hd)
	case FormatWebP:
		im, err = decodeWebP(data, hd)
	case FormatPNM:
		// checkFileSize made sure the raster is all there, so the
		// allocation follows the data present.
		im, err = decodePNM(data, hd.pnm, owned)
	default:
		err = fmt.Errorf("%w: no decoder for %s", zenmetrics.ErrUnsupported, hd.format)
	}
	if err == nil {
		err = checkDecoded(im, hd)
	}
	if err != nil {
		return nil, inputErr(name, err)
	}
	return im, nil
}

// checkDecoded makes sure the decoder produced what the header promised, so
// that a mismatch between our header reading and the decoder's becomes an
// error instead of a wrong image.
func checkDecoded(im *zenmetrics.Image, hd header) error {
	if err := im.Validate(); err != nil {
		return fmt.Errorf("%s decoder produced an invalid image: %w", hd.format, err)
	}
	if im.Width != hd.w || im.Height != hd.h || im.Format != hd.pf {
		return fmt.Errorf("%w: %s decoder produced %dx%d %v, header says %dx%d %v",
			zenmetrics.ErrBadInput, hd.format, im.Width, im.Height, im.Format, hd.w, hd.h, hd.pf)
	}
	return nil
}

// recoverInto turns a decoder panic into an InputError.
func recoverInto(name string, err *error) {
	if v := recover(); v != nil {
		var perr error
		func() {
			defer zenmetrics.Recover(&perr)
			panic(v)
		}()
		*err = inputErr(name, fmt.Errorf("%w: decoder panicked: %w", zenmetrics.ErrBadInput, perr))
	}
}

var (
	magicPNG  = []byte("\x89PNG\r\n\x1a\n")
	magicJPEG = []byte{0xff, 0xd8, 0xff}
)

// sniff names the format of data from its first bytes. known is false for
// formats this package cannot decode; name is then "" when the bytes are
// not recognised at all.
func sniff(data []byte) (name string, known bool) {
	switch {
	case bytes.HasPrefix(data, magicPNG):
		return FormatPNG, true
	case bytes.HasPrefix(data, magicJPEG):
		return FormatJPEG, true
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return FormatWebP, true
	case pnmSniff(data):
		return FormatPNM, true
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "GIF", false
	case bytes.HasPrefix(data, []byte{0xff, 0x0a}),
		bytes.HasPrefix(data, []byte("\x00\x00\x00\x0cJXL \r\n\x87\n")):
		return "JPEG XL", false
	case len(data) >= 12 && string(data[4:8]) == "ftyp" &&
		(string(data[8:12]) == "avif" || string(data[8:12]) == "avis" || string(data[8:12]) == "mif1"):
		return "AVIF/HEIF", false
	case bytes.HasPrefix(data, []byte("II*\x00")), bytes.HasPrefix(data, []byte("MM\x00*")):
		return "TIFF", false
	case bytes.HasPrefix(data, []byte("BM")):
		return "BMP", false
	case len(data) >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '4':
		return "plain (ASCII) PNM and PBM", false
	case len(data) >= 2 && data[0] == 'P' && (data[1] == 'f' || data[1] == 'F'):
		return "PFM (floating-point samples; zenmetrics images are 8- or 16-bit integers)", false
	case bytes.HasPrefix(data, []byte("qoif")):
		return "QOI", false
	case bytes.HasPrefix(data, []byte("\x76\x2f\x31\x01")):
		return "OpenEXR", false
	}
	return "", false
}

func readHeader(data []byte) (header, error) {
	format, err := sniffKnown(data)
	if err != nil {
		return header{}, err
	}
	hd := header{format: format}
	switch format {
	case FormatPNG:
		hd.png, err = parsePNGHeader(data)
		if err == nil {
			hd.w, hd.h, hd.pf = hd.png.width, hd.png.height, hd.png.format()
		}
	case FormatJPEG:
		hd.w, hd.h, hd.pf, err = jpegHeader(data)
	case FormatWebP:
		hd.webp, err = parseWebPHeader(data)
		if err == nil {
			hd.w, hd.h, hd.pf = hd.webp.width, hd.webp.height, hd.webp.format()
		}
	case FormatPNM:
		hd.pnm, err = parsePNMHeader(data)
		if err == nil {
			hd.w, hd.h, hd.pf = hd.pnm.w, hd.pnm.h, hd.pnm.format()
		}
	}
	if err != nil {
		return header{}, err
	}
	if hd.w <= 0 || hd.h <= 0 {
		return header{}, fmt.Errorf("%w: %s header declares an empty %dx%d image", zenmetrics.ErrBadInput, format, hd.w, hd.h)
	}
	return hd, nil
}

// decodeErr classifies a decoder error: unsupported features stay
// ErrUnsupported, everything else (corrupt, truncated) is ErrBadInput. The
// decoder's message is kept.
func decodeErr(format string, err error) error {
	prefix := format + ": "
	if strings.HasPrefix(err.Error(), prefix) {
		prefix = "" // image/png and x/image/webp name themselves already
	}
	var pu png.UnsupportedError
	switch {
	case errors.As(err, &pu):
		return fmt.Errorf("%w: %s%w", zenmetrics.ErrUnsupported, prefix, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s: truncated file: %w", zenmetrics.ErrBadInput, format, err)
	}
	return fmt.Errorf("%w: %s%w", zenmetrics.ErrBadInput, prefix, err)
}

// unexpectedType reports a decoder result this package does not expect for
// the header it read.
func unexpectedType(format string, img image.Image, pf zenmetrics.PixelFormat) error {
	return fmt.Errorf("%w: %s decoder returned %T where %v was expected", zenmetrics.ErrBadInput, format, img, pf)
}

// zeroOrigin reports whether r starts at (0, 0), as every decoder's result
// does; the in-place conversions rely on it.
func zeroOrigin(r image.Rectangle) bool { return r.Min.X == 0 && r.Min.Y == 0 }
