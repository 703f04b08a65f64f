package cvvdp

// The calibrated parameters of ColorVideoVDP 0.5.4, the base model
// ("cvvdp_mult_mutual", calibrated 10/01/2024), and the constants its
// Python code builds in. Source: gfxdisp/ColorVideoVDP, tag v0.5.4 (commit
// ac9cf0f), pycvvdp/vvdp_data/cvvdp_parameters.json, pycvvdp/cvvdp_metric.py,
// pycvvdp/lpyr_dec.py and pycvvdp/display_model.py; MIT licence (Copyright
// (c) 2024 Graphics and Displays group). The numbers are transcribed; the
// code is not.
//
// pycvvdp holds them as float32 torch tensors, so every one of them is
// rounded to float32 before use (the var block below does so once) and the
// arithmetic on them is float32, as in the reference.

// lutN is the number of rows and columns of the castleCSF table
// (csf_lut.go).
const lutN = 32

// Parameters as the JSON file stores them (float64 literals).
const (
	pMaskP                 = 2.264355182647705   // mask_p
	pMaskC                 = -0.7954971194267273 // mask_c
	pPuDilate              = 3                   // pu_dilate: σ of the phase-uncertainty blur
	pSensitivityCorrection = -0.2797423303127289 // sensitivity_correction, dB
	pJodA                  = 0.0439569391310215  // jod_a
	pJodExp                = 0.9302042722702026  // jod_exp
	pChChromW              = 1.0                 // ch_chrom_w
	pChTransW              = 0.8081134557723999  // ch_trans_w
	pDMax                  = 2.5642454624176025  // d_max
	pImageInt              = 0.577918291091919   // image_int
	pBeta                  = 2                   // beta: spatial pooling exponent
	pBetaT                 = 2                   // beta_t: over frames
	pBetaTch               = 4                   // beta_tch: over channels
	pBetaSch               = 4                   // beta_sch: over bands
)

// mask_q per channel (sustained achromatic, RG, YV, transient achromatic).
var pMaskQ = [4]float64{1.302622675895691, 2.8885908126831055, 3.6807713508605957, 3.588787317276001}

// xcm_weights: log2 of the cross-channel masking matrix, row-major 4×4;
// entry [j][c] weighs channel j's masker in channel c's masking signal.
var pXcmWeights = [16]float64{
	-0.18950104713439941, -5.962151050567627, -4.31834602355957, -1.9321587085723877,
	2.5655593872070312, 0.34406712651252747, -2.719646453857422, -0.4970424771308899,
	3.8118371963500977, -1.0051705837249756, -0.5193376541137695, -0.5653647780418396,
	-7.054771423339844, -5.527150630950928, -3.5106418132781982, -2.08804988861084,
}

// baseband_weight per channel.
var pBasebandWeight = [4]float64{0.0036334486212581396, 1.6627724170684814, 4.11874532699585, 25.25969886779785}

// chGain is the per-channel gain of the mult-mutual masking model
// (apply_masking_model: [1, 1.45, 1, 1]).
var chGain = [4]float32{1, 1.45, 1, 1}

// Constants of the pyramid (lpyr_dec.py).
const (
	kernelA    = 0.4    // kernel_a of the 5-tap Burt–Adelson kernel
	minFreq    = 0.2    // min_freq: bands at or below it are not used
	bandFactor = 0.3228 // the first band's frequency relative to ppd/2
	// contrastMax clamps the Weber contrast from above.
	contrastMax = 1000
	// lBkgMin clamps the background luminance from below (cd/m²).
	lBkgMin = 0.01
	// basebandRho is the frequency the CSF is read at for the base band.
	basebandRho = 0.1
	// safeEps is safe_pow's and pow_neg's epsilon.
	safeEps = 0.00001
	// metQt is met2jod's switch from the linear to the power segment.
	metQt = 0.1
)

// float32 copies of what the arithmetic uses, rounded once as torch does.
var (
	f32MaskP = float32(pMaskP)
	f32Eps   = float32(safeEps)
	// f32MaskQ and f32EpsQ: mask_q and eps^mask_q per channel.
	f32MaskQ [4]float32
	f32EpsQ  [4]float32
	// f32EpsP is eps^mask_p.
	f32EpsP float32
	// f32MaskCMul is 10^mask_c, the masking signal's scale.
	f32MaskCMul float32
	// f32DMax is 10^d_max, the soft clamp of the differences.
	f32DMax float32
	// f32SensCorr is 10^(sensitivity_correction/20), the CSF's correction.
	f32SensCorr float32
	// xcm[j][c] = 2^xcm_weights[4j+c].
	xcm [4][4]float32
)

// init derives the float32 constants; it runs after every package variable
// (the fastmath tables included) is initialised.
func init() {
	f32EpsP = pow32(f32Eps, f32MaskP)
	for c := range f32MaskQ {
		f32MaskQ[c] = float32(pMaskQ[c])
		f32EpsQ[c] = pow32(f32Eps, f32MaskQ[c])
	}
	f32MaskCMul = pow32(10, float32(pMaskC))
	f32DMax = pow32(10, float32(pDMax))
	f32SensCorr = pow32(10, float32(pSensitivityCorrection)/20)
	for j := 0; j < 4; j++ {
		for c := 0; c < 4; c++ {
			xcm[j][c] = pow32(2, float32(pXcmWeights[4*j+c]))
		}
	}
}
