package cpusimd

import "testing"

// BenchmarkCols times the vertical pass over a 1024×1024 plane in 64-column
// blocks (as cpu/ssim2 calls it) in assembly and with the Go twin.
func BenchmarkCols(b *testing.B) {
	const w, h = 1024, 1024
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	out := make([]float32, w*h)
	run := func(b *testing.B, cols func(x0, x1 int)) {
		b.SetBytes(w * h * 4)
		for b.Loop() {
			for x := 0; x < w; x += 64 {
				cols(x, min(x+64, w))
			}
		}
	}
	if useAsm {
		b.Run("kernel=asm", func(b *testing.B) {
			run(b, func(x0, x1 int) { testBlur.Cols(in, out, w, h, x0, x1) })
		})
	}
	b.Run("kernel=go", func(b *testing.B) {
		run(b, func(x0, x1 int) { colsGo(in, out, w, h, x0, x1, testBlur) })
	})
}
