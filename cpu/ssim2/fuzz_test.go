package ssim2

import (
	"errors"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// FuzzScore feeds random sizes, pixel formats and bytes through Score and
// Prepare+Score: no panic may escape, and every call returns either a score
// in [-inf, 100] (never NaN) or a typed error.
func FuzzScore(f *testing.F) {
	f.Add(uint8(8), uint8(8), uint8(0), uint8(0), []byte{0, 255, 128, 7})
	f.Add(uint8(7), uint8(9), uint8(3), uint8(1), []byte{1, 2, 3})
	f.Add(uint8(33), uint8(17), uint8(7), uint8(2), []byte("photo-like bytes"))
	f.Add(uint8(16), uint8(16), uint8(5), uint8(3), []byte{})
	f.Fuzz(func(t *testing.T, w, h, format, mode uint8, data []byte) {
		fw, fh := 1+int(w)%48, 1+int(h)%48
		pf := zenmetrics.PixelFormat(1 + int(format)%8)
		ref := fill(fw, fh, pf, data, 0)
		dist := fill(fw, fh, pf, data, 1)
		switch mode % 4 {
		case 1: // other format on the distorted side
			dist = fill(fw, fh, zenmetrics.PixelFormat(1+int(format+3)%8), data, 2)
		case 2: // other size
			dist = fill(fw+1, fh, pf, data, 1)
		case 3: // broken buffer
			dist.Pix = dist.Pix[:len(dist.Pix)/2]
		}
		v, err := Score(ref, dist, Config{Threads: 1 + int(mode)%3})
		check(t, v, err)
		if r, err := Prepare(ref, Config{Threads: 2}); err == nil {
			v, err := r.Score(dist)
			check(t, v, err)
			r.Release()
			if _, err := r.Score(dist); !errors.Is(err, zenmetrics.ErrReleased) {
				t.Fatalf("score after release: %v", err)
			}
		} else {
			check(t, 0, err)
		}
	})
}

// fill builds an image whose bytes repeat data (shifted by salt).
func fill(w, h int, f zenmetrics.PixelFormat, data []byte, salt int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	for i := range im.Pix {
		if len(data) > 0 {
			im.Pix[i] = data[(i+salt)%len(data)] + byte(salt*i/7)
		} else {
			im.Pix[i] = byte(i * (salt + 1))
		}
	}
	return im
}

func check(t *testing.T, v float64, err error) {
	t.Helper()
	if err != nil {
		var pe *zenmetrics.PanicError
		if errors.As(err, &pe) {
			t.Fatalf("panic: %v\n%s", pe.Value, pe.Stack)
		}
		if !errors.Is(err, zenmetrics.ErrBadInput) && !errors.Is(err, zenmetrics.ErrSizeMismatch) {
			t.Fatalf("untyped error: %v", err)
		}
		return
	}
	if math.IsNaN(v) || v > 100 {
		t.Fatalf("score %v outside [-inf, 100]", v)
	}
}
