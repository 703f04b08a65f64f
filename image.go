package zenmetrics

import (
	"fmt"
)

// PixelFormat says how the samples of an Image are laid out. Samples are
// interleaved per pixel in channel order (gray, gray+alpha, R G B, R G B A)
// and encoded with the sRGB transfer curve, as files store them. 16-bit
// samples are big-endian (the PNG order, and Go's image.RGBA64 order), so a
// decoded PNG row can be kept as is.
type PixelFormat uint8

// Pixel formats. The zero value is invalid on purpose.
const (
	Gray8 PixelFormat = iota + 1
	GrayA8
	RGB8
	RGBA8
	Gray16
	GrayA16
	RGB16
	RGBA16
)

var formatNames = [...]string{
	Gray8: "gray8", GrayA8: "graya8", RGB8: "rgb8", RGBA8: "rgba8",
	Gray16: "gray16", GrayA16: "graya16", RGB16: "rgb16", RGBA16: "rgba16",
}

func (f PixelFormat) String() string {
	if f >= Gray8 && f <= RGBA16 {
		return formatNames[f]
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// Channels is the number of samples per pixel (1 to 4), 0 for an invalid format.
func (f PixelFormat) Channels() int {
	switch f {
	case Gray8, Gray16:
		return 1
	case GrayA8, GrayA16:
		return 2
	case RGB8, RGB16:
		return 3
	case RGBA8, RGBA16:
		return 4
	}
	return 0
}

// BytesPerSample is 1 or 2 (0 for an invalid format).
func (f PixelFormat) BytesPerSample() int {
	switch {
	case f >= Gray8 && f <= RGBA8:
		return 1
	case f >= Gray16 && f <= RGBA16:
		return 2
	}
	return 0
}

// BytesPerPixel is Channels × BytesPerSample.
func (f PixelFormat) BytesPerPixel() int { return f.Channels() * f.BytesPerSample() }

// HasAlpha reports whether the format carries an alpha channel (last sample).
func (f PixelFormat) HasAlpha() bool { return f.Channels() == 2 || f.Channels() == 4 }

// IsGray reports whether the format has a single colour channel.
func (f PixelFormat) IsGray() bool { return f.Channels() == 1 || f.Channels() == 2 }

// MaxValue is 255 or 65535.
func (f PixelFormat) MaxValue() int {
	if f.BytesPerSample() == 2 {
		return 65535
	}
	return 255
}

// Image is a decoded image as it crosses the API: sRGB-encoded integer
// samples, interleaved, with a stride. Backends convert to linear floats
// themselves (a GPU backend after uploading these bytes, which are 4× smaller
// than floats). Pix is not copied by the library; callers must not change it
// while a task that uses it is running.
type Image struct {
	Width, Height int
	Format        PixelFormat
	// Stride is the distance in bytes between the starts of two rows; at
	// least Width × Format.BytesPerPixel().
	Stride int
	Pix    []byte
}

// NewImage allocates a zeroed, tightly packed image.
func NewImage(w, h int, f PixelFormat) *Image {
	stride := w * f.BytesPerPixel()
	return &Image{Width: w, Height: h, Format: f, Stride: stride, Pix: make([]byte, stride*h)}
}

// Validate checks that the header fields and the buffer agree, so that no
// backend indexes out of range. The error wraps ErrBadInput.
func (im *Image) Validate() error {
	if im == nil {
		return fmt.Errorf("%w: nil image", ErrBadInput)
	}
	bpp := im.Format.BytesPerPixel()
	switch {
	case bpp == 0:
		return fmt.Errorf("%w: invalid pixel format %v", ErrBadInput, im.Format)
	case im.Width <= 0 || im.Height <= 0:
		return fmt.Errorf("%w: empty image %dx%d", ErrBadInput, im.Width, im.Height)
	case im.Stride < im.Width*bpp:
		return fmt.Errorf("%w: stride %d < %d×%d bytes", ErrBadInput, im.Stride, im.Width, bpp)
	case int64(len(im.Pix)) < int64(im.Stride)*int64(im.Height-1)+int64(im.Width*bpp):
		return fmt.Errorf("%w: buffer of %d bytes too short for %dx%d %v with stride %d",
			ErrBadInput, len(im.Pix), im.Width, im.Height, im.Format, im.Stride)
	}
	return nil
}

// Row returns the bytes of row y (Width × BytesPerPixel long).
func (im *Image) Row(y int) []byte {
	o := y * im.Stride
	return im.Pix[o : o+im.Width*im.Format.BytesPerPixel()]
}

// Sample returns channel c of pixel (x, y) as an integer in [0, MaxValue].
// It is meant for tests and slow paths; kernels read rows directly.
func (im *Image) Sample(x, y, c int) int {
	bps := im.Format.BytesPerSample()
	o := y*im.Stride + (x*im.Format.Channels()+c)*bps
	if bps == 2 {
		return int(im.Pix[o])<<8 | int(im.Pix[o+1])
	}
	return int(im.Pix[o])
}

// Pixels is Width × Height as int64 (images can exceed 2^31 pixels on paper).
func (im *Image) Pixels() int64 { return int64(im.Width) * int64(im.Height) }
