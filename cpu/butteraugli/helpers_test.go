package butteraugli

import (
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// loadPNG decodes a PNG into a zenmetrics.Image in the file's own mode
// (gray, gray+alpha, RGB, RGBA; 8 or 16 bits), with straight alpha.
func loadPNG(tb testing.TB, path string) *zenmetrics.Image {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	src, err := png.Decode(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	im, err := fromGoImage(src)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return im
}

func fromGoImage(src image.Image) (*zenmetrics.Image, error) {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	switch s := src.(type) {
	case *image.Gray:
		im := zenmetrics.NewImage(w, h, zenmetrics.Gray8)
		for y := 0; y < h; y++ {
			copy(im.Row(y), s.Pix[y*s.Stride:y*s.Stride+w])
		}
		return im, nil
	case *image.Gray16:
		im := zenmetrics.NewImage(w, h, zenmetrics.Gray16)
		for y := 0; y < h; y++ {
			copy(im.Row(y), s.Pix[y*s.Stride:y*s.Stride+2*w])
		}
		return im, nil
	case *image.RGBA:
		// Go decodes opaque truecolor PNGs to RGBA with A=255.
		im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
		for y := 0; y < h; y++ {
			r := im.Row(y)
			for x := 0; x < w; x++ {
				o := y*s.Stride + 4*x
				if s.Pix[o+3] != 255 {
					return nil, fmt.Errorf("unexpected premultiplied alpha")
				}
				copy(r[3*x:3*x+3], s.Pix[o:o+3])
			}
		}
		return im, nil
	case *image.NRGBA:
		im := zenmetrics.NewImage(w, h, zenmetrics.RGBA8)
		for y := 0; y < h; y++ {
			copy(im.Row(y), s.Pix[y*s.Stride:y*s.Stride+4*w])
		}
		return im, nil
	case *image.RGBA64:
		im := zenmetrics.NewImage(w, h, zenmetrics.RGB16)
		for y := 0; y < h; y++ {
			r := im.Row(y)
			for x := 0; x < w; x++ {
				o := y*s.Stride + 8*x
				if s.Pix[o+6] != 255 || s.Pix[o+7] != 255 {
					return nil, fmt.Errorf("unexpected premultiplied alpha")
				}
				copy(r[6*x:6*x+6], s.Pix[o:o+6])
			}
		}
		return im, nil
	case *image.NRGBA64:
		im := zenmetrics.NewImage(w, h, zenmetrics.RGBA16)
		for y := 0; y < h; y++ {
			copy(im.Row(y), s.Pix[y*s.Stride:y*s.Stride+8*w])
		}
		return im, nil
	}
	return nil, fmt.Errorf("unsupported decoded PNG type %T", src)
}

// relErr is |got−want| / |want| (absolute when want is 0).
func relErr(want, got float64) float64 {
	d := math.Abs(got - want)
	if want != 0 {
		d /= math.Abs(want)
	}
	return d
}

// worst tracks the largest relative error seen and where.
type worst struct {
	err  float64
	name string
	want float64
	got  float64
	n    int
}

func (w *worst) add(name string, want, got float64) float64 {
	e := relErr(want, got)
	w.n++
	if e > w.err || w.name == "" {
		w.err, w.name, w.want, w.got = e, name, want, got
	}
	return e
}

func (w *worst) String() string {
	return fmt.Sprintf("max rel err %.3g over %d (worst %s: want %.10g got %.10g)", w.err, w.n, w.name, w.want, w.got)
}
