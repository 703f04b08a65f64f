package dssim

import (
	"sync"

	cpudssim "github.com/zenmetrics-go/zenmetrics/cpu/dssim"
)

// dssim-core 3.4.0's numbers (kornelski/dssim tag 3.4.0, AGPL-3.0; only
// the numbers are taken) come from the CPU reference (cpu/dssim: its
// GPUTables, ScaleWeights and SRGBToLinear32, which gpu/cuda/dssim reads
// too), rounded there as dssim-core rounds them; cpu/dssim's package doc
// describes the whole algorithm. constants is the table the kernels read.

// scaleWeights are dssim-core's default weights of scales 0..4.
var scaleWeights = cpudssim.ScaleWeights()

// maxScales is how many scales the default weights use.
const maxScales = len(scaleWeights)

// minDownsample: a scale narrower or shorter than this has no next scale
// (dssim-core's Downsample returns None below 8 pixels).
const minDownsample = cpudssim.MinDownsample

// dssimEpsilon is f64::EPSILON, to_dssim's floor on the pooled SSIM.
const dssimEpsilon = cpudssim.Epsilon

// Layout of the constant table the kernels read (binding kc; the WGSL
// files list the same offsets).
const (
	kcLUT8    = 32              // 256 entries: 8-bit sample → linear light
	kcLUT16   = kcLUT8 + 256    // 65536 entries: 16-bit sample → linear light
	kcAlpha8  = kcLUT16 + 65536 // 256 entries: a / 255 in float32
	kcAlpha16 = kcAlpha8 + 256  // 65536 entries: a / 65535 in float32
	kcEntries = kcAlpha16 + 65536
)

var (
	constOnce  sync.Once
	constTable []float32
)

// constants is the table uploaded once per device: the L*a*b* and SSIM
// constants (offsets 0..21), both sample → linear tables and both alpha
// tables (the kernels read quotients from tables rather than divide).
func constants() []float32 {
	constOnce.Do(func() {
		t := make([]float32, kcEntries)
		c := cpudssim.GPUTables()
		copy(t[0:9], c.RGBToXYZ[:])
		t[9], t[10], t[11] = c.LabEps, c.LabK, c.LabOff // EPSILON, K, 16/116
		t[12] = c.LScale
		t[13], t[14] = c.AScale, c.AOff
		t[15], t[16] = c.BScale, c.BOff
		copy(t[17:20], c.CbrtSeed[:])
		t[20], t[21] = c.SSIMC1, c.SSIMC2
		for i := 0; i < 256; i++ {
			t[kcLUT8+i] = cpudssim.SRGBToLinear32(float32(i) / 255)
		}
		for i := 0; i < 65536; i++ {
			t[kcLUT16+i] = cpudssim.SRGBToLinear32(float32(i) / 65535)
			t[kcAlpha16+i] = float32(i) / 65535
		}
		for i := 0; i < 256; i++ {
			t[kcAlpha8+i] = float32(i) / 255
		}
		constTable = t
	})
	return constTable
}
