package iwssim

import (
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// luminance writes the plane piq works on into dst (w×h, row-major).
//
// piq first rescales the input to 0..255 (x / data_range · 255, in that
// order, so an 8-bit sample v becomes v/255·255, which is not always v to
// the last bit) and then, for three channels, keeps Y of rgb2yiq:
// 0.299 R + 0.587 G + 0.114 B on the sRGB-encoded values. Grey images are
// used as they are. Alpha has no meaning in piq (four channels make its
// pyramid fail); it is ignored here, the colour samples are compared as
// stored, which is how the shared corpus's RGBA pair was scored.
func luminance(im *zenmetrics.Image, dst []float64, threads int) {
	w, h := im.Width, im.Height
	ch := im.Format.Channels()
	bps := im.Format.BytesPerSample()
	lut := lut8()
	if bps == 2 {
		lut = lut16()
	}
	gray := im.Format.IsGray()
	wr, wg, wb := lumaWeights[0], lumaWeights[1], lumaWeights[2]
	parallel.Chunks(threads, h, parallel.RowGrain(w), func(_, lo, hi int) {
		for y := lo; y < hi; y++ {
			row := im.Row(y)
			out := dst[y*w : y*w+w]
			for x := range out {
				o := x * ch * bps
				s := func(c int) float64 {
					if bps == 2 {
						return lut[int(row[o+2*c])<<8|int(row[o+2*c+1])]
					}
					return lut[row[o+c]]
				}
				if gray {
					out[x] = s(0)
				} else {
					out[x] = float64(s(0)*wr) + float64(s(1)*wg) + float64(s(2)*wb)
				}
			}
		}
	})
}

// lut8 and lut16 are the rescaled sample values v/max·255 of 8- and 16-bit
// samples, built once.
var (
	lut8  = sync.OnceValue(func() []float64 { return rescaleLUT(255) })
	lut16 = sync.OnceValue(func() []float64 { return rescaleLUT(65535) })
)

func rescaleLUT(maxv int) []float64 {
	lut := make([]float64, maxv+1)
	for v := range lut {
		lut[v] = float64(v) / float64(maxv) * dataRange
	}
	return lut
}

// reflect maps index i of a signal of length n padded in torch's 'reflect'
// mode (the edge sample is not repeated: −1 → 1, n → n−2) back into [0, n).
// The pads used here are at most 2 and every signal has at least 11
// samples, so one reflection suffices.
func reflect(i, n int) int {
	if i < 0 {
		return -i
	}
	if i >= n {
		return 2*(n-1) - i
	}
	return i
}

// half is the size of the next pyramid level: piq keeps every other sample
// starting with the first.
func half(n int) int { return (n + 1) / 2 }

// pyrStep is piq's _pyr_step on a w×h plane p: it writes the low-pass image
// lo (half(w)×half(h)) and turns p into the band-pass difference p − up(lo).
//
// Down: reflect-pad by 2, correlate with k = binomial5·√2 along x and keep
// even columns, then the same along y. Up: insert zeros after every sample
// (conv_transpose with [1, 0]), reflect-pad the 2·n long signal by 2,
// correlate with k and crop to the original length; along x, then along y.
// Each 1-D pass has gain √2 going down and √2/2 going up, so a flat image
// comes back flat. The inserted zeros contribute exact zeros to the sums, so
// they are skipped; the other taps are added in piq's order.
//
// tmp needs max(h·half(w), half(h)·w) values; it holds the horizontal pass
// going down and then the horizontal pass going up.
func pyrStep(p []float64, w, h int, lo, tmp []float64, threads int) {
	wl, hl := half(w), half(h)
	k := &cst.pyr
	// Down, along x: tmp is h×wl.
	parallel.Chunks(threads, h, parallel.RowGrain(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			src := p[y*w : y*w+w]
			dst := tmp[y*wl : y*wl+wl]
			for j := range dst {
				c := 2 * j
				if c >= 2 && c+2 < w {
					dst[j] = float64(k[0]*src[c-2]) + float64(k[1]*src[c-1]) + float64(k[2]*src[c]) + float64(k[3]*src[c+1]) + float64(k[4]*src[c+2])
					continue
				}
				var s float64
				for t := 0; t < 5; t++ {
					s += float64(k[t] * src[reflect(c+t-2, w)])
				}
				dst[j] = s
			}
		}
	})
	// Down, along y: lo is hl×wl.
	parallel.Chunks(threads, hl, parallel.RowGrain(wl), func(_, i0, i1 int) {
		for i := i0; i < i1; i++ {
			dst := lo[i*wl : i*wl+wl]
			var rows [5][]float64
			for t := range rows {
				r := reflect(2*i+t-2, h)
				rows[t] = tmp[r*wl : r*wl+wl]
			}
			r0, r1, r2, r3, r4 := rows[0], rows[1], rows[2], rows[3], rows[4]
			for j := range dst {
				dst[j] = float64(k[0]*r0[j]) + float64(k[1]*r1[j]) + float64(k[2]*r2[j]) + float64(k[3]*r3[j]) + float64(k[4]*r4[j])
			}
		}
	})
	// Up, along x: tmp becomes hl×w. Output sample j sums the taps t whose
	// padded index j+t−2 lands, after reflection into [0, 2·wl), on an even
	// position 2m (a sample lo[m]); odd positions are the inserted zeros.
	n2 := 2 * wl
	parallel.Chunks(threads, hl, parallel.RowGrain(w), func(_, i0, i1 int) {
		for i := i0; i < i1; i++ {
			src := lo[i*wl : i*wl+wl]
			dst := tmp[i*w : i*w+w]
			for j := range dst {
				if j >= 2 && j+2 < n2 {
					m := j >> 1
					if j&1 == 0 {
						dst[j] = float64(k[0]*src[m-1]) + float64(k[2]*src[m]) + float64(k[4]*src[m+1])
					} else {
						dst[j] = float64(k[1]*src[m]) + float64(k[3]*src[m+1])
					}
					continue
				}
				var s float64
				for t := 0; t < 5; t++ {
					if q := reflect(j+t-2, n2); q&1 == 0 {
						s += float64(k[t] * src[q>>1])
					}
				}
				dst[j] = s
			}
		}
	})
	// Up, along y, and the difference: p[y] −= Σ k[t]·tmp[row m] over the
	// taps that land on even rows 2m of the zero-stuffed 2·hl rows.
	m2 := 2 * hl
	parallel.Chunks(threads, h, parallel.RowGrain(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			var rows [3][]float64
			var ks [3]float64
			n := 0
			for t := 0; t < 5; t++ {
				if q := reflect(y+t-2, m2); q&1 == 0 {
					m := q >> 1
					rows[n], ks[n] = tmp[m*w:m*w+w], k[t]
					n++
				}
			}
			dst := p[y*w : y*w+w]
			switch n {
			case 3:
				a, b, c := rows[0], rows[1], rows[2]
				for j := range dst {
					dst[j] -= float64(ks[0]*a[j]) + float64(ks[1]*b[j]) + float64(ks[2]*c[j])
				}
			case 2:
				a, b := rows[0], rows[1]
				for j := range dst {
					dst[j] -= float64(ks[0]*a[j]) + float64(ks[1]*b[j])
				}
			default:
				panic("iwssim: pyramid row with an unexpected number of taps")
			}
		}
	})
}

// enlargeAt is piq's _image_enlarge(parent) read at (r, c), for 1 ≤ r ≤ h−2
// and 1 ≤ c ≤ w−2 of the child band (the only places piq reads it).
//
// _image_enlarge bilinearly resizes the hp×wp parent to (4hp−3)×(4wp−3)
// (align_corners=False), frames it with one row/column of linear
// extrapolation and keeps every other sample; at those positions the result
// is the resized image at (2r−1, 2c−1), away from the frame.
type enlarger struct {
	hp, wp int
	// Per child row (and column): the two parent rows (columns) and their
	// weights, as torch's upsample_bilinear2d computes them.
	r0, r1, c0, c1 []int
	rw0, rw1       []float64
	cw0, cw1       []float64
}

func newEnlarger(w, h, wp, hp int) *enlarger {
	e := &enlarger{hp: hp, wp: wp}
	e.r0, e.r1, e.rw0, e.rw1 = linearIndex(hp, 4*hp-3, h)
	e.c0, e.c1, e.cw0, e.cw1 = linearIndex(wp, 4*wp-3, w)
	return e
}

// linearIndex gives, for child positions r = 0..n−1, the source indices and
// weights of output sample 2r−1 of a size in → out bilinear resize with
// align_corners=False (src = (dst + 0.5)·in/out − 0.5, clamped at 0; the
// upper neighbour is the last sample at the end). Position 0 (dst −1) is
// never read and left zero.
func linearIndex(in, out, n int) (i0, i1 []int, w0, w1 []float64) {
	i0, i1 = make([]int, n), make([]int, n)
	w0, w1 = make([]float64, n), make([]float64, n)
	scale := float64(in) / float64(out)
	for r := 1; r < n; r++ {
		d := 2*r - 1
		src := float64(scale*(float64(d)+0.5)) - 0.5
		if src < 0 {
			src = 0
		}
		a := int(src)
		b := a
		if a < in-1 {
			b = a + 1
		}
		l1 := src - float64(a)
		i0[r], i1[r], w0[r], w1[r] = a, b, 1-l1, l1
	}
	return i0, i1, w0, w1
}

// row fills dst[c] (1 ≤ c ≤ w−2) with the enlarged parent at child row r.
func (e *enlarger) row(parent []float64, r int, dst []float64) {
	wp := e.wp
	pa := parent[e.r0[r]*wp : e.r0[r]*wp+wp]
	pb := parent[e.r1[r]*wp : e.r1[r]*wp+wp]
	h0, h1 := e.rw0[r], e.rw1[r]
	for c := 1; c < len(dst)-1; c++ {
		x0, x1 := e.c0[c], e.c1[c]
		v0, v1 := e.cw0[c], e.cw1[c]
		dst[c] = float64(h0*(float64(v0*pa[x0])+float64(v1*pa[x1]))) + float64(h1*(float64(v0*pb[x0])+float64(v1*pb[x1])))
	}
}
