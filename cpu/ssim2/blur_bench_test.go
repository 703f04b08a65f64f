package ssim2

import (
	"testing"
)

func benchPlane(w, h int) []float32 {
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	return in
}

// BenchmarkBlur times one σ=1.5 blur (both passes) of a 1024×1024 plane
// on one goroutine, on each path.
func BenchmarkBlur(b *testing.B) {
	const w, h = 1024, 1024
	in := benchPlane(w, h)
	out := make([]float32, w*h)
	for _, impl := range benchImpls() {
		b.Run("impl="+impl, func(b *testing.B) {
			r := &Reference{w: w, h: h, threads: 1}
			sc := newScratch(w, h, 1, impl == "simd")
			b.SetBytes(w * h * 4)
			for b.Loop() {
				r.blur(out, in, nil, w, h, sc)
			}
		})
	}
}

// BenchmarkBlurRow and BenchmarkBlurCols time the two passes separately
// (1024×1024, one goroutine).
func BenchmarkBlurRow(b *testing.B) {
	const w, h = 1024, 1024
	in := benchPlane(w, h)
	out := make([]float32, w*h)
	for _, impl := range benchImpls() {
		b.Run("impl="+impl, func(b *testing.B) {
			work := make([]float32, simdBlur.RowsWorkLen(w))
			b.SetBytes(w * h * 4)
			for b.Loop() {
				if impl == "simd" {
					for y := 0; y < h; y += 8 {
						simdBlur.Rows8(in[y*w:(y+8)*w], nil, out[y*w:(y+8)*w], w, work)
					}
					continue
				}
				for y := 0; y < h; y++ {
					blurSigma15.blurRow(in[y*w:(y+1)*w], out[y*w:(y+1)*w])
				}
			}
		})
	}
}

func BenchmarkBlurCols(b *testing.B) {
	const w, h = 1024, 1024
	in := benchPlane(w, h)
	out := make([]float32, w*h)
	for _, impl := range benchImpls() {
		b.Run("impl="+impl, func(b *testing.B) {
			b.SetBytes(w * h * 4)
			for b.Loop() {
				for x := 0; x < w; x += colBlock {
					if impl == "simd" {
						simdBlur.Cols(in, out, w, h, x, min(x+colBlock, w))
					} else {
						blurSigma15.blurCols(in, out, w, h, x, min(x+colBlock, w))
					}
				}
			}
		})
	}
}

// BenchmarkXYB converts a 1024×1024 linear image to positive XYB, and
// BenchmarkRowTerms adds up the error terms of a 1024×1024 plane, on each
// path (one goroutine).
func BenchmarkXYB(b *testing.B) {
	const w, h = 1024, 1024
	var lin, dst [3][]float32
	for c := range lin {
		lin[c] = benchPlane(w, h)
		dst[c] = make([]float32, w*h)
	}
	for _, impl := range benchImpls() {
		b.Run("impl="+impl, func(b *testing.B) {
			b.SetBytes(w * h * 12)
			for b.Loop() {
				toXYB(&lin, &dst, w, 0, h, impl == "simd")
			}
		})
	}
}

func BenchmarkRowTerms(b *testing.B) {
	const w, h = 1024, 1024
	var p [7][]float32
	for i := range p {
		p[i] = benchPlane(w, h)
	}
	out := make([]float64, 6)
	for _, impl := range benchImpls() {
		b.Run("impl="+impl, func(b *testing.B) {
			terms := rowTerms
			if impl == "simd" {
				terms = simdTerms.Row
			}
			b.SetBytes(w * h * 4)
			for b.Loop() {
				for y := 0; y < h; y++ {
					o := y * w
					terms(out, p[0][o:o+w], p[1][o:o+w], p[2][o:o+w], p[3][o:o+w], p[4][o:o+w], p[5][o:o+w], p[6][o:o+w])
				}
			}
		})
	}
}
