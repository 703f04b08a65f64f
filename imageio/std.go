package imageio

import (
	"fmt"
	"image"

	"github.com/zenmetrics-go/zenmetrics"
)

// ToStdImage returns a copy of im as a standard-library image with straight
// (non-premultiplied) alpha, so that no sample changes: Gray8 → *image.Gray,
// Gray16 → *image.Gray16, GrayA8/RGB8/RGBA8 → *image.NRGBA, GrayA16/RGB16/
// RGBA16 → *image.NRGBA64 (gray replicated to R=G=B, missing alpha full).
// It returns nil when im does not pass Validate.
func ToStdImage(im *zenmetrics.Image) image.Image {
	if im.Validate() != nil {
		return nil
	}
	r := image.Rect(0, 0, im.Width, im.Height)
	bpp := im.Format.BytesPerPixel()
	var m []int
	switch im.Format {
	case zenmetrics.Gray8:
		dst := image.NewGray(r)
		remap(dst.Pix, dst.Stride, 1, im.Pix, 0, im.Stride, bpp, im.Width, im.Height, mapGray8)
		return dst
	case zenmetrics.Gray16:
		dst := image.NewGray16(r)
		remap(dst.Pix, dst.Stride, 2, im.Pix, 0, im.Stride, bpp, im.Width, im.Height, mapGray16)
		return dst
	case zenmetrics.GrayA8:
		m = []int{0, 0, 0, 1}
	case zenmetrics.RGB8:
		m = []int{0, 1, 2, fill}
	case zenmetrics.RGBA8:
		m = mapRGBA8
	case zenmetrics.GrayA16:
		m = []int{0, 1, 0, 1, 0, 1, 2, 3}
	case zenmetrics.RGB16:
		m = []int{0, 1, 2, 3, 4, 5, fill, fill}
	case zenmetrics.RGBA16:
		m = mapRGBA16
	}
	if im.Format.BytesPerSample() == 1 {
		dst := image.NewNRGBA(r)
		remap(dst.Pix, dst.Stride, 4, im.Pix, 0, im.Stride, bpp, im.Width, im.Height, m)
		return dst
	}
	dst := image.NewNRGBA64(r)
	remap(dst.Pix, dst.Stride, 8, im.Pix, 0, im.Stride, bpp, im.Width, im.Height, m)
	return dst
}

// FromStdImage copies a standard-library image into a zenmetrics.Image:
//
//	*image.Gray → Gray8              *image.Gray16 → Gray16
//	*image.NRGBA → RGBA8 (exact)     *image.NRGBA64 → RGBA16 (exact)
//	*image.RGBA → RGBA8              *image.RGBA64 → RGBA16
//	*image.Paletted → RGBA8          *image.YCbCr, *image.CMYK → RGB8
//	*image.NYCbCrA → RGBA8           anything else → RGBA16
//
// The premultiplied types are un-premultiplied with Go's color models,
// exact for opaque pixels only. YCbCr uses Go's JFIF conversion (as
// image/jpeg's At does), not the WebP one Decode uses for WebP files. The
// result never shares memory with img.
func FromStdImage(img image.Image) (*zenmetrics.Image, error) {
	if img == nil {
		return nil, fmt.Errorf("%w: nil image", zenmetrics.ErrBadInput)
	}
	var want zenmetrics.PixelFormat
	switch img.(type) {
	case *image.Gray:
		want = zenmetrics.Gray8
	case *image.Gray16:
		want = zenmetrics.Gray16
	case *image.NRGBA, *image.RGBA, *image.Paletted, *image.NYCbCrA:
		want = zenmetrics.RGBA8
	case *image.YCbCr, *image.CMYK:
		want = zenmetrics.RGB8
	default:
		want = zenmetrics.RGBA16
	}
	return convert(img, want, false)
}
