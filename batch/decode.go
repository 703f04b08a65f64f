package batch

import (
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg" // fallback decoder formats
	_ "image/png"
	"io"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// DecodeFunc decodes an image file. The CLI passes imageio.DecodeFile;
// errors should name the file (a *zenmetrics.InputError).
type DecodeFunc func(path string) (*zenmetrics.Image, error)

// decodeStd is the fallback decoder used when Config.Decode is nil: Go's
// image/png and image/jpeg, converted to RGB8 (RGBA8 when the image is not
// opaque). It does not keep 16-bit samples or gray layouts; use imageio for
// scores that must match the reference tools.
func decodeStd(path string) (im *zenmetrics.Image, err error) {
	defer func() {
		if v := recover(); v != nil {
			im, err = nil, &zenmetrics.InputError{Path: path, Err: fmt.Errorf("%w: decoder panic: %v", zenmetrics.ErrBadInput, v)}
		}
	}()
	// Only a regular file: a FIFO would block and a device never end.
	f, _, err := safeio.Open(path)
	if err != nil {
		return nil, &zenmetrics.InputError{Path: path, Err: err}
	}
	defer f.Close()
	// The header's size first: image/png and image/jpeg allocate the
	// whole image from it.
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return nil, &zenmetrics.InputError{Path: path, Err: fmt.Errorf("%w: %v", zenmetrics.ErrBadInput, err)}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > imageio.DefaultMaxPixels {
		return nil, &zenmetrics.InputError{Path: path, Err: fmt.Errorf("%w: %d×%d image exceeds the limit of %d pixels",
			zenmetrics.ErrBadInput, cfg.Width, cfg.Height, int64(imageio.DefaultMaxPixels))}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, &zenmetrics.InputError{Path: path, Err: fmt.Errorf("%w: %w", zenmetrics.ErrBadInput, err)}
	}
	src, _, err := image.Decode(f)
	if err != nil {
		return nil, &zenmetrics.InputError{Path: path, Err: fmt.Errorf("%w: %v", zenmetrics.ErrBadInput, err)}
	}
	b := src.Bounds()
	rgba := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), src, b.Min, draw.Src)
	opaque := true
	for i := 3; i < len(rgba.Pix); i += 4 {
		if rgba.Pix[i] != 255 {
			opaque = false
			break
		}
	}
	if !opaque {
		return &zenmetrics.Image{Width: b.Dx(), Height: b.Dy(), Format: zenmetrics.RGBA8, Stride: rgba.Stride, Pix: rgba.Pix}, nil
	}
	out := zenmetrics.NewImage(b.Dx(), b.Dy(), zenmetrics.RGB8)
	for y := 0; y < b.Dy(); y++ {
		s := rgba.Pix[y*rgba.Stride:]
		d := out.Pix[y*out.Stride:]
		for x := 0; x < b.Dx(); x++ {
			d[3*x], d[3*x+1], d[3*x+2] = s[4*x], s[4*x+1], s[4*x+2]
		}
	}
	return out, nil
}
