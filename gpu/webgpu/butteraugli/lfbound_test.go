package butteraugli

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// Rounding bounds of the blurs (TestButteraugliLFVariants,
// TestButteraugliBlurVariants). Every version evaluates
// butteraugli_fir.wgsl's sums in f32 in the same order. Vulkan rounds
// add, sub and mul correctly, but lets the driver's compiler contract a
// product and the sum it feeds into one fused operation, which drops a
// rounding and never adds one. So whatever it contracts, an f32 result
// lies within γ_k·M of the exact value of the same sum: M is the sum of
// the magnitudes of the terms (|sample|·tap over the taps the path uses,
// divided by the tap sum on the border path), k the most roundings one
// term meets on its way to the result, γ_k = k·u/(1-k·u) and u = 2^-24.
// Bounding by M and not by the result matters: the test planes have both
// signs, so the sums cancel to a small fraction of their terms.
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
const bfLFU = 1.0 / (1 << 24)

// bfFIRKInt and bfFIRKEdge are the factors of M on the interior and the
// border path of a blur of radius off.
func bfFIRKInt(off int) float64  { return float64((off+3)/4+6) * bfLFU }
func bfFIRKEdge(off int) float64 { return float64(4*off+6) * bfLFU }

// The pointwise step's f32 constants (butteraugli_col_lf.wgsl: WGSL
// rounds the literals to f32).
var (
	bfLFMulX  = float64(float32(33.832837186260))
	bfLFMulY  = float64(float32(14.458268100570))
	bfLFMixYB = float64(float32(-0.362267051518))
	bfLFMulB  = float64(float32(49.87984651440))
)

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

// bfLFPlaneNames are the planes of one LF run, in runLF's order.
var bfLFPlaneNames = [9]string{"rows X", "rows Y", "rows B", "X-LF", "Y-LF", "B-LF", "LF X", "LF Y", "LF B"}

// bfLFCheck compares the nine planes of one LF run on the planes in (w×h)
// with the exact values: the row planes with the FIR of in, the rest with
// the column FIR of the run's own row planes (so each pass is held to its
// own rounding) and the pointwise step in float64. The pointwise step
// adds its roundings to the column blurs' bounds E: X-LF x - b one
// rounding of |x| + |b|; LF X and Y one of the product; LF B = (c·by +
// bb)·m three, each of at most m·(|c·by| + |bb|), so it is bounded by the
// magnitudes of its inputs, not by its result, which cancels. It returns
// a line for each plane with values outside their bound (NaN included)
// and the largest ratio of a difference to its bound.
func bfLFCheck(w, h int, in [3][]float32, out [9][]float32) (bad []string, worst float64) {
	const u = bfLFU
	var ref, bnd [9][]float64
	var b, e [3][]float64
	for c := 0; c < 3; c++ {
		ref[c], bnd[c] = bfFIRExact(bfKernLF, in[c], w, h, true)
		b[c], e[c] = bfFIRExact(bfKernLF, out[c], w, h, false)
	}
	n := w * h
	for p := 3; p < 9; p++ {
		ref[p], bnd[p] = make([]float64, n), make([]float64, n)
	}
	for i := 0; i < n; i++ {
		for c := 0; c < 3; c++ {
			x := float64(in[c][i])
			ref[3+c][i] = x - b[c][i]
			bnd[3+c][i] = e[c][i]*(1+u) + u*(math.Abs(x)+math.Abs(b[c][i]))
		}
		for c, m := range []float64{bfLFMulX, bfLFMulY} {
			ref[6+c][i] = m * b[c][i]
			bnd[6+c][i] = m * (e[c][i]*(1+u) + u*math.Abs(b[c][i]))
		}
		by, bb, ey, eb := b[1][i], b[2][i], e[1][i], e[2][i]
		c := math.Abs(bfLFMixYB)
		ref[8][i] = (bfLFMixYB*by + bb) * bfLFMulB
		bnd[8][i] = bfLFMulB * (c*ey + eb + 3*u*(c*(math.Abs(by)+ey)+math.Abs(bb)+eb))
	}
	for p := range out {
		cnt, first := 0, -1
		for i, v := range out[p] {
			d := math.Abs(float64(v) - ref[p][i])
			if !(d <= bnd[p][i]) {
				if first < 0 {
					first = i
				}
				cnt++
				continue
			}
			worst = max(worst, d/bnd[p][i])
		}
		if cnt > 0 {
			i := first
			bad = append(bad, fmt.Sprintf("%s: %d of %d values outside the bound, first at x %d y %d: %g, exact %g, bound %.3g",
				bfLFPlaneNames[p], cnt, n, i%w, i/w, out[p][i], ref[p][i], bnd[p][i]))
		}
	}
	return bad, worst
}

// bfLFPlanes are three w×h planes of magnitudes from 1e-3 to 1e3 with both
// signs (seed): products fused into sums, or operations reordered, show in
// the last bits.
func bfLFPlanes(w, h int, seed int64) (in [3][]float32) {
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

// bfLFEmulate evaluates the LF pair of kernel k in f32 on the CPU, in
// butteraugli_fir.wgsl's order, with every product fused into the sum it
// feeds (fused) or none (bfMad).
func bfLFEmulate(k bfKernel, in [3][]float32, w, h int, fused bool) (out [9][]float32) {
	mad := bfMad(fused)
	fir := func(at func(int) float32, p, n int) float32 { return bfFIREmulate(k, at, p, n, mad) }
	n := w * h
	for p := range out {
		out[p] = make([]float32, n)
	}
	for c := 0; c < 3; c++ {
		src, t := in[c], out[c]
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				t[y*w+x] = fir(func(j int) float32 { return src[y*w+j] }, x, w)
			}
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			var b [3]float32
			for c := 0; c < 3; c++ {
				t := out[c]
				b[c] = fir(func(j int) float32 { return t[j*w+x] }, y, h)
				out[3+c][i] = float32(in[c][i] - b[c])
			}
			out[6][i] = float32(b[0] * float32(bfLFMulX))
			out[7][i] = float32(b[1] * float32(bfLFMulY))
			out[8][i] = float32(mad(float32(bfLFMixYB), b[1], b[2]) * float32(bfLFMulB))
		}
	}
	return out
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

// TestButteraugliLFBound holds the CPU emulation of the LF pair, with no
// product fused and with every one fused, to bfLFCheck's bounds, so the
// bounds admit whatever a driver contracts; and checks that they still
// catch a pair of taps swapped.
func TestButteraugliLFBound(t *testing.T) {
	for i, sz := range [][2]int{{9, 13}, {67, 41}, {40, 70}} {
		w, h := sz[0], sz[1]
		in := bfLFPlanes(w, h, int64(200+i))
		plain := bfLFEmulate(bfKernLF, in, w, h, false)
		fused := bfLFEmulate(bfKernLF, in, w, h, true)
		moved := 0
		for p := range plain {
			for j := range plain[p] {
				if plain[p][j] != fused[p][j] {
					moved++
				}
			}
		}
		for _, c := range []struct {
			name string
			out  [9][]float32
		}{{"unfused", plain}, {"fused", fused}} {
			bad, worst := bfLFCheck(w, h, in, c.out)
			for _, b := range bad {
				t.Errorf("%dx%d %s: %s", w, h, c.name, b)
			}
			t.Logf("%dx%d %s: largest difference %.3f of its bound (%d values move when fused)", w, h, c.name, worst, moved)
		}
		k := bfKernLF
		k.half = append([]float32(nil), k.half...)
		k.half[12], k.half[13] = k.half[13], k.half[12]
		if bad, _ := bfLFCheck(w, h, in, bfLFEmulate(k, in, w, h, false)); len(bad) == 0 && w >= 2*k.off+1 {
			t.Errorf("%dx%d: two taps swapped, but every value is within its bound", w, h)
		}
	}
}
