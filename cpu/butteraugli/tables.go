package butteraugli

import "math"

// This file hands the reference's constants to the GPU ports of this
// package (gpu/cuda/butteraugli and gpu/webgpu/butteraugli), which pass
// them to their kernels as exact bit patterns. Each number is written once,
// in this package, and derived once, by the reference's own code, so that
// a port cannot drift from the bits the reference computes with.

// Blur is one of the reference's truncated Gaussians: Off taps either side
// of the centre, Full the 2·Off+1 unnormalised taps, Half[i] = Full[i]/Σ
// from the outermost tap (i = 0) to the centre (i = Off). The slices are
// the reference's own: read only.
type Blur struct {
	Off        int
	Full, Half []float32
}

// Tables are the constants the GPU kernels need, as the reference rounds
// them.
type Tables struct {
	Mix          [12]float32 // opsin absorbance mixing weights
	GammaMul     float32     // 19.245… × ln 2 in float32 (gammaHDR's)
	SuppressOMS  float32     // 1 − s of the HF/UHF suppression, rounded once
	MaxclampMul  float32     // the UHF/HF clamp's slope
	MaskBias     float32     // masking: mul × bias in float32
	MaskSqrtBias float32     // √(MaskBias), rounded once
	GlobalScale  float32     // 1 / (17.83 × intensity hack)
	// Malta are (norm1, symmetric weight, half-open weight) of the Malta
	// difference images, by band (UHF, HF, MF) and channel (X, Y).
	Malta      [3][2][3]float32
	Asym       [2]float32 // HF asymmetry weights of X and Y (both sides equal)
	L2MF, L2LF [3]float32 // the MF and LF squared-difference weights
	SupMix     float64    // the suppression's mixing factor, in double
	// Blurs are the opsin (5 taps, mirrored borders), LF, HF, UHF and
	// masking blurs, in that order.
	Blurs [5]Blur
}

// GPUTables returns the reference's constants for the GPU ports.
func GPUTables() Tables {
	t := Tables{
		Mix:         [12]float32{mix0, mix1, mix2, mix3, mix4, mix5, mix6, mix7, mix8, mix9, mix10, mix11},
		GammaMul:    gammaRetMul,
		SuppressOMS: suppressOneMinusS,
		MaxclampMul: maxclampMul,
		MaskBias:    maskMul * maskBias,
		GlobalScale: globalScale,
		Asym:        asymGt,
		L2MF:        l2MF,
		L2LF:        l2LF,
		SupMix:      supMixMul,
	}
	// As maskActivity derives it.
	t.MaskSqrtBias = float32(math.Sqrt(float64(t.MaskBias)))
	for b, band := range [][2]maltaWeights{maltaUhf, maltaHfW, maltaMfW} {
		for c, m := range band {
			t.Malta[b][c] = [3]float32{m.norm1, m.norm2gt, m.norm2lt}
		}
	}
	for i, k := range []*kernel{kernOpsin, kernLF, kernHF, kernUHF, kernMask} {
		t.Blurs[i] = Blur{Off: k.off, Full: k.full, Half: k.half}
	}
	return t
}

// LinearTable is the reference's decoding table for samples of
// bytesPerSample bytes (1 or 2): sample value → linear light. The slice is
// the reference's own: read only.
func LinearTable(bytesPerSample int) []float32 { return linearLUT(8 * bytesPerSample) }
