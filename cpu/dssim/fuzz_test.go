package dssim

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// FuzzCompare feeds random sizes (from 1×1), pixel formats and bytes
// through Compare and Prepare+Score: no panic may escape, and every call
// returns either a finite DSSIM ≥ 0 (each scale's pooled score is 1 minus
// a mean absolute deviation, so SSIM ≤ 1) with a map of the image's size,
// or a typed error.
func FuzzCompare(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), []byte{0, 255, 128, 7})
	f.Add(uint8(7), uint8(9), uint8(3), uint8(1), []byte{1, 2, 3})
	f.Add(uint8(33), uint8(17), uint8(7), uint8(2), []byte("photo-like bytes"))
	f.Add(uint8(16), uint8(1), uint8(5), uint8(3), []byte{})
	f.Fuzz(func(t *testing.T, w, h, format, mode uint8, data []byte) {
		fw, fh := 1+int(w)%48, 1+int(h)%48
		pf := zenmetrics.PixelFormat(1 + int(format)%8)
		ref := fill(fw, fh, pf, data, 0)
		dist := fill(fw, fh, pf, data, 1)
		switch mode % 4 {
		case 1: // another format on the distorted side
			dist = fill(fw, fh, zenmetrics.PixelFormat(1+int(format+3)%8), data, 2)
		case 2: // another size
			dist = fill(fw+1, fh, pf, data, 1)
		case 3: // a buffer too short
			dist.Pix = dist.Pix[:len(dist.Pix)/2]
		}
		v, m, err := Compare(ref, dist, Config{Threads: 1 + int(mode)%3, SSIMMap: true})
		check(t, v, m, fw, fh, err)
		if r, err := Prepare(ref, Config{Threads: 2}); err == nil {
			v, m, err := r.Score(context.Background(), dist)
			if m != nil {
				t.Fatal("map returned without Config.SSIMMap")
			}
			check(t, v, nil, fw, fh, err)
			r.Release()
			if _, _, err := r.Score(context.Background(), dist); !errors.Is(err, zenmetrics.ErrReleased) {
				t.Fatalf("score after release: %v", err)
			}
		} else {
			check(t, 0, nil, fw, fh, err)
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

func check(t *testing.T, v float64, m *zenmetrics.FloatPlane, w, h int, err error) {
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
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		t.Fatalf("DSSIM %v not finite and ≥ 0", v)
	}
	if m != nil && (m.Width != w || m.Height != h || len(m.Pix) != w*h) {
		t.Fatalf("map %dx%d (%d values) for a %dx%d image", m.Width, m.Height, len(m.Pix), w, h)
	}
}
