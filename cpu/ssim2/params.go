package ssim2

import "math"

// This file holds the numbers SSIMULACRA2 is defined by, as libjxl v0.12.0
// uses them: the opsin absorbance matrix and bias of libjxl's XYB, the
// rational-polynomial sRGB decoding curve its colour management applies, the
// 108 pooling weights and the final mapping to a 0..100 score.
//
// Float32 constants that libjxl computes from other float32 constants (for
// example kM01 = 1 - kM02 - kM00) are computed here at run time in float32 as
// well, so that they round exactly as they do in C++ (a Go constant
// expression would be evaluated exactly and rounded only once).

// Opsin absorbance matrix rows (libjxl's kM00..kM22) and bias.
var (
	opsinM00 float32 = 0.30
	opsinM02 float32 = 0.078
	opsinM01         = 1 - opsinM02 - opsinM00
	opsinM10 float32 = 0.23
	opsinM12 float32 = 0.078
	opsinM11         = 1 - opsinM12 - opsinM10
	opsinM20 float32 = 0.24342268924547819
	opsinM21 float32 = 0.20476744424496821
	opsinM22         = 1 - opsinM20 - opsinM21

	opsinBias float32 = 0.0037930732552754493
	// negBiasCbrt is -cbrt(bias), subtracted after the cube root so that
	// black maps to 0.
	negBiasCbrt = -float32(math.Cbrt(float64(opsinBias)))
)

// sRGB decoding as libjxl's colour management applies it when it turns
// sRGB samples into linear sRGB (its TF_SRGB::DisplayFromEncoded): a linear
// segment below 0.04045 and above it a 4/4-degree rational polynomial
// (evaluated with fused multiply-adds) instead of the textbook power 2.4.
var (
	srgbThresh    float32 = 0.04045
	srgbLowDiv    float32 = 12.92
	srgbLowDivInv         = 1 / srgbLowDiv
	srgbP                 = [5]float32{2.200248328e-04, 1.043637593e-02, 1.624820318e-01, 7.961564959e-01, 8.210152774e-01}
	srgbQ                 = [5]float32{2.631846970e-01, 1.076976492e+00, 4.987528350e-01, -5.512498495e-02, 6.521209011e-03}
)

// Cube-root helper constants (libjxl's CubeRootAndAdd).
var (
	third     float32 = 1.0 / 3
	fourThird float32 = 4.0 / 3
)

// Offsets and scale of the "positive XYB" SSIMULACRA2 works in.
const (
	posXMul float32 = 14
	posXAdd float32 = 0.42
	posYAdd float32 = 0.01
	posBAdd float32 = 0.55
)

// ssimC2 is the SSIM stabilising constant for the contrast/structure term.
const ssimC2 float32 = 0.0009

// numScales is the number of scales (1:1 to 1:32).
const numScales = 6

// minSide is libjxl's minimum width and height, and the size below which no
// further scale is started.
const minSide = 8

// weights are the 108 pooling weights, in libjxl's order: for each channel
// (X, Y, B), for each scale, for each norm (1-norm, 4-norm): SSIM error,
// ringing (artifact) and blurring (detail lost).
var weights = [108]float64{
	0.0,
	0.0007376606707406586,
	0.0,
	0.0,
	0.0007793481682867309,
	0.0,
	0.0,
	0.0004371155730107379,
	0.0,
	1.1041726426657346,
	0.00066284834129271,
	0.00015231632783718752,
	0.0,
	0.0016406437456599754,
	0.0,
	1.8422455520539298,
	11.441172603757666,
	0.0,
	0.0007989109436015163,
	0.000176816438078653,
	0.0,
	1.8787594979546387,
	10.94906990605142,
	0.0,
	0.0007289346991508072,
	0.9677937080626833,
	0.0,
	0.00014003424285435884,
	0.9981766977854967,
	0.00031949755934435053,
	0.0004550992113792063,
	0.0,
	0.0,
	0.0013648766163243398,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	7.466890328078848,
	0.0,
	17.445833984131262,
	0.0006235601634041466,
	0.0,
	0.0,
	6.683678146179332,
	0.00037724407979611296,
	1.027889937768264,
	225.20515300849274,
	0.0,
	0.0,
	19.213238186143016,
	0.0011401524586618361,
	0.001237755635509985,
	176.39317598450694,
	0.0,
	0.0,
	24.43300999870476,
	0.28520802612117757,
	0.0004485436923833408,
	0.0,
	0.0,
	0.0,
	34.77906344483772,
	44.835625328877896,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0008680556573291698,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0005313191874358747,
	0.0,
	0.00016533814161379112,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0,
	0.0004179171803251336,
	0.0017290828234722833,
	0.0,
	0.0020827005846636437,
	0.0,
	0.0,
	8.826982764996862,
	23.19243343998926,
	0.0,
	95.1080498811086,
	0.9863978034400682,
	0.9834382792465353,
	0.0012286405048278493,
	171.2667255897307,
	0.9807858872435379,
	0.0,
	0.0,
	0.0,
	0.0005130064588990679,
	0.0,
	0.00010854057858411537,
}

// Final mapping of the weighted sum to a score.
const (
	finalScale = 0.9562382616834844
	polyA      = 2.326765642916932
	polyB      = 0.020884521182843837
	polyC      = 6.248496625763138e-05
	finalPow   = 0.6276336467831387
)
