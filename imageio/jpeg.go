package imageio

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"

	"github.com/zenmetrics-go/zenmetrics"
)

// jpegHeader reads the frame header. Gray files decode to Gray8, colour
// files to RGB8; four-component (CMYK, YCCK) files are refused because
// turning them into sRGB needs a colour profile.
func jpegHeader(data []byte) (w, h int, f zenmetrics.PixelFormat, err error) {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, 0, decodeErr("jpeg", err)
	}
	switch cfg.ColorModel {
	case color.GrayModel:
		f = zenmetrics.Gray8
	case color.YCbCrModel, color.RGBAModel:
		f = zenmetrics.RGB8
	case color.CMYKModel:
		return 0, 0, 0, fmt.Errorf("%w: jpeg: CMYK/YCCK JPEG (%dx%d) is not supported; convert it to an sRGB PNG first",
			zenmetrics.ErrUnsupported, cfg.Width, cfg.Height)
	default:
		return 0, 0, 0, fmt.Errorf("%w: jpeg: unexpected colour model %T", zenmetrics.ErrUnsupported, cfg.ColorModel)
	}
	return cfg.Width, cfg.Height, f, nil
}

// decodeJPEG uses Go's image/jpeg; see the package documentation for how
// its output differs from libjpeg-turbo's.
func decodeJPEG(data []byte, hd header) (*zenmetrics.Image, error) {
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, decodeErr("jpeg", err)
	}
	b := img.Bounds()
	if !zeroOrigin(b) || b.Dx() != hd.w || b.Dy() != hd.h {
		return nil, fmt.Errorf("%w: jpeg decoder returned bounds %v for a %dx%d header", zenmetrics.ErrBadInput, b, hd.w, hd.h)
	}
	switch img.(type) {
	case *image.Gray, *image.YCbCr, *image.RGBA:
	default:
		return nil, unexpectedType("jpeg", img, hd.pf)
	}
	im, err := convert(img, hd.pf, true)
	if err != nil {
		return nil, unexpectedType("jpeg", img, hd.pf)
	}
	return im, nil
}
