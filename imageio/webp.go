package imageio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"

	"golang.org/x/image/webp"

	"github.com/zenmetrics-go/zenmetrics"
)

// webpInfo is what the first chunk of a WebP file says.
type webpInfo struct {
	width, height int
	alpha         bool // VP8X alpha flag, or the VP8L alpha_is_used bit
}

func (wi webpInfo) format() zenmetrics.PixelFormat {
	if wi.alpha {
		return zenmetrics.RGBA8
	}
	return zenmetrics.RGB8
}

// parseWebPHeader reads the flags of the first chunk (alpha, animation)
// and takes the size from x/image/webp's own header reader.
func parseWebPHeader(data []byte) (webpInfo, error) {
	var wi webpInfo
	if len(data) < 21 {
		return wi, fmt.Errorf("%w: webp: truncated header (%d bytes)", zenmetrics.ErrBadInput, len(data))
	}
	switch fourcc := string(data[12:16]); fourcc {
	case "VP8X":
		flags := data[20]
		if flags&0x02 != 0 {
			return wi, fmt.Errorf("%w: webp: animated WebP is not supported", zenmetrics.ErrUnsupported)
		}
		wi.alpha = flags&0x10 != 0
	case "VP8L":
		if len(data) < 25 || data[20] != 0x2f {
			return wi, fmt.Errorf("%w: webp: bad lossless header", zenmetrics.ErrBadInput)
		}
		wi.alpha = binary.LittleEndian.Uint32(data[21:25])>>28&1 != 0
	case "VP8 ":
	default:
		return wi, fmt.Errorf("%w: webp: unknown first chunk %q", zenmetrics.ErrBadInput, fourcc)
	}
	cfg, err := webp.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return wi, decodeErr("webp", err)
	}
	wi.width, wi.height = cfg.Width, cfg.Height
	return wi, nil
}

// decodeWebP decodes the bitstream with x/image/webp and converts lossy
// Y'CbCr to RGB as libwebp does.
func decodeWebP(data []byte, hd header) (*zenmetrics.Image, error) {
	img, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, decodeErr("webp", err)
	}
	b := img.Bounds()
	if !zeroOrigin(b) || b.Dx() != hd.w || b.Dy() != hd.h {
		return nil, fmt.Errorf("%w: webp decoder returned bounds %v for a %dx%d header", zenmetrics.ErrBadInput, b, hd.w, hd.h)
	}
	switch src := img.(type) {
	case *image.YCbCr:
		if hd.pf == zenmetrics.RGB8 && src.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			return yuv420ToRGB(src, nil, 0), nil
		}
	case *image.NYCbCrA:
		if hd.pf == zenmetrics.RGBA8 && src.SubsampleRatio == image.YCbCrSubsampleRatio420 &&
			len(src.A) >= src.AStride*(hd.h-1)+hd.w {
			return yuv420ToRGB(&src.YCbCr, src.A, src.AStride), nil
		}
	case *image.NRGBA:
		// Lossless: exact ARGB. Without a declared alpha channel the alpha
		// samples are dropped, as dwebp does.
		return convert(src, hd.pf, true)
	}
	return nil, unexpectedType("webp", img, hd.pf)
}

// yuv420ToRGB converts a VP8 frame (BT.601 limited range, 4:2:0) to RGB8,
// or to RGBA8 when an alpha plane is given, bit-exactly as libwebp's
// default output path: "fancy" upsampling, which interpolates each chroma
// sample from its 2×2 neighbourhood with weights 9/3/3/1, then libwebp's
// 14-bit fixed-point Y'CbCr→RGB.
//
// Output rows are produced in the same pairs libwebp uses: row 0 alone
// (its chroma row counted as both "above" and "current"), then rows
// (2k-1, 2k) between chroma rows k-1 and k, then, for an even height, the
// last row alone.
func yuv420ToRGB(src *image.YCbCr, alpha []byte, aStride int) *zenmetrics.Image {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	f := zenmetrics.RGB8
	if alpha != nil {
		f = zenmetrics.RGBA8
	}
	out := zenmetrics.NewImage(w, h, f)
	cw := (w + 1) / 2
	yRow := func(y int) []byte { return src.Y[y*src.YStride:][:w] }
	cRow := func(p []byte, cy int) []byte { return p[cy*src.CStride:][:cw] }
	// Interpolated chroma for up to two output rows.
	tu, tv := make([]uint8, w), make([]uint8, w)
	bu, bv := make([]uint8, w), make([]uint8, w)
	emit := func(y int, u, v []uint8) {
		row := out.Row(y)
		ys := yRow(y)
		bpp := f.BytesPerPixel()
		for x := 0; x < w; x++ {
			o := x * bpp
			row[o], row[o+1], row[o+2] = webpYUVToRGB(int(ys[x]), int(u[x]), int(v[x]))
			if alpha != nil {
				row[o+3] = alpha[y*aStride+x]
			}
		}
	}
	pair := func(top, bot int, tc, cc int) {
		upsampleLinePair(cRow(src.Cb, tc), cRow(src.Cb, cc), tu, bu, w)
		upsampleLinePair(cRow(src.Cr, tc), cRow(src.Cr, cc), tv, bv, w)
		emit(top, tu, tv)
		if bot >= 0 {
			emit(bot, bu, bv)
		}
	}
	pair(0, -1, 0, 0)
	for k := 1; 2*k < h; k++ {
		pair(2*k-1, 2*k, k-1, k)
	}
	if h%2 == 0 && h > 1 {
		last := h/2 - 1
		pair(h-1, -1, last, last)
	}
	return out
}

// upsampleLinePair interpolates one chroma plane for two output rows of
// width w: top gets the row nearer chroma row t, bot the row nearer c. The
// integer rounding is libwebp's, computed per plane (libwebp packs U and V
// into one 32-bit word, which gives the same bits).
func upsampleLinePair(t, c []uint8, top, bot []uint8, w int) {
	tl, l := int(t[0]), int(c[0])
	top[0] = uint8((3*tl + l + 2) >> 2)
	bot[0] = uint8((3*l + tl + 2) >> 2)
	last := (w - 1) >> 1
	for x := 1; x <= last; x++ {
		tx, cx := int(t[x]), int(c[x])
		avg := tl + tx + l + cx + 8
		d12 := (avg + 2*(tx+l)) >> 3
		d03 := (avg + 2*(tl+cx)) >> 3
		top[2*x-1] = uint8((d12 + tl) >> 1)
		top[2*x] = uint8((d03 + tx) >> 1)
		bot[2*x-1] = uint8((d03 + l) >> 1)
		bot[2*x] = uint8((d12 + cx) >> 1)
		tl, l = tx, cx
	}
	if w%2 == 0 {
		top[w-1] = uint8((3*tl + l + 2) >> 2)
		bot[w-1] = uint8((3*l + tl + 2) >> 2)
	}
}

// webpYUVToRGB is libwebp's fixed-point BT.601 conversion: products keep 8
// fractional bits ((a·k)>>8), sums 6, and the result is clipped to 0..255.
func webpYUVToRGB(y, u, v int) (r, g, b uint8) {
	yy := (y * 19077) >> 8
	r = clip6(yy + (v*26149)>>8 - 14234)
	g = clip6(yy - (u*6419)>>8 - (v*13320)>>8 + 8708)
	b = clip6(yy + (u*33050)>>8 - 17685)
	return
}

func clip6(v int) uint8 {
	if v&^(256<<6-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}
