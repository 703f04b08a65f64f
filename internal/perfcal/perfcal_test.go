// Package perfcal holds the calibration benchmark of scripts/perf-gate.
//
// The gate compares each benchmark's time as a ratio to this one, measured
// in the same run on the same machine, so a faster or slower (or busier)
// machine moves both and the ratio stays. The workload is a fixed 3-tap
// float32 stencil over a 1 MP plane: the same mix of streaming memory and
// scalar float arithmetic as the gated kernels, in plain Go that nothing
// in the project calls, so no optimisation of the library can change it.
// Never edit the loop: a change invalidates every baseline ratio.
package perfcal

import "testing"

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
