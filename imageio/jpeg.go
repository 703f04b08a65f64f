package imageio

import (
	"errors"
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio/internal/jpegturbo"
)

// jpegHeader reads the markers up to the first scan with the libjpeg-turbo
// exact decoder. Gray files decode to Gray8, colour files (YCbCr or RGB) to
// RGB8. Four-component (CMYK, YCCK) files are refused, as libjxl v0.12's
// tools refuse them (lib/extras/dec/jpg.cc: "unsupported number of
// components in JPEG"): turning them into sRGB needs a colour profile.
func jpegHeader(data []byte) (w, h int, f zenmetrics.PixelFormat, err error) {
	cfg, err := jpegturbo.DecodeConfig(data)
	if err != nil {
		return 0, 0, 0, jpegErr(err)
	}
	switch cfg.ColorSpace {
	case jpegturbo.Gray:
		f = zenmetrics.Gray8
	case jpegturbo.RGB:
		f = zenmetrics.RGB8
	default:
		return 0, 0, 0, fmt.Errorf("%w: jpeg: %s JPEG (%dx%d) is not supported (libjxl's tools refuse it too); convert it to an sRGB PNG first",
			zenmetrics.ErrUnsupported, cfg.JPEGColor, cfg.Width, cfg.Height)
	}
	return cfg.Width, cfg.Height, f, nil
}

// jpegErr keeps the decoder's classification (its errors already wrap
// zenmetrics.ErrBadInput or zenmetrics.ErrUnsupported).
func jpegErr(err error) error {
	if errors.Is(err, zenmetrics.ErrBadInput) || errors.Is(err, zenmetrics.ErrUnsupported) {
		return err
	}
	return fmt.Errorf("%w: jpeg: %w", zenmetrics.ErrBadInput, err)
}

// decodeJPEG decodes with jpegturbo, whose samples equal libjpeg-turbo
// 2.1's default output (djpeg), the decoder libjxl's tools use. Embedded
// ICC profiles and EXIF orientation are not applied (see the package
// documentation).
func decodeJPEG(data []byte, hd header) (*zenmetrics.Image, error) {
	// The pixel limit was checked against the header by Decode.
	img, err := jpegturbo.Decode(data, jpegturbo.Limits{})
	if err != nil {
		return nil, jpegErr(err)
	}
	var pf zenmetrics.PixelFormat
	switch img.ColorSpace {
	case jpegturbo.Gray:
		pf = zenmetrics.Gray8
	case jpegturbo.RGB:
		pf = zenmetrics.RGB8
	default:
		return nil, fmt.Errorf("%w: jpeg: %s JPEG is not supported", zenmetrics.ErrUnsupported, img.JPEGColor)
	}
	if img.Width != hd.w || img.Height != hd.h || pf != hd.pf {
		return nil, fmt.Errorf("%w: jpeg decoder produced %dx%d %v for a %dx%d %v header",
			zenmetrics.ErrBadInput, img.Width, img.Height, pf, hd.w, hd.h, hd.pf)
	}
	return &zenmetrics.Image{Width: img.Width, Height: img.Height, Format: pf,
		Stride: img.Width * pf.BytesPerPixel(), Pix: img.Pix}, nil
}
