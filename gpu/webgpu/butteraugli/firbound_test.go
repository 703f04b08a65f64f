package butteraugli

import (
	"math"
	"math/rand"
)

// Rounding bounds of the blurs' row and column sums
// (TestButteraugliLFVariants, TestButteraugliBlurVariants;
// blurbound_test.go carries them through the pointwise steps). Every
// version evaluates butteraugli_fir.wgsl's sums in f32 in the same order.
// Vulkan rounds add, sub and mul correctly, but lets the driver's compiler
// contract a product and the sum it feeds into one fused operation, which
// drops a rounding and never adds one. So whatever it contracts, an f32
// result lies within γ_k·M of the exact value of the same sum: M is the
// sum of the magnitudes of the terms (|sample|·tap over the taps the path
// uses, divided by the tap sum on the border path), k the most roundings
// one term meets on its way to the result, γ_k = k·u/(1-k·u) and u =
// 2^-24. Bounding by M and not by the result matters: the test planes
// have both signs, so the sums cancel to a small fraction of their terms.
//
// Interior (p ≥ off from both edges, off the radius): the pair sum, its
// product with the tap, ⌈off/4⌉ - 1 more additions into its partial sum
// (which starts from an exact 0 + term) and 4 in the final sum centre·tap
// + a0 + a1 + a2 + a3: k = ⌈off/4⌉ + 5, and γ_k < (k+1)u (LF's 16: k = 9,
// 10u).
//
// Border: the tap sum ws (at most 2·off terms, 2·off - 1 roundings, all
// terms positive, so relative), 1/ws (WGSL allows 2.5 ulp for a division,
// at most 5u relative), then per sample term a product and at most 2·off
// - 1 additions, and the final scaling: 4·off + 5, and γ below (4·off +
// 6)u (LF: 70u).
//
// The exact values are float64 sums of the same f32 taps, exact to ~1e-16
// of M, far inside the slack between k and the rounded-up factor.
const bfU = 1.0 / (1 << 24)

// bfFIRKInt and bfFIRKEdge are the factors of M on the interior and the
// border path of a blur of radius off.
func bfFIRKInt(off int) float64  { return float64((off+3)/4+6) * bfU }
func bfFIRKEdge(off int) float64 { return float64(4*off+6) * bfU }

// bfFIRExact is the exact FIR of butteraugli_fir.wgsl with kernel k on
// plane src (w×h) along x (alongX) or y, from the f32 taps the kernels
// read, and the bound on any f32 evaluation's distance from it.
func bfFIRExact(k bfKernel, src []float32, w, h int, alongX bool) (val, bound []float64) {
	off := k.off
	val, bound = make([]float64, w*h), make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p, n := y, h
			at := func(j int) float64 { return float64(src[j*w+x]) }
			if alongX {
				p, n = x, w
				at = func(j int) float64 { return float64(src[y*w+j]) }
			}
			var v, m float64
			if p >= off && p < n-off {
				for d := -off; d <= off; d++ {
					tap := float64(k.half[off-max(d, -d)])
					v += at(p+d) * tap
					m += math.Abs(at(p+d)) * tap
				}
				m *= bfFIRKInt(off)
			} else {
				lo, hi := max(0, p-off), min(n-1, p+off)
				ws := 0.0
				for j := lo; j <= hi; j++ {
					ws += float64(k.full[j-p+off])
				}
				for j := lo; j <= hi; j++ {
					tap := float64(k.full[j-p+off]) / ws
					v += at(j) * tap
					m += math.Abs(at(j)) * tap
				}
				m *= bfFIRKEdge(off)
			}
			val[y*w+x], bound[y*w+x] = v, m
		}
	}
	return val, bound
}

// bfTestPlanes are three w×h planes of magnitudes from 1e-3 to 1e3 with both
// signs (seed): products fused into sums, or operations reordered, show in
// the last bits.
func bfTestPlanes(w, h int, seed int64) (in [3][]float32) {
	rng := rand.New(rand.NewSource(seed))
	for c := range in {
		in[c] = make([]float32, w*h)
		for i := range in[c] {
			v := float32(math.Pow(10, rng.Float64()*6-3))
			if rng.Intn(2) == 0 {
				v = -v
			}
			in[c][i] = v
		}
	}
	return in
}

// bfFIREmulate is butteraugli_fir.wgsl's blur with kernel k of the
// sample at p of n (at reads them) in f32, each product and the sum it
// feeds evaluated by mad.
func bfFIREmulate(k bfKernel, at func(int) float32, p, n int, mad func(a, b, c float32) float32) float32 {
	off := k.off
	if p >= off && p < n-off {
		var a [4]float32
		for _, tm := range bfFIRTerms(off) {
			a[tm.acc] = mad(float32(at(p-tm.d)+at(p+tm.d)), k.half[tm.tap], a[tm.acc])
		}
		return float32(float32(mad(at(p), k.half[off], a[0])+a[1])+a[2]) + a[3]
	}
	lo, hi := max(0, p-off), min(n-1, p+off)
	var ws, s float32
	for j := lo; j <= hi; j++ {
		ws = float32(ws + k.full[j-p+off])
	}
	scale := float32(1 / ws)
	for j := lo; j <= hi; j++ {
		s = mad(at(j), k.full[j-p+off], s)
	}
	return float32(s * scale)
}

// bfMad is a*b + c in f32 with the product fused into the sum (fused) or
// rounded first: the two extremes of what a driver may compile. The
// explicit float32 conversions keep Go from fusing on its own.
func bfMad(fused bool) func(a, b, c float32) float32 {
	return func(a, b, c float32) float32 {
		if fused {
			return float32(math.FMA(float64(a), float64(b), float64(c)))
		}
		return float32(a*b) + c
	}
}
