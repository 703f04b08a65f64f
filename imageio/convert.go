package imageio

import (
	"fmt"
	"image"
	"image/color"

	"github.com/zenmetrics-go/zenmetrics"
)

// fill is a remap entry meaning "write 0xff" instead of copying a byte.
const fill = -1

// remap builds each destination pixel of dbpp bytes from a source pixel of
// sbpp bytes: destination byte k is source byte m[k], or 0xff for fill.
// src starts at byte srcOff. When dst and src are the same slice the copy
// runs in place, which is safe as long as srcOff is 0, dbpp <= sbpp and
// dstStride <= srcStride: every write then lands at or before bytes
// already read (a pixel is read whole before it is written).
func remap(dst []byte, dstStride, dbpp int, src []byte, srcOff, srcStride, sbpp, w, h int, m []int) {
	var px [8]byte
	for y := 0; y < h; y++ {
		so := srcOff + y*srcStride
		do := y * dstStride
		for x := 0; x < w; x++ {
			copy(px[:sbpp], src[so:so+sbpp])
			for k, i := range m {
				if i == fill {
					dst[do+k] = 0xff
				} else {
					dst[do+k] = px[i]
				}
			}
			so += sbpp
			do += dbpp
		}
	}
}

// repack returns an image of format f made from a decoder-style buffer
// (pix, stride, sbpp bytes per pixel) by remap. With inPlace the result
// reuses pix (the caller gives up the source image); otherwise it is a
// fresh buffer.
func repack(pix []byte, off, stride, sbpp, w, h int, f zenmetrics.PixelFormat, m []int, inPlace bool) *zenmetrics.Image {
	dbpp := f.BytesPerPixel()
	dstStride := w * dbpp
	var dst []byte
	if inPlace && off == 0 && dbpp <= sbpp && dstStride <= stride {
		n := dstStride * h
		dst = pix[:n:n]
	} else {
		dst = make([]byte, dstStride*h)
	}
	remap(dst, dstStride, dbpp, pix, off, stride, sbpp, w, h, m)
	return &zenmetrics.Image{Width: w, Height: h, Format: f, Stride: dstStride, Pix: dst}
}

// identity maps for remap.
var (
	mapGray8   = []int{0}
	mapGray16  = []int{0, 1}
	mapRGBA8   = []int{0, 1, 2, 3}
	mapRGBA16  = []int{0, 1, 2, 3, 4, 5, 6, 7}
	mapRGB8    = []int{0, 1, 2}          // drop alpha from 4-byte pixels
	mapRGB16   = []int{0, 1, 2, 3, 4, 5} // drop alpha from 8-byte pixels
	mapGrayA8  = []int{0, 3}             // R and A of an RGBA pixel whose R=G=B
	mapGrayA16 = []int{0, 1, 6, 7}
)

// convert turns a standard-library image into format want. inPlace allows
// reusing the source's pixel buffer (only for images the caller owns, e.g.
// fresh decoder output). An (image type, format) pair not handled here is
// an error. Only conversions that keep every sample exact are listed,
// except the un-premultiplication of *image.RGBA/RGBA64 with translucent
// pixels (FromStdImage's case) and colour-model conversions of YCbCr/CMYK.
func convert(img image.Image, want zenmetrics.PixelFormat, inPlace bool) (*zenmetrics.Image, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("%w: empty %dx%d image", zenmetrics.ErrBadInput, w, h)
	}
	switch src := img.(type) {
	case *image.Gray:
		if want == zenmetrics.Gray8 {
			return repack(src.Pix, src.PixOffset(b.Min.X, b.Min.Y), src.Stride, 1, w, h, want, mapGray8, inPlace), nil
		}
	case *image.Gray16:
		if want == zenmetrics.Gray16 {
			return repack(src.Pix, src.PixOffset(b.Min.X, b.Min.Y), src.Stride, 2, w, h, want, mapGray16, inPlace), nil
		}
	case *image.NRGBA:
		off := src.PixOffset(b.Min.X, b.Min.Y)
		switch want {
		case zenmetrics.RGBA8:
			return repack(src.Pix, off, src.Stride, 4, w, h, want, mapRGBA8, inPlace), nil
		case zenmetrics.RGB8:
			return repack(src.Pix, off, src.Stride, 4, w, h, want, mapRGB8, inPlace), nil
		case zenmetrics.GrayA8:
			return repack(src.Pix, off, src.Stride, 4, w, h, want, mapGrayA8, inPlace), nil
		}
	case *image.NRGBA64:
		off := src.PixOffset(b.Min.X, b.Min.Y)
		switch want {
		case zenmetrics.RGBA16:
			return repack(src.Pix, off, src.Stride, 8, w, h, want, mapRGBA16, inPlace), nil
		case zenmetrics.RGB16:
			return repack(src.Pix, off, src.Stride, 8, w, h, want, mapRGB16, inPlace), nil
		case zenmetrics.GrayA16:
			return repack(src.Pix, off, src.Stride, 8, w, h, want, mapGrayA16, inPlace), nil
		}
	case *image.RGBA:
		off := src.PixOffset(b.Min.X, b.Min.Y)
		switch want {
		case zenmetrics.RGB8: // opaque source (PNG truecolour without tRNS, RGB JPEG)
			return repack(src.Pix, off, src.Stride, 4, w, h, want, mapRGB8, inPlace), nil
		case zenmetrics.RGBA8:
			return unpremultiply8(src, w, h), nil
		}
	case *image.RGBA64:
		off := src.PixOffset(b.Min.X, b.Min.Y)
		switch want {
		case zenmetrics.RGB16: // opaque source (16-bit PNG truecolour without tRNS)
			return repack(src.Pix, off, src.Stride, 8, w, h, want, mapRGB16, inPlace), nil
		case zenmetrics.RGBA16:
			return unpremultiply16(src, w, h), nil
		}
	case *image.Paletted:
		if want == zenmetrics.RGB8 || want == zenmetrics.RGBA8 {
			return fromPaletted(src, want), nil
		}
	case *image.YCbCr:
		if want == zenmetrics.RGB8 {
			return fromYCbCrJFIF(src, nil, 0, want), nil
		}
	case *image.NYCbCrA:
		if want == zenmetrics.RGBA8 {
			return fromYCbCrJFIF(&src.YCbCr, src.A, src.AStride, want), nil
		}
	case *image.CMYK:
		if want == zenmetrics.RGB8 {
			out := zenmetrics.NewImage(w, h, want)
			for y := 0; y < h; y++ {
				row := out.Row(y)
				for x := 0; x < w; x++ {
					i := src.PixOffset(b.Min.X+x, b.Min.Y+y)
					r, g, bb := color.CMYKToRGB(src.Pix[i], src.Pix[i+1], src.Pix[i+2], src.Pix[i+3])
					row[3*x], row[3*x+1], row[3*x+2] = r, g, bb
				}
			}
			return out, nil
		}
	}
	if want == zenmetrics.RGBA16 {
		return generic16(img), nil
	}
	return nil, fmt.Errorf("%w: cannot convert %T to %v", zenmetrics.ErrUnsupported, img, want)
}

// fromPaletted looks up every index; entries are taken as straight
// (non-premultiplied) values: color.NRGBA entries directly, color.RGBA
// entries (opaque ones, as image/png makes them) directly, anything else
// through color.NRGBAModel. Indices past the palette read as opaque black.
func fromPaletted(src *image.Paletted, f zenmetrics.PixelFormat) *zenmetrics.Image {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	var lut [256][4]byte
	for i := range lut {
		lut[i] = [4]byte{0, 0, 0, 0xff}
		if i >= len(src.Palette) || src.Palette[i] == nil {
			continue
		}
		switch c := src.Palette[i].(type) {
		case color.NRGBA:
			lut[i] = [4]byte{c.R, c.G, c.B, c.A}
		case color.RGBA:
			if c.A == 0xff {
				lut[i] = [4]byte{c.R, c.G, c.B, c.A}
				continue
			}
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			lut[i] = [4]byte{n.R, n.G, n.B, n.A}
		default:
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			lut[i] = [4]byte{n.R, n.G, n.B, n.A}
		}
	}
	out := zenmetrics.NewImage(w, h, f)
	bpp := f.BytesPerPixel()
	for y := 0; y < h; y++ {
		in := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):][:w]
		row := out.Row(y)
		for x, idx := range in {
			copy(row[x*bpp:x*bpp+bpp], lut[idx][:bpp])
		}
	}
	return out
}

// fromYCbCrJFIF converts with Go's JFIF (full-range) matrix and
// nearest-neighbour chroma, exactly what image/jpeg's YCbCr.At gives. a is
// an optional alpha plane (NYCbCrA).
func fromYCbCrJFIF(src *image.YCbCr, a []byte, aStride int, f zenmetrics.PixelFormat) *zenmetrics.Image {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	out := zenmetrics.NewImage(w, h, f)
	bpp := f.BytesPerPixel()
	for y := 0; y < h; y++ {
		row := out.Row(y)
		for x := 0; x < w; x++ {
			px, py := b.Min.X+x, b.Min.Y+y
			yi := src.YOffset(px, py)
			ci := src.COffset(px, py)
			r, g, bb := color.YCbCrToRGB(src.Y[yi], src.Cb[ci], src.Cr[ci])
			o := x * bpp
			row[o], row[o+1], row[o+2] = r, g, bb
			if bpp == 4 {
				row[o+3] = a[(py-b.Min.Y)*aStride+(px-b.Min.X)]
			}
		}
	}
	return out
}

func unpremultiply8(src *image.RGBA, w, h int) *zenmetrics.Image {
	b := src.Bounds()
	out := zenmetrics.NewImage(w, h, zenmetrics.RGBA8)
	for y := 0; y < h; y++ {
		row := out.Row(y)
		for x := 0; x < w; x++ {
			i := src.PixOffset(b.Min.X+x, b.Min.Y+y)
			c := color.RGBA{src.Pix[i], src.Pix[i+1], src.Pix[i+2], src.Pix[i+3]}
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = n.R, n.G, n.B, n.A
		}
	}
	return out
}

func unpremultiply16(src *image.RGBA64, w, h int) *zenmetrics.Image {
	b := src.Bounds()
	out := zenmetrics.NewImage(w, h, zenmetrics.RGBA16)
	for y := 0; y < h; y++ {
		row := out.Row(y)
		for x := 0; x < w; x++ {
			n := color.NRGBA64Model.Convert(src.RGBA64At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
			put16(row[8*x:], n.R, n.G, n.B, n.A)
		}
	}
	return out
}

// generic16 converts any image through color.NRGBA64Model.
func generic16(img image.Image) *zenmetrics.Image {
	b := img.Bounds()
	out := zenmetrics.NewImage(b.Dx(), b.Dy(), zenmetrics.RGBA16)
	for y := 0; y < out.Height; y++ {
		row := out.Row(y)
		for x := 0; x < out.Width; x++ {
			n := color.NRGBA64Model.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA64)
			put16(row[8*x:], n.R, n.G, n.B, n.A)
		}
	}
	return out
}

func put16(p []byte, v ...uint16) {
	for i, s := range v {
		p[2*i] = byte(s >> 8)
		p[2*i+1] = byte(s)
	}
}
