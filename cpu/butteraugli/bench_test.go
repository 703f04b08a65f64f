package butteraugli

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// photoPair makes a deterministic photo-like RGB8 pair: smooth colour
// gradients, soft shapes with hard edges, fine texture and sensor-like noise
// in the reference; the distorted image adds 8×8 block quantisation in one
// region, a blur in another and fresh noise everywhere. Nothing is flat or
// zero. format is RGB8, RGBA8 (alpha: a soft vignette) or Gray8.
func photoPair(w, h int, seed uint64, format zenmetrics.PixelFormat) (ref, dist *zenmetrics.Image) {
	ref = zenmetrics.NewImage(w, h, format)
	dist = zenmetrics.NewImage(w, h, format)
	nc := format.Channels()
	colour := 3
	if format.IsGray() {
		colour = 1
	}
	noise := lcg{seed}
	noise2 := lcg{seed ^ 0x9E3779B97F4A7C15}
	fw, fh := float64(w), float64(h)
	val := func(x, y int, c int) float64 {
		u, v := float64(x)/fw, float64(y)/fh
		base := 60 + 120*u*(1-0.3*float64(c)) + 50*v*float64(c+1)/3
		base += 25 * math.Sin(6.3*u*float64(c+2)+3*v) * math.Cos(4.1*v-float64(c))
		// Soft disc with a hard rim.
		dx, dy := u-0.62, v-0.4
		if r := math.Hypot(dx, dy*fw/fh); r < 0.22 {
			base = 0.6*base + 40*float64(2-c) + 30*(0.22-r)/0.22*float64(c)
		}
		// A dark bar and a bright rectangle: hard edges.
		if u > 0.1 && u < 0.18 && v > 0.15 {
			base *= 0.35
		}
		if u > 0.3 && u < 0.5 && v > 0.65 && v < 0.85 {
			base = 215 + 10*float64(c)
		}
		// Fine texture (fabric-like) in the lower right.
		if u > 0.6 && v > 0.6 {
			base += 18 * math.Sin(float64(x)*1.7+float64(c)) * math.Sin(float64(y)*1.3)
		}
		return base
	}
	for y := 0; y < h; y++ {
		rr, dr := ref.Row(y), dist.Row(y)
		for x := 0; x < w; x++ {
			for c := 0; c < colour; c++ {
				v := val(x, y, c) + float64(int(noise.next())-128)/32
				rr[x*nc+c] = clampByte(int(v))
				// Distortion: 8×8 block means in the upper left quarter,
				// a horizontal smear in the lower left, noise elsewhere.
				dv := v
				switch {
				case x < w/2 && y < h/2:
					bx, by := x/8*8+4, y/8*8+4
					dv = 0.5*v + 0.5*val(bx, by, c)
				case x < w/2:
					dv = (val(x-2, y, c) + val(x, y, c) + val(x+2, y, c)) / 3
				}
				dv += float64(int(noise2.next())-128) / 20
				dr[x*nc+c] = clampByte(int(dv + 0.5))
			}
			if format.HasAlpha() {
				u, v := float64(x)/fw-0.5, float64(y)/fh-0.5
				a := clampByte(int(255 * (1.3 - 2*math.Hypot(u, v))))
				rr[x*nc+nc-1] = a
				dr[x*nc+nc-1] = a
			}
		}
	}
	return ref, dist
}

func BenchmarkButteraugli(b *testing.B) {
	sizes := []struct {
		name string
		w, h int
	}{{"1MP", 1024, 1024}, {"4MP", 2048, 2048}}
	for _, sz := range sizes {
		ref, dist := photoPair(sz.w, sz.h, 1, zenmetrics.RGB8)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			cfg := Config{Threads: threads}
			b.Run(fmt.Sprintf("%s/threads=%d/oneshot", sz.name, threads), func(b *testing.B) {
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Compare(ref, dist, cfg); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/threads=%d/pair", sz.name, threads), func(b *testing.B) {
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ComparePair(ref, dist, cfg); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/threads=%d/cached", sz.name, threads), func(b *testing.B) {
				r, err := Prepare(ref, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Release()
				b.SetBytes(int64(sz.w * sz.h * 3))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := r.Score(dist); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
