package butteraugli

import "math"

// Butteraugli's blurs are truncated Gaussians: the kernel reaches out
// int(2.25·σ) pixels. The 5-tap one (only σ=1.2, in the opsin dynamics) is
// libjxl's Separable5 convolution, which mirrors the image at its borders
// (the edge pixel repeated). Every longer kernel is a plain FIR applied to
// rows and then to columns; at the borders the kernel is cut off at the
// image edge and renormalised to the weights that remain.

// kernel is one precomputed blur.
type kernel struct {
	full []float32 // 2·off+1 taps, unnormalised
	off  int
	// half[i] = full[i] / Σfull, i = 0..off (outermost tap first); used
	// where the whole kernel fits inside the image.
	half []float32
	// sep5 weights (centre, ±1, ±2), for the 5-tap mirrored blur.
	w0, w1, w2 float32
}

func makeKernel(sigma float32) *kernel {
	const m = float32(2.25)
	s := float64(sigma)
	scaler := -1.0 / (2.0 * s * s)
	off := int(m * float32(math.Abs(float64(sigma))))
	if off < 1 {
		off = 1
	}
	k := &kernel{full: make([]float32, 2*off+1), off: off}
	for i := -off; i <= off; i++ {
		k.full[i+off] = float32(math.Exp(scaler * float64(i) * float64(i)))
	}
	var sum float32
	for _, v := range k.full {
		sum += v
	}
	inv := 1 / sum
	k.half = make([]float32, off+1)
	for i := range k.half {
		k.half[i] = k.full[i] * inv
	}
	if len(k.full) == 5 {
		k.w0 = k.full[2] * inv
		k.w1 = k.full[1] * inv
		k.w2 = k.full[0] * inv
	}
	return k
}

// The five blur radii butteraugli uses.
var (
	kernOpsin = makeKernel(1.2)           // 5 taps
	kernLF    = makeKernel(7.15593339443) // 33 taps
	kernHF    = makeKernel(3.22489901262) // 15 taps
	kernUHF   = makeKernel(1.56416327805) // 7 taps
	kernMask  = makeKernel(2.7)           // 13 taps
)

// blur writes the blurred in to out (which may be in itself; tmp is a
// scratch plane of the same size, distinct from both).
func blur(wk workers, k *kernel, in, out, tmp plane) {
	if len(k.full) == 5 && &in.p[0] != &out.p[0] {
		blurSep5(wk, k, in, out, tmp)
		return
	}
	// Horizontal pass into tmp, then vertical pass into out.
	wk.rows(in.h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			firRow(k, in.row(y), tmp.row(y))
		}
	})
	wk.rows(in.h, func(y0, y1 int) {
		firColumns(k, tmp, out, y0, y1)
	})
}

// firRow convolves one row along x.
func firRow(k *kernel, src, dst []float32) {
	n := len(src)
	off := k.off
	b1 := min(n, off)
	b2 := 0
	if n > off {
		b2 = n - off
	}
	sk := k.half
	switch off {
	case 3:
		s0, s1, s2, s3 := sk[0], sk[1], sk[2], sk[3]
		for x := b1; x < b2; x++ {
			r := src[x-3 : x+4 : x+4]
			a := (r[0] + r[6]) * s0
			b := (r[1] + r[5]) * s1
			c := (r[2] + r[4]) * s2
			dst[x] = r[3]*s3 + a + b + c
		}
	default:
		for x := b1; x < b2; x++ {
			r := src[x-off : x+off+1 : x+off+1]
			var acc [4]float32
			for i := 0; i < off; i++ {
				v := (r[i] + r[2*off-i]) * sk[i]
				if i < 4 {
					acc[i] = v
				} else {
					acc[i&3] += v
				}
			}
			dst[x] = r[off]*sk[off] + acc[0] + acc[1] + acc[2] + acc[3]
		}
	}
	for x := 0; x < n; x++ {
		if x < b1 || x >= b2 {
			dst[x] = borderTap(k, n, x, src)
		}
	}
}

// borderTap is the renormalised, cut-off kernel at position x of a line of
// n samples.
func borderTap(k *kernel, n, x int, src []float32) float32 {
	off := k.off
	lo := max(0, x-off)
	hi := min(n-1, x+off)
	var wsum float32
	for j := lo; j <= hi; j++ {
		wsum += k.full[j-x+off]
	}
	scale := 1 / wsum
	var sum float32
	for j := lo; j <= hi; j++ {
		sum += src[j] * k.full[j-x+off]
	}
	return sum * scale
}

// firColumns convolves rows [y0, y1) of out along y, reading src.
func firColumns(k *kernel, src, out plane, y0, y1 int) {
	h, w := src.h, src.w
	off := k.off
	b1 := min(h, off)
	b2 := 0
	if h > off {
		b2 = h - off
	}
	sk := k.half
	var acc [4][]float32
	for i := range acc {
		acc[i] = make([]float32, w)
	}
	for y := y0; y < y1; y++ {
		dst := out.row(y)
		if y >= b1 && y < b2 {
			for i := 0; i < off; i++ {
				ra := src.row(y - off + i)
				rb := src.row(y + off - i)
				s := sk[i]
				a := acc[i&3]
				if i < 4 {
					for x := range a {
						a[x] = (ra[x] + rb[x]) * s
					}
				} else {
					for x := range a {
						a[x] += (ra[x] + rb[x]) * s
					}
				}
			}
			rc := src.row(y)
			sc := sk[off]
			a0, a1, a2 := acc[0], acc[1], acc[2]
			if off >= 4 {
				a3 := acc[3]
				for x := range dst {
					dst[x] = rc[x]*sc + a0[x] + a1[x] + a2[x] + a3[x]
				}
			} else {
				for x := range dst {
					dst[x] = rc[x]*sc + a0[x] + a1[x] + a2[x]
				}
			}
			continue
		}
		// Border row: cut-off kernel, renormalised.
		lo := max(0, y-off)
		hi := min(h-1, y+off)
		var wsum float32
		for j := lo; j <= hi; j++ {
			wsum += k.full[j-y+off]
		}
		scale := 1 / wsum
		a := acc[0]
		for x := range a {
			a[x] = 0
		}
		for j := lo; j <= hi; j++ {
			r := src.row(j)
			kw := k.full[j-y+off]
			for x := range a {
				a[x] += r[x] * kw
			}
		}
		for x := range dst {
			dst[x] = a[x] * scale
		}
	}
}

// mirror reflects an out-of-range coordinate back into [0, n), repeating
// the edge sample.
func mirror(x, n int) int {
	for x < 0 || x >= n {
		if x < 0 {
			x = -x - 1
		} else {
			x = 2*n - 1 - x
		}
	}
	return x
}

// blurSep5 is the 5×5 separable blur with mirrored borders: each of the five
// rows around the output is convolved along x, then the five results are
// combined along y.
func blurSep5(wk workers, k *kernel, in, out, tmp plane) {
	w, h := in.w, in.h
	w0, w1, w2 := k.w0, k.w1, k.w2
	wk.rows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			src := in.row(y)
			dst := tmp.row(y)
			if w >= 5 {
				for x := 2; x < w-2; x++ {
					dst[x] = src[x]*w0 + (src[x-1]+src[x+1])*w1 + (src[x-2]+src[x+2])*w2
				}
				for _, x := range [4]int{0, 1, w - 2, w - 1} {
					dst[x] = src[x]*w0 + (src[mirror(x-1, w)]+src[mirror(x+1, w)])*w1 +
						(src[mirror(x-2, w)]+src[mirror(x+2, w)])*w2
				}
			} else {
				for x := 0; x < w; x++ {
					dst[x] = src[x]*w0 + (src[mirror(x-1, w)]+src[mirror(x+1, w)])*w1 +
						(src[mirror(x-2, w)]+src[mirror(x+2, w)])*w2
				}
			}
		}
	})
	wk.rows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			m := tmp.row(y)
			t1 := tmp.row(mirror(y-1, h))
			b1 := tmp.row(mirror(y+1, h))
			t2 := tmp.row(mirror(y-2, h))
			b2 := tmp.row(mirror(y+2, h))
			dst := out.row(y)
			for x := range dst {
				dst[x] = m[x]*w0 + (t1[x]+b1[x])*w1 + (t2[x]+b2[x])*w2
			}
		}
	})
}
