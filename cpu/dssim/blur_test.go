package dssim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naivePass is one pass of dssim-core's 3×3 blur written the way its
// portable code loops (blur.rs do3f for inner pixels, do3 with mul_add for
// the first and last of a row, rows clamped at the top and bottom), pixel
// by pixel with all nine taps: the reference for the row-sum version.
func naivePass(src []float32, w, h int) []float32 {
	k := kernel
	out := make([]float32, w*h)
	for y := 0; y < h; y++ {
		rows := [3][]float32{}
		for i, r := range []int{max(y-1, 0), y, min(y+1, h-1)} {
			rows[i] = src[r*w : r*w+w]
		}
		for x := 0; x < w; x++ {
			x0, x2 := max(x-1, 0), min(x+1, w-1)
			var sum [3]float32
			for i, row := range rows {
				if x == 0 || x == w-1 {
					sum[i] = fma32(row[x2], k[3*i+2], fma32(row[x0], k[3*i], row[x]*k[3*i+1]))
				} else {
					sum[i] = float32(float32(row[x0]*k[3*i])+float32(row[x]*k[3*i+1])) + float32(row[x2]*k[3*i+2])
				}
			}
			out[y*w+x] = (sum[0] + sum[1]) + sum[2]
		}
	}
	return out
}

// TestBlurMatchesNaive: the row-sum blur gives the same bits as the
// nine-tap loop, for plain, squared and product inputs, at awkward sizes
// (1 and 2 pixels wide or high, odd) and any thread count.
func TestBlurMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {2, 2}, {2, 9}, {3, 3}, {37, 23}, {64, 150}, {1500, 40}} {
		w, h := sz[0], sz[1]
		a := make([]float32, w*h)
		b := make([]float32, w*h)
		for i := range a {
			a[i], b[i] = rng.Float32(), rng.Float32()
		}
		sq := make([]float32, w*h)
		prod := make([]float32, w*h)
		for i := range a {
			sq[i], prod[i] = a[i]*a[i], a[i]*b[i]
		}
		cases := []struct {
			name string
			in   blurInput
			src  []float32
		}{{"plain", blurInput{a: a}, a}, {"square", blurInput{a: a, square: true}, sq}, {"product", blurInput{a: a, b: b}, prod}}
		for _, c := range cases {
			want := naivePass(naivePass(c.src, w, h), w, h)
			for _, threads := range []int{1, 3} {
				p := pool{threads: threads}
				bufs := make([][]float32, threads)
				for i := range bufs {
					bufs[i] = make([]float32, rowBufLen(w))
				}
				got := make([]float32, w*h)
				p.blur(c.in, got, make([]float32, w*h), w, h, bufs)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%dx%d %s threads=%d: pixel %d = %v, nine-tap %v", w, h, c.name, threads, i, got[i], want[i])
					}
				}
			}
		}
	}
	// In place (dst = input plane), as dssim-core's blur_in_place.
	w, h := 33, 17
	a := make([]float32, w*h)
	for i := range a {
		a[i] = rng.Float32()
	}
	want := naivePass(naivePass(a, w, h), w, h)
	p := pool{threads: 2}
	p.blur(blurInput{a: a}, a, make([]float32, w*h), w, h, [][]float32{make([]float32, rowBufLen(w)), make([]float32, rowBufLen(w))})
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(want[i]) {
			t.Fatalf("in place: pixel %d differs", i)
		}
	}
}
