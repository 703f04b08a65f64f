package dssim

// This file hands the reference's constants to the GPU ports of this
// package (gpu/cuda/dssim and gpu/webgpu/dssim), which pass them to their
// kernels as exact bit patterns. Each number is written once, in this
// package (as dssim-core 3.4.0 rounds it), so that a port cannot drift
// from the bits the reference computes with.

// MinDownsample: a scale narrower or shorter than this has no next scale.
const MinDownsample = minDownsample

// Epsilon is to_dssim's floor on the pooled SSIM (f64::EPSILON).
const Epsilon = 0x1p-52

// Tables are the float32 constants the GPU kernels need.
type Tables struct {
	RGBToXYZ             [9]float32 // RGB → XYZ/white rows: X, Y, Z
	LabEps, LabK, LabOff float32    // 216/24389, 24389/(27·116), 16/116
	LScale               float32    // 1.05
	AScale, AOff         float32    // 500/220, 86.2/220
	BScale, BOff         float32    // 200/220, 107.9/220
	CbrtSeed             [3]float32 // the cube-root seed 0.2 + 1.51x − 0.5x²
	SSIMC1, SSIMC2       float32    // 0.01², 0.03²
	Third                float32    // 1/3
	// Blur is the 3×3 blur's corner, edge and centre taps.
	Blur [3]float32
}

// GPUTables returns the reference's constants for the GPU ports.
func GPUTables() Tables {
	return Tables{
		RGBToXYZ: lab.m,
		LabEps:   lab.eps, LabK: lab.k, LabOff: lab.off,
		LScale: lab.lScale,
		AScale: lab.aScale, AOff: lab.aOff,
		BScale: lab.bScale, BOff: lab.bOff,
		CbrtSeed: [3]float32{lab.poly0, lab.poly1, lab.poly2},
		SSIMC1:   ssimC1, SSIMC2: ssimC2,
		Third: third,
		Blur:  [3]float32{kernel[0], kernel[1], kernel[4]},
	}
}

// ScaleWeights are dssim-core's default weights of scales 0 to 4.
func ScaleWeights() [numScales]float64 { return scaleWeights }

// SRGBToLinear32 is dssim-core's to_linear on a float32 sample in [0, 1],
// as the reference decodes (the GPU ports fill their tables with it).
func SRGBToLinear32(s float32) float32 { return srgbToLinear32(s) }
