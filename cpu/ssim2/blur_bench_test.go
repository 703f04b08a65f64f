package ssim2

import "testing"

// BenchmarkBlur times one σ=1.5 blur (both passes) of a 1024×1024 plane
// on one goroutine.
func BenchmarkBlur(b *testing.B) {
	const w, h = 1024, 1024
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	out := make([]float32, w*h)
	r := &Reference{w: w, h: h, threads: 1}
	sc := newScratch(w, h, 1, false)
	b.SetBytes(w * h * 4)
	for b.Loop() {
		r.blur(out, in, nil, w, h, sc)
	}
}

// BenchmarkBlurRow and BenchmarkBlurCols time the two passes separately.
func BenchmarkBlurRow(b *testing.B) {
	const w, h = 1024, 1024
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	out := make([]float32, w*h)
	b.SetBytes(w * h * 4)
	for b.Loop() {
		for y := 0; y < h; y++ {
			blurSigma15.blurRow(in[y*w:(y+1)*w], out[y*w:(y+1)*w])
		}
	}
}

func BenchmarkBlurCols(b *testing.B) {
	const w, h = 1024, 1024
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	out := make([]float32, w*h)
	b.SetBytes(w * h * 4)
	for b.Loop() {
		for x := 0; x < w; x += colBlock {
			blurSigma15.blurCols(in, out, w, h, x, min(x+colBlock, w))
		}
	}
}
