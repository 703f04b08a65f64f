package imageio

import (
	"bytes"
	"fmt"
	"image"
	"image/png"

	"github.com/zenmetrics-go/zenmetrics"
)

// decodePNGStd is the image/png-based decoder imageio used before
// decodePNG: the reference the new decoder is compared with, sample for
// sample, in the tests, the fuzz target and the benchmarks.
func decodePNGStd(data []byte, hd header) (*zenmetrics.Image, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, decodeErr("png", err)
	}
	b := img.Bounds()
	if !zeroOrigin(b) || b.Dx() != hd.w || b.Dy() != hd.h {
		return nil, fmt.Errorf("%w: png decoder returned bounds %v for a %dx%d header", zenmetrics.ErrBadInput, b, hd.w, hd.h)
	}
	switch img.(type) {
	case *image.RGBA, *image.RGBA64:
		// Premultiplied types only ever hold opaque PNGs; anything with
		// alpha must come back straight, or samples would be lost.
		if hd.pf.HasAlpha() {
			return nil, unexpectedType("png", img, hd.pf)
		}
	}
	im, err := convert(img, hd.pf, true)
	if err != nil {
		return nil, unexpectedType("png", img, hd.pf)
	}
	return im, nil
}
