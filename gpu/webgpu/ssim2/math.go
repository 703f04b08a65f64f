package ssim2

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/internal/recgauss"
)

// This file holds the host half of SSIMULACRA2 that is plain float64 math:
// the blur taps baked into ssim2_maps.wgsl, the scale plan, and the final
// weighted sum + polynomial of libjxl's Msssim::Score.

// ssim2Scales is libjxl's kNumScales; scales stop early once a side < 8.
const ssim2Scales = 6

// ssim2Terms is the number of sums the maps kernel produces per channel:
// SSIM error d and d⁴, edge artifact a and a⁴, detail loss l and l⁴.
const ssim2Terms = 6

// ssim2MinSide is the smallest side libjxl computes a scale for.
const ssim2MinSide = 8

// ssim2Coef mirrors the WGSL struct Coef (ssim2_iir.wgsl): the float32
// constants of libjxl's CreateRecursiveGaussian(1.5).
type ssim2Coef struct {
	N2, D1                   [4]float32
	MulIn, MulPrev, MulPrev2 [3][4]float32
}

// ssim2IIRCoef is libjxl's CreateRecursiveGaussian(1.5), from the
// derivation the CPU reference uses too, padded to the WGSL layout.
func ssim2IIRCoef() ssim2Coef {
	c := recgauss.New(1.5)
	out := ssim2Coef{MulIn: c.MulIn, MulPrev: c.MulPrev, MulPrev2: c.MulPrev2}
	copy(out.N2[:], c.N2[:])
	copy(out.D1[:], c.D1[:])
	return out
}

// ssim2Scale is one level of the pyramid.
type ssim2Scale struct {
	W, H int
}

// ssim2Plan lists the scales libjxl evaluates for a w×h image. libjxl
// checks the size of the previous scale before halving, so scale k+1
// exists whenever scale k is at least 8×8, and the last scale may be
// smaller than 8×8 (a 64×48 image has scales down to 8×6).
func ssim2Plan(w, h int) []ssim2Scale {
	var s []ssim2Scale
	for i := 0; i < ssim2Scales; i++ {
		if w < ssim2MinSide || h < ssim2MinSide {
			break
		}
		if i > 0 {
			w, h = (w+1)/2, (h+1)/2
		}
		s = append(s, ssim2Scale{w, h})
	}
	return s
}

// ssim2Weights are libjxl v0.12.0's 108 weights, in its loop order:
// channel (X, Y, B), scale, norm (1, 4), map (SSIM, ringing, blurring).
var ssim2Weights = [108]float64{
	0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0,
	0.0, 0.0004371155730107379, 0.0, 1.1041726426657346, 0.00066284834129271, 0.00015231632783718752,
	0.0, 0.0016406437456599754, 0.0, 1.8422455520539298, 11.441172603757666, 0.0,
	0.0007989109436015163, 0.000176816438078653, 0.0, 1.8787594979546387, 10.94906990605142, 0.0,
	0.0007289346991508072, 0.9677937080626833, 0.0, 0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053,
	0.0004550992113792063, 0.0, 0.0, 0.0013648766163243398, 0.0, 0.0,
	0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
	0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
	225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
	176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408,
	0.0, 0.0, 0.0, 34.77906344483772, 44.835625328877896, 0.0,
	0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
	0.0, 0.0008680556573291698, 0.0, 0.0, 0.0,
	0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0,
	0.0, 0.0, 0.0, 0.0, 0.0004179171803251336, 0.0017290828234722833,
	0.0, 0.0020827005846636437, 0.0, 0.0, 8.826982764996862, 23.19243343998926,
	0.0, 95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493, 171.2667255897307,
	0.9807858872435379, 0.0, 0.0, 0.0, 0.0005130064588990679, 0.0,
	0.00010854057858411537,
}

// ssim2ScaleSums holds, for one scale, the pixel sums of the six terms per
// channel: [c][0] Σd, [1] Σd⁴, [2] Σartifact, [3] Σartifact⁴, [4] Σdetail
// lost, [5] Σdetail lost⁴.
type ssim2ScaleSums [3][ssim2Terms]float64

// ssim2Final turns the per-scale sums into the score exactly as libjxl's
// Msssim::Score does, in float64. As in libjxl, the weight index advances
// only over the scales that exist, so images with fewer than six scales use
// the same (shifted) weights libjxl uses.
func ssim2Final(plan []ssim2Scale, sums []ssim2ScaleSums) float64 {
	type norms struct{ ssim, edge [12]float64 }
	n := make([]norms, len(plan))
	for s, sc := range plan {
		inv := 1.0 / float64(sc.W*sc.H)
		for c := 0; c < 3; c++ {
			t := sums[s][c]
			n[s].ssim[c*2] = inv * t[0]
			n[s].ssim[c*2+1] = math.Sqrt(math.Sqrt(inv * t[1]))
			n[s].edge[c*4] = inv * t[2]
			n[s].edge[c*4+1] = math.Sqrt(math.Sqrt(inv * t[3]))
			n[s].edge[c*4+2] = inv * t[4]
			n[s].edge[c*4+3] = math.Sqrt(math.Sqrt(inv * t[5]))
		}
	}
	ssim := 0.0
	i := 0
	for c := 0; c < 3; c++ {
		for s := range plan {
			for k := 0; k < 2; k++ {
				ssim += ssim2Weights[i] * math.Abs(n[s].ssim[c*2+k])
				i++
				ssim += ssim2Weights[i] * math.Abs(n[s].edge[c*4+k])
				i++
				ssim += ssim2Weights[i] * math.Abs(n[s].edge[c*4+k+2])
				i++
			}
		}
	}
	ssim *= 0.9562382616834844
	ssim = 2.326765642916932*ssim - 0.020884521182843837*ssim*ssim +
		6.248496625763138e-05*ssim*ssim*ssim
	if ssim > 0 {
		return 100.0 - 10.0*math.Pow(ssim, 0.6276336467831387)
	}
	return 100.0
}
