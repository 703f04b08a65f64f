// Package zensimtest holds the image generators and distortions of zensim
// 0.2.7's cross-platform test (zensim/tests/common/generators.rs, tag
// zensim-v0.2.7), written here from their definitions, and the scores that
// test publishes for them, so that every backend's zensim is checked
// against the same published values (cpu/zensim, gpu/webgpu/zensim). The
// published scores are for exactly these pixels, so every integer
// rounding and wrap follows the definition.
package zensimtest

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics"
)

// RGB is one 8-bit pixel.
type RGB = [3]uint8

type rgb = RGB

// Checkerboard is the checkerboard generator (freq squares per side).
func Checkerboard(w, h, freq int) []rgb {
	p := make([]rgb, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8(240)
			if (x*freq/w+y*freq/h)%2 != 0 {
				v = 16
			}
			p[y*w+x] = rgb{v, v + uint8(x%17), v + uint8(y%13)}
		}
	}
	return p
}

// Mandelbrot is the Mandelbrot generator.
func Mandelbrot(w, h int) []rgb {
	p := make([]rgb, w*h)
	const maxIter = 256
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cx := -2.0 + float64(x)*2.5/float64(w)
			cy := -1.25 + float64(y)*2.5/float64(h)
			var zx, zy float64
			it := uint32(0)
			for float64(zx*zx)+float64(zy*zy) <= 4 && it < maxIter {
				// Explicit conversions keep Go from fusing into FMAs,
				// which Rust never does.
				t := float64(zx*zx) - float64(zy*zy) + cx
				zy = float64(2*zx*zy) + cy
				zx = t
				it++
			}
			if it != maxIter {
				p[y*w+x] = rgb{uint8(it * 7), uint8(it * 13), uint8(it * 19)}
			}
		}
	}
	return p
}

// ValueNoise is the three-octave value noise generator.
func ValueNoise(w, h int, seed uint32) []rgb {
	hash := func(x, y int32, s uint32) uint32 {
		v := uint32(x)*374761393 ^ uint32(y)*668265263 ^ s*1274126177
		v = v*v + v
		v ^= v >> 16
		v *= 2654435769
		return v >> 24
	}
	layer := func(px, py, grid int, s uint32) uint32 {
		gx, gy := int32(px/grid), int32(py/grid)
		fx, fy, g := uint32(px%grid), uint32(py%grid), uint32(grid)
		v00, v10 := hash(gx, gy, s), hash(gx+1, gy, s)
		v01, v11 := hash(gx, gy+1, s), hash(gx+1, gy+1, s)
		top := v00*(g-fx) + v10*fx
		bot := v01*(g-fx) + v11*fx
		return min((top*(g-fy)+bot*fy)/(g*g), 255)
	}
	p := make([]rgb, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var r, g, b uint32
			for _, gw := range [3][2]uint32{{16, 4}, {8, 2}, {4, 1}} {
				grid := int(gw[0])
				r += layer(x, y, grid, seed) * gw[1]
				g += layer(x, y, grid, seed+1) * gw[1]
				b += layer(x, y, grid, seed+2) * gw[1]
			}
			p[y*w+x] = rgb{uint8(min(r/7, 255)), uint8(min(g/7, 255)), uint8(min(b/7, 255))}
		}
	}
	return p
}

// ColorBlocks is the 4×4 colour block generator.
func ColorBlocks(w, h int) []rgb {
	colors := [16]rgb{
		{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0},
		{255, 0, 255}, {0, 255, 255}, {255, 128, 0}, {128, 0, 255},
		{0, 128, 255}, {255, 0, 128}, {128, 255, 0}, {0, 255, 128},
		{64, 0, 128}, {128, 64, 0}, {0, 128, 64}, {192, 192, 64},
	}
	p := make([]rgb, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p[y*w+x] = colors[(y*4/h)*4+x*4/w]
		}
	}
	return p
}

func clampi(v, lo, hi int) int { return min(max(v, lo), hi) }

// Blur is the box blur distortion of the given radius (clamped edges).
func Blur(src []rgb, w, h, radius int) []rgb {
	tmp := make([][3]uint32, w*h)
	dst := make([]rgb, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var s [3]uint32
			for dx := -radius; dx <= radius; dx++ {
				sx := clampi(x+dx, 0, w-1)
				for c := 0; c < 3; c++ {
					s[c] += uint32(src[y*w+sx][c])
				}
			}
			tmp[y*w+x] = s
		}
	}
	d2 := uint32((2*radius + 1) * (2*radius + 1))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var s [3]uint32
			for dy := -radius; dy <= radius; dy++ {
				sy := clampi(y+dy, 0, h-1)
				for c := 0; c < 3; c++ {
					s[c] += tmp[sy*w+x][c]
				}
			}
			dst[y*w+x] = rgb{uint8(s[0] / d2), uint8(s[1] / d2), uint8(s[2] / d2)}
		}
	}
	return dst
}

// Sharpen is the unsharp-mask distortion (2 × (src − blur radius 2)).
func Sharpen(src []rgb, w, h int) []rgb {
	bl := Blur(src, w, h, 2)
	dst := make([]rgb, w*h)
	for i := range src {
		for c := 0; c < 3; c++ {
			s, b := float32(src[i][c]), float32(bl[i][c])
			v := s + float32(2*float32(s-b))
			dst[i][c] = uint8(min(max(math.Round(float64(v)), 0), 255))
		}
	}
	return dst
}

func satAdd(a uint8, b int) uint8 { return uint8(clampi(int(a)+b, 0, 255)) }

// ColorShift adds (20, −15, 30), saturating.
func ColorShift(src []rgb, w, h int) []rgb {
	dst := make([]rgb, w*h)
	for i, p := range src {
		dst[i] = rgb{satAdd(p[0], 20), satAdd(p[1], -15), satAdd(p[2], 30)}
	}
	return dst
}

// BlockArtifacts blends each 8×8 block with its mean and marks the block edges.
func BlockArtifacts(src []rgb, w, h int) []rgb {
	dst := append([]rgb(nil), src...)
	for by := 0; by < (h+7)/8; by++ {
		for bx := 0; bx < (w+7)/8; bx++ {
			x0, y0 := bx*8, by*8
			x1, y1 := min(x0+8, w), min(y0+8, h)
			cnt := uint32((x1 - x0) * (y1 - y0))
			var s [3]uint32
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					for c := 0; c < 3; c++ {
						s[c] += uint32(src[y*w+x][c])
					}
				}
			}
			avg := [3]uint32{uint32(uint8(s[0] / cnt)), uint32(uint8(s[1] / cnt)), uint32(uint8(s[2] / cnt))}
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					for c := 0; c < 3; c++ {
						dst[y*w+x][c] = uint8((uint32(src[y*w+x][c]) + avg[c]) / 2)
					}
				}
			}
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x%8 == 0 || y%8 == 0 {
				p := &dst[y*w+x]
				p[0], p[1], p[2] = satAdd(p[0], 8), satAdd(p[1], -4), satAdd(p[2], 6)
			}
		}
	}
	return dst
}

// Image packs pixels into an RGB8 image.
func Image(p []rgb, w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for y := 0; y < h; y++ {
		row := im.Pix[y*im.Stride:]
		for x := 0; x < w; x++ {
			copy(row[3*x:3*x+3], p[y*w+x][:])
		}
	}
	return im
}

// Pair is one test pair.
type Pair struct {
	Name      string
	Src, Dist []RGB
}

// Pairs is the cross-platform test's list, in its order.
func Pairs(w, h int) []Pair {
	ch := Checkerboard(w, h, 8)
	mb := Mandelbrot(w, h)
	nz := ValueNoise(w, h, 42)
	bl := ColorBlocks(w, h)
	return []Pair{
		{"checkerboard+blur", ch, Blur(ch, w, h, 3)},
		{"checkerboard+sharpen", ch, Sharpen(ch, w, h)},
		{"mandelbrot+blur", mb, Blur(mb, w, h, 3)},
		{"mandelbrot+color_shift", mb, ColorShift(mb, w, h)},
		{"noise+blur", nz, Blur(nz, w, h, 3)},
		{"noise+block_artifacts", nz, BlockArtifacts(nz, w, h)},
		{"color_blocks+color_shift", bl, ColorShift(bl, w, h)},
		{"color_blocks+sharpen", bl, Sharpen(bl, w, h)},
	}
}

// PublishedSize is the side of the square pairs the scores are for.
const PublishedSize = 128

// Published are zensim 0.2.7's hardcoded reference scores for Pairs at
// 128×128, in order (zensim/tests/cross_platform.rs,
// hardcoded_reference_scores, tag zensim-v0.2.7; MIT OR Apache-2.0).
var Published = []struct {
	Name  string
	Score float64
}{
	{"checkerboard+blur", -79.872577454381457},
	{"checkerboard+sharpen", 29.588149295371096},
	{"mandelbrot+blur", 8.479272203622543},
	{"mandelbrot+color_shift", 48.143677644353694},
	{"noise+blur", 60.014996187146878},
	{"noise+block_artifacts", 52.798793807864449},
	{"color_blocks+color_shift", 30.389337020934434},
	{"color_blocks+sharpen", -5.661428862086183},
}

// PublishedTolerance is the tolerance zensim's own test allows between
// platforms (±1e-5 on the 0–100 scale; it reports x86 and ARM within ~2e-7).
const PublishedTolerance = 1e-5
