package dssim

import (
	"math"
	"sync"
)

// Numbers transcribed from kornelski/dssim, crate dssim-core 3.4.0 (git tag
// 3.4.0, commit c86745c4; AGPL-3.0): dssim-core/src/linear.rs (to_linear),
// dssim-core/src/tolab.rs (D65 white, the RGB → XYZ rows, EPSILON, K, the
// cube-root seed, the L*a*b* scales and offsets) and dssim-core/src/dssim.rs
// (DEFAULT_WEIGHTS, compare_scale's c1 and c2, to_dssim's f64::EPSILON).
// Only the numbers are taken. dssim-core declares them as f32 and rustc
// folds each quotient in f32, so each is built here as the float32 quotient
// of float32 operands (div32 and mul32 are functions so that Go does not
// fold them exactly as untyped constants). cpu/dssim's package doc
// describes the whole algorithm; these tables are what the kernels read.

// scaleWeights are dssim-core's default weights of scales 0..4.
var scaleWeights = [...]float64{0.028, 0.197, 0.322, 0.298, 0.155}

// maxScales is how many scales the default weights use.
const maxScales = len(scaleWeights)

// minDownsample: a scale narrower or shorter than this has no next scale
// (dssim-core's Downsample returns None below 8 pixels).
const minDownsample = 8

// dssimEpsilon is f64::EPSILON, to_dssim's floor on the pooled SSIM.
const dssimEpsilon = 0x1p-52

func div32(a, b float32) float32 { return a / b }
func mul32(a, b float32) float32 { return a * b }

// Layout of the constant table the kernels read (binding kc; the WGSL
// files list the same offsets).
const (
	kcLUT8    = 32              // 256 entries: 8-bit sample → linear light
	kcLUT16   = kcLUT8 + 256    // 65536 entries: 16-bit sample → linear light
	kcAlpha8  = kcLUT16 + 65536 // 256 entries: a / 255 in float32
	kcAlpha16 = kcAlpha8 + 256  // 65536 entries: a / 65535 in float32
	kcEntries = kcAlpha16 + 65536
)

// srgbToLinear32 is dssim-core's to_linear on a float32 sample s: s/12.92
// up to 0.04045, else ((s + 0.055)/1.055)^2.4, in float32 (powf: the
// float64 power of the float32 operands, rounded once).
func srgbToLinear32(s float32) float32 {
	if s <= 0.04045 {
		return s / 12.92
	}
	v := (s + 0.055) / 1.055
	return float32(math.Pow(float64(v), float64(float32(2.4))))
}

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
		x, y, z := float32(0.9505), float32(1.0), float32(1.089)
		copy(t[0:9], []float32{
			div32(0.4124, x), div32(0.3576, x), div32(0.1805, x),
			div32(0.2126, y), div32(0.7152, y), div32(0.0722, y),
			div32(0.0193, z), div32(0.1192, z), div32(0.9505, z),
		})
		t[9] = div32(216, 24389)                          // EPSILON
		t[10] = div32(24389, mul32(27, 116))              // K
		t[11] = div32(16, 116)                            // 16/116
		t[12] = 1.05                                      // L scale
		t[13], t[14] = div32(500, 220), div32(86.2, 220)  // a
		t[15], t[16] = div32(200, 220), div32(107.9, 220) // b
		t[17], t[18], t[19] = 0.2, 1.51, -0.5             // cube-root seed
		t[20] = mul32(0.01, 0.01)                         // c1
		t[21] = mul32(0.03, 0.03)                         // c2
		for i := 0; i < 256; i++ {
			t[kcLUT8+i] = srgbToLinear32(float32(i) / 255)
		}
		for i := 0; i < 65536; i++ {
			t[kcLUT16+i] = srgbToLinear32(float32(i) / 65535)
			t[kcAlpha16+i] = float32(i) / 65535
		}
		for i := 0; i < 256; i++ {
			t[kcAlpha8+i] = float32(i) / 255
		}
		constTable = t
	})
	return constTable
}
