package butteraugli

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/cpusimd"
)

// Opsin absorbance mixing (photopsin model): each output is a weighted sum of
// linear R, G, B (scaled to nits) plus a bias.
const (
	mix0  = float32(0.29956550340058319)
	mix1  = float32(0.63373087833825936)
	mix2  = float32(0.077705617820981968)
	mix3  = float32(1.7557483643287353)
	mix4  = float32(0.22158691104574774)
	mix5  = float32(0.69391388044116142)
	mix6  = float32(0.0987313588422)
	mix7  = float32(1.7557483643287353)
	mix8  = float32(0.02)
	mix9  = float32(0.02)
	mix10 = float32(0.20480129041026129)
	mix11 = float32(12.226454707163354)
)

// The coefficients of log2Approx.
const (
	logP0 = float32(-1.8503833400518310e-06)
	logP1 = float32(1.4287160470083755e+00)
	logP2 = float32(7.4245873327820566e-01)
	logQ0 = float32(9.9032814277590719e-01)
	logQ1 = float32(1.0096718572241148e+00)
	logQ2 = float32(1.7409343003366853e-01)
)

// gammaHDR's constants.
const (
	gammaAdd = float32(9.9710635769299145)
	retAdd   = float32(-23.16046239805755)
)

// log2Approx is libjxl's FastLog2f: a (2,2) rational approximation of
// log2(1+m) after reducing x to a mantissa in [2/3, 4/3). Its error (about
// 4e-6) is part of the reference numbers, so it is reproduced rather than
// replaced by math.Log2.
func log2Approx(x float32) float32 {
	bits := int32(math.Float32bits(x))
	e := (bits - 0x3f2aaaab) >> 23
	m := math.Float32frombits(uint32(bits-e<<23)) - 1
	// Products rounded on their own (float32(·)), as on amd64: Go on
	// arm64 would fuse them into the sums.
	num := float32((float32(logP2*m)+logP1)*m) + logP0
	den := float32((float32(logQ2*m)+logQ1)*m) + logQ0
	return num/den + float32(e)
}

// gammaRetMul is 19.245… × ln 2, each rounded to float32 and multiplied in
// float32 at run time, as the reference folds the two.
var gammaRetMul = func() float32 {
	a, b := float32(19.245013259874995), float32(0.6931471805599453)
	return a * b
}()

// gammaHDR is butteraugli's log-shaped response to light.
func gammaHDR(v float32) float32 {
	if v < 0 {
		v = 0
	}
	return float32(gammaRetMul*log2Approx(v+gammaAdd)) + retAdd
}

// opsinDynamics converts linear RGB (1.0 = intensity nits) to butteraugli's
// XYB. The sensitivity of each pixel comes from a slightly blurred copy of
// the image. blurred is a scratch image.
func opsinDynamics(wk workers, rgb image3, intensity float32, xyb, blurred image3, sc *scratch) {
	for c := 0; c < 3; c++ {
		blur(wk, kernOpsin, rgb[c], blurred[c], sc)
	}
	var k *cpusimd.BAOpsinConsts
	if useFast {
		k = opsinConsts(intensity)
	}
	wk.rows(rgb[0].h, func(y0, y1 int) { opsinRows(rgb, blurred, xyb, intensity, k, y0, y1) })
}

// opsinRows writes rows [y0, y1) of xyb from the same rows of rgb and of
// its blurred copy. k is opsinConsts(intensity) on the fast path.
func opsinRows(rgb, blurred, xyb image3, intensity float32, k *cpusimd.BAOpsinConsts, y0, y1 int) {
	if useFast {
		for y := y0; y < y1; y++ {
			cpusimd.BAOpsinRow(rgb[0].row(y), rgb[1].row(y), rgb[2].row(y),
				blurred[0].row(y), blurred[1].row(y), blurred[2].row(y),
				xyb[0].row(y), xyb[1].row(y), xyb[2].row(y), k)
		}
		return
	}
	const minV = float32(1e-4)
	for y := y0; y < y1; y++ {
		r, g, b := rgb[0].row(y), rgb[1].row(y), rgb[2].row(y)
		br, bg, bb := blurred[0].row(y), blurred[1].row(y), blurred[2].row(y)
		ox, oy, ob := xyb[0].row(y), xyb[1].row(y), xyb[2].row(y)
		for x := range r {
			r0, g0, b0 := br[x]*intensity, bg[x]*intensity, bb[x]*intensity
			p0 := max(float32(mix0*r0)+(float32(mix1*g0)+(float32(mix2*b0)+mix3)), mix3, minV)
			p1 := max(float32(mix4*r0)+(float32(mix5*g0)+(float32(mix6*b0)+mix7)), mix7, minV)
			p2 := max(float32(mix8*r0)+(float32(mix9*g0)+(float32(mix10*b0)+mix11)), mix11, minV)
			s0 := max(gammaHDR(p0)/p0, minV)
			s1 := max(gammaHDR(p1)/p1, minV)
			s2 := max(gammaHDR(p2)/p2, minV)
			r1, g1, b1 := r[x]*intensity, g[x]*intensity, b[x]*intensity
			c0 := max((float32(mix0*r1)+(float32(mix1*g1)+(float32(mix2*b1)+mix3)))*s0, mix3)
			c1 := max((float32(mix4*r1)+(float32(mix5*g1)+(float32(mix6*b1)+mix7)))*s1, mix7)
			c2 := max((float32(mix8*r1)+(float32(mix9*g1)+(float32(mix10*b1)+mix11)))*s2, mix11)
			ox[x] = c0 - c1
			oy[x] = c0 + c1
			ob[x] = c2
		}
	}
}

// opsinConsts is the constant table of cpusimd.BAOpsinRow.
func opsinConsts(intensity float32) *cpusimd.BAOpsinConsts {
	return cpusimd.NewBAOpsinConsts(intensity, 1e-4,
		[12]float32{mix0, mix1, mix2, mix3, mix4, mix5, mix6, mix7, mix8, mix9, mix10, mix11},
		gammaAdd, gammaRetMul, retAdd, [6]float32{logP0, logP1, logP2, logQ0, logQ1, logQ2})
}
