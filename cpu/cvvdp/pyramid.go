package cvvdp

import (
	"math"
	"math/bits"

	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
)

// The decimated Laplacian pyramid of lpyr_dec.py (lpyr_dec,
// weber_contrast_pyr), in float32 as pycvvdp computes it.
//
// Reduce: a 5-tap Burt–Adelson kernel K = [¼−a/2, ¼, a, ¼, ¼−a/2], a = 0.4,
// applied vertically with stride 2 and then horizontally with stride 2, each
// with zero padding followed by pycvvdp's "symmetric padding" corrections
// at the first and last output. The correction of the last column tests
// the parity of the number of ROWS (lpyr_dec.py gausspyr_reduce checks
// x.shape[-2] for both passes); this is reproduced, since it changes the
// last column of every level of an image whose width and height differ in
// parity.
//
// Expand (to an explicit size): zeros interleaved, the first sample
// replicated one step before the start and the last one step after the end,
// then the kernel ×2, vertically then horizontally. Written out, an even
// output 2m is 0.1·x[m−1] + 0.8·x[m] + 0.1·x[m+1] and an odd one 2m+1 is
// 0.5·x[m] + 0.5·x[m+1], with x[−1] = x[0] and x[n] = x[n−1].

// Kernel taps in float32 (variables: computed from kernelA at run time in
// float64 and rounded once, as torch.tensor does).
var (
	kr0, kr1, kr2 = float32(0.25 - kernelA/2.0), float32(0.25), float32(kernelA)
	// ke0..ke2 are the expand taps, 2·K.
	ke0, ke1, ke2 = 2 * kr0, 2 * kr1, 2 * kr2
)

// half is ceil(n/2), the size of the next level.
func half(n int) int { return (n + 1) / 2 }

// layout is the pyramid of a w×h image at ppd pixels per degree.
type layout struct {
	n     int       // bands, base band included (get_band_count)
	freqs []float64 // band_freqs: cycles/degree of each band (the base band's entry unused)
	w, h  []int     // each level's size
}

// log2Floor is int(np.floor(np.log2(n))) for n ≥ 1.
func log2Floor(n int) int { return bits.Len(uint(n)) - 1 }

// newLayout reproduces lpyr_dec.__init__: the number of levels is the
// first band at or below minFreq (counted as an index, plus one), capped at
// floor(log2(min(w, h))) − 1. ok is false when that cap is negative (a side
// of 1 px), where pycvvdp fails.
func newLayout(w, h int, ppd float64) (l layout, ok bool) {
	maxLevels := log2Floor(min(w, h)) - 1
	if maxLevels < 0 {
		return l, false
	}
	maxBand := maxLevels
	for k := 0; k < 15; k++ {
		f := 1.0
		if k > 0 {
			f = math.Ldexp(1, -(k-1)) * bandFactor
		}
		if f*ppd/2.0 <= minFreq {
			maxBand = k
			break
		}
	}
	height := min(max(maxBand+1, 0), maxLevels)
	l.n = height + 1
	l.freqs = make([]float64, l.n)
	l.freqs[0] = 1.0 * ppd / 2.0
	for f := 0; f < height; f++ {
		l.freqs[f+1] = bandFactor * math.Ldexp(1, -f) * ppd / 2.0
	}
	l.w, l.h = make([]int, l.n), make([]int, l.n)
	l.w[0], l.h[0] = w, h
	for i := 1; i < l.n; i++ {
		l.w[i], l.h[i] = half(l.w[i-1]), half(l.h[i-1])
	}
	return l, true
}

// bandMul is get_band's factor: 2 for the bands between the first and the
// base band, 1 for those two.
func (l *layout) bandMul(b int) float32 {
	if b == 0 || b == l.n-1 {
		return 1
	}
	return 2
}

// pixels is the total number of samples of all levels.
func (l *layout) pixels() int {
	n := 0
	for i := range l.w {
		n += l.w[i] * l.h[i]
	}
	return n
}

// reduce writes the next level of src (w×h) into dst (half(w)×half(h));
// tmp holds half(h)×w values.
func reduce(dst, src, tmp []float32, w, h, threads int) {
	h2, w2 := half(h), half(w)
	oddRows := h%2 == 1
	// Vertical pass: rows 2i−2..2i+2 of src into row i of tmp.
	parallel.For(threads, h2, parallel.RowGrain(w), func(_, i0, i1 int) {
		for i := i0; i < i1; i++ {
			out := tmp[i*w : i*w+w]
			c := 2 * i
			taps := [5]float32{kr0, kr1, kr2, kr1, kr0}
			clear(out)
			for k := -2; k <= 2; k++ {
				r := c + k
				if r < 0 || r >= h {
					continue
				}
				kk := taps[k+2]
				row := src[r*w : r*w+w]
				for x := range out {
					out[x] += kk * row[x]
				}
			}
			if i == 0 {
				r0, r1 := src[0:w], src[w:2*w]
				for x := range out {
					out[x] += r0[x]*kr1 + r1[x]*kr0
				}
			}
			if i == h2-1 {
				last := src[(h-1)*w : h*w]
				if oddRows {
					prev := src[(h-2)*w : (h-1)*w]
					for x := range out {
						out[x] += last[x]*kr1 + prev[x]*kr0
					}
				} else {
					for x := range out {
						out[x] += last[x] * kr0
					}
				}
			}
		}
	})
	// Horizontal pass; the last column's correction follows the parity of
	// h (see the comment at the top of the file).
	parallel.For(threads, h2, parallel.RowGrain(w), func(_, i0, i1 int) {
		for i := i0; i < i1; i++ {
			in := tmp[i*w : i*w+w]
			out := dst[i*w2 : i*w2+w2]
			for j := range out {
				c := 2 * j
				var s float32
				if c >= 2 && c+2 < w {
					s = kr0*in[c-2] + kr1*in[c-1] + kr2*in[c] + kr1*in[c+1] + kr0*in[c+2]
				} else {
					taps := [5]float32{kr0, kr1, kr2, kr1, kr0}
					for k := -2; k <= 2; k++ {
						if x := c + k; x >= 0 && x < w {
							s += taps[k+2] * in[x]
						}
					}
				}
				out[j] = s
			}
			out[0] += in[0]*kr1 + in[1]*kr0
			if oddRows {
				out[w2-1] += in[w-1]*kr1 + in[w-2]*kr0
			} else {
				out[w2-1] += in[w-1] * kr0
			}
		}
	})
}

// expand writes src (sw×sh, the coarser level) enlarged to w×h into dst;
// tmp holds h×sw values.
func expand(dst, src, tmp []float32, sw, sh, w, h, threads int) {
	// Vertical pass into tmp (h rows of sw).
	parallel.For(threads, h, parallel.RowGrain(sw), func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			out := tmp[r*sw : r*sw+sw]
			m := r / 2
			row := func(i int) []float32 {
				i = min(max(i, 0), sh-1)
				return src[i*sw : i*sw+sw]
			}
			if r%2 == 0 {
				a, b, c := row(m-1), row(m), row(m+1)
				for x := range out {
					out[x] = ke0*a[x] + ke2*b[x] + ke0*c[x]
				}
			} else {
				a, b := row(m), row(m+1)
				for x := range out {
					out[x] = ke1*a[x] + ke1*b[x]
				}
			}
		}
	})
	// Horizontal pass into dst.
	parallel.For(threads, h, parallel.RowGrain(w), func(_, r0, r1 int) {
		for r := r0; r < r1; r++ {
			in := tmp[r*sw : r*sw+sw]
			out := dst[r*w : r*w+w]
			at := func(i int) float32 { return in[min(max(i, 0), sw-1)] }
			// Interior: m−1 ≥ 0 and m+1 ≤ sw−1.
			for x := range out {
				m := x / 2
				if x%2 == 0 {
					if m >= 1 && m+1 < sw {
						out[x] = ke0*in[m-1] + ke2*in[m] + ke0*in[m+1]
					} else {
						out[x] = ke0*at(m-1) + ke2*at(m) + ke0*at(m+1)
					}
				} else {
					if m+1 < sw {
						out[x] = ke1*in[m] + ke1*in[m+1]
					} else {
						out[x] = ke1*at(m) + ke1*at(m+1)
					}
				}
			}
		}
	})
}
