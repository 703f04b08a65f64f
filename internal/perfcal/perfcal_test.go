package perfcal

import "testing"

// BenchmarkCalibration is the divisor of every perf-gate ratio.
func BenchmarkCalibration(b *testing.B) {
	const w, h = 1024, 1024
	in := make([]float32, w*h)
	for i := range in {
		in[i] = float32(i%251) / 251
	}
	out := make([]float32, w*h)
	b.SetBytes(w * h * 4)
	for b.Loop() {
		for y := range h {
			row := in[y*w : (y+1)*w]
			o := out[y*w : (y+1)*w]
			o[0] = row[0]
			for x := 1; x < w-1; x++ {
				o[x] = 0.25*row[x-1] + 0.5*row[x] + 0.25*row[x+1]
			}
			o[w-1] = row[w-1]
		}
	}
}
