// Package jpegturbo decodes JPEG files into exactly the samples that
// libjpeg-turbo 2.1 writes with its default decompression settings (what
// `djpeg` writes, and what libjxl's tools get from the library): the
// accurate integer IDCT (JDCT_ISLOW), "fancy" chroma upsampling (triangular
// h2v1 and h2v2, libjpeg-turbo's h1v2 for 4:4:0, plain replication where
// libjpeg-turbo replicates), its fixed-point YCbCr→RGB tables, and block
// smoothing of progressive files whose scans leave coefficients incomplete.
//
// It is written from the JPEG specification (ITU-T T.81) and from reading
// libjpeg-turbo 2.1.5.1 (jdhuff.c, jdphuff.c, jdarith.c, jidctint.c,
// jdsample.c, jdcolor.c, jdcoefct.c, jdmarker.c, jdapimin.c; IJG/BSD
// licences) for the exact arithmetic; no code is copied.
//
// Where libjpeg only warns and goes on (corrupt entropy data, a premature
// end of the file, a missing EOI, unexpected restart markers) this package
// returns an error instead: the image libjpeg would output is partly
// invented (grey or smoothed blocks), and a quality score of it would be
// meaningless. Extraneous bytes between segments are skipped, as libjpeg
// does, because they do not change the pixels.
package jpegturbo

import (
	"errors"
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
)

// ColorSpace is the colour space of the decoded samples, as libjpeg's
// default out_color_space chooses it.
type ColorSpace uint8

// Output colour spaces.
const (
	Gray ColorSpace = iota + 1 // 1 channel
	RGB                        // 3 channels (from YCbCr or RGB files)
	CMYK                       // 4 channels (from CMYK or YCCK files), as stored: Adobe files are inverted
)

// Channels is the number of interleaved samples per pixel.
func (c ColorSpace) Channels() int {
	switch c {
	case Gray:
		return 1
	case RGB:
		return 3
	case CMYK:
		return 4
	}
	return 0
}

func (c ColorSpace) String() string {
	switch c {
	case Gray:
		return "gray"
	case RGB:
		return "RGB"
	case CMYK:
		return "CMYK"
	}
	return fmt.Sprintf("colorspace(%d)", uint8(c))
}

// Config is what the headers (up to the first scan) say about the image.
type Config struct {
	Width, Height int
	// Components is the number of components in the frame (1, 3 or 4 are
	// decodable).
	Components int
	// ColorSpace is the colour space Decode produces.
	ColorSpace ColorSpace
	// JPEGColor is the colour space of the coded components as libjpeg
	// guesses it: "gray", "YCbCr", "RGB", "CMYK" or "YCCK".
	JPEGColor   string
	Progressive bool
	Arithmetic  bool
	// AdobeTransform is the transform flag of an Adobe APP14 marker, or -1
	// when the file has none.
	AdobeTransform int
	// JFIF is true when the file has a JFIF APP0 marker.
	JFIF bool
}

// Image is a decoded JPEG: interleaved 8-bit samples plus metadata.
type Image struct {
	Config
	// Pix holds Height rows of Width × ColorSpace.Channels() samples.
	Pix []byte
	// ICC is the ICC profile assembled from APP2 ICC_PROFILE chunks (nil
	// when absent or when the chunks are inconsistent, as libjxl treats
	// them).
	ICC []byte
	// Orientation is the EXIF orientation tag (1..8), 0 when there is no
	// EXIF APP1 segment or no orientation tag. It is reported, not applied.
	Orientation int
}

// Limits bound what Decode accepts.
type Limits struct {
	// MaxPixels refuses images whose frame header declares more pixels;
	// 0 means no limit besides JPEG's own 65500×65500.
	MaxPixels int64
}

// errBad and errUnsupported build errors that match zenmetrics.ErrBadInput
// and zenmetrics.ErrUnsupported.
func errBad(format string, args ...any) error {
	return fmt.Errorf("%w: jpeg: %s", zenmetrics.ErrBadInput, fmt.Sprintf(format, args...))
}

func errUnsupported(format string, args ...any) error {
	return fmt.Errorf("%w: jpeg: %s", zenmetrics.ErrUnsupported, fmt.Sprintf(format, args...))
}

// errTruncated is returned when the data ends inside an entropy-coded
// segment or before EOI.
var errTruncated = errors.New("premature end of JPEG data")

// DecodeConfig reads the markers up to the first SOS and reports the image
// size and colour layout. It returns the same errors Decode would return for
// a bad or unsupported header.
func DecodeConfig(data []byte) (Config, error) {
	d := &decoder{data: data}
	if err := d.readHeaders(); err != nil {
		return Config{}, err
	}
	return d.cfg, nil
}

// Decode decodes a whole JPEG file held in memory.
func Decode(data []byte, lim Limits) (*Image, error) {
	d := &decoder{data: data}
	if err := d.readHeaders(); err != nil {
		return nil, err
	}
	if lim.MaxPixels > 0 && int64(d.cfg.Width)*int64(d.cfg.Height) > lim.MaxPixels {
		return nil, errBad("%dx%d image exceeds the limit of %d pixels", d.cfg.Width, d.cfg.Height, lim.MaxPixels)
	}
	if err := d.decodeScans(); err != nil {
		return nil, err
	}
	im := &Image{Config: d.cfg, ICC: d.icc(), Orientation: d.orientation}
	pix, err := d.output()
	if err != nil {
		return nil, err
	}
	im.Pix = pix
	return im, nil
}
