//go:build arm64 && !noasm

package cpusimd

// useAsm: every arm64 CPU runs the NEON kernels of ssim2blur_arm64.s and
// ssim2pixel_arm64.s (Advanced SIMD is part of ARMv8-A, and Go requires
// it), so there is no feature check.
//
// The NEON kernels do, lane by lane, exactly the float32 (and float64)
// operations of the Go twins in the same order, like the AVX2 ones:
// FMLA/FMLS round once, as fma32 does, and every product the twins round
// on its own is a separate FMUL. A NEON register holds four float32
// lanes, half an AVX2 register, so the kernels differ in shape: the
// vertical pass runs 16 columns per call of colsNEON with its filter
// states in registers; the horizontal pass runs each half (rows 0–3, then
// 4–7) of Rows8's transposed block separately; VRow2 is two VRow calls,
// which is exactly what its twin is. The transposes stay in Go.
const useAsm = true

// The kernels of the .s files; the wrappers below check every length
// before calling them.

//go:noescape
func colsNEON(in, out []float32, w, h, x0, radius int, k *[8]float32)

//go:noescape
func vrowNEON(top, bot, out, st []float32, n, mode, set int, k *[8]float32)

//go:noescape
func hblurNEON(t, o []float32, n0, e1, e2, xs, radius int, k *[36]float32)

//go:noescape
func xybNEON(r, g, b, dx, dy, db []float32, n int, k *[20]float32)

//go:noescape
func rowTermsNEON(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, c2 float32)

// colConsts packs the vertical filter's constants for the by-element
// multiply-adds of colsNEON and vrowNEON: d1[0..2], 0, n2[0..2], 0.
func colConsts(b *Blur) [8]float32 {
	c := &b.c
	return [8]float32{c.D1[0], c.D1[1], c.D1[2], 0, c.N2[0], c.N2[1], c.N2[2], 0}
}

// colsKernel runs the vertical pass over columns [x0, x1): 16 at a time in
// assembly, the rest (fewer than 16) with the Go twin.
func colsKernel(in, out []float32, w, h, x0, x1 int, b *Blur) {
	checkCols(in, out, w, h, x0, x1)
	k := colConsts(b)
	x := x0
	for ; x+16 <= x1; x += 16 {
		colsNEON(in, out, w, h, x, b.radius, &k)
	}
	if x < x1 {
		colsGo(in, out, w, h, x, x1, b)
	}
}

// vrowKernel: see Blur.VRow, which checks the lengths.
func vrowKernel(top, bot, out, st []float32, n, mode, set int, b *Blur) {
	k := colConsts(b)
	vrowNEON(top, bot, out, st, n, mode, set, &k)
}

// vrow2Kernel: see Blur.VRow2, which checks the lengths. Its Go twin is
// two vrowGo calls; so is this (the AVX2 version merges them only to load
// the states once).
func vrow2Kernel(top0, bot0, top1, bot1, out0, out1, st []float32, n, mode0, mode1, set int, b *Blur) {
	k := colConsts(b)
	vrowNEON(top0, bot0, out0, st, n, mode0, set, &k)
	vrowNEON(top1, bot1, out1, st, n, mode1, 1-set, &k)
}

// hblurKernel runs the transposed horizontal pass; see Blur.Rows8. The
// kernel filters four of the eight interleaved rows per call: lanes 0–3
// of every column, then (slices shifted by four floats) lanes 4–7.
func hblurKernel(t, o []float32, pad, n0, e1, e2, xs int, b *Blur) {
	checkHblur(t, o, pad, n0, xs, b.radius)
	c := &b.c
	var k [36]float32
	for f := 0; f < 3; f++ {
		copy(k[12*f:], c.MulIn[f][:])
		copy(k[12*f+4:], c.MulPrev2[f][:])
		copy(k[12*f+8:], c.MulPrev[f][:])
	}
	t, o = t[pad*8:], o[pad*8:]
	hblurNEON(t, o, n0, e1, e2, xs, b.radius, &k)
	hblurNEON(t[4:], o[4:], n0, e1, e2, xs, b.radius, &k)
}

// transposeInKernel: t[8x+r] = in[r*w+x] (× mul[r*w+x]) for x < w.
func transposeInKernel(in, mul []float32, w int, t []float32) {
	transposeInGo(in, mul, w, t, 0)
}

// transposeOutKernel: out[r*w+x] = o[8x+r] for x < w.
func transposeOutKernel(o, out []float32, w int) {
	transposeOutGo(o, out, w, 0)
}

// xybConsts packs the XYB constants for xybNEON's by-element operations:
// the opsin matrix row by row, each row followed by one of bias,
// −cbrt(bias), 1/3; then 4/3 and the positive-XYB constants, and 0.5.
func xybConsts(t *XYB) [20]float32 {
	p := &t.p
	return [20]float32{
		p.M[0][0], p.M[0][1], p.M[0][2], p.Bias,
		p.M[1][0], p.M[1][1], p.M[1][2], p.NegBiasCbrt,
		p.M[2][0], p.M[2][1], p.M[2][2], p.Third,
		p.FourThird, p.PosXMul, p.PosXAdd, p.PosYAdd,
		p.PosBAdd, 0.5, 0, 0,
	}
}

// xybKernel converts a row (all slices of one length), four pixels at a
// time in assembly, the rest with the Go twin.
func xybKernel(r, g, b, dx, dy, db []float32, t *XYB) {
	n := len(r) &^ 3
	if n > 0 {
		k := xybConsts(t)
		xybNEON(r, g, b, dx, dy, db, n, &k)
	}
	xybGo(r, g, b, dx, dy, db, n, t)
}

// termsKernel sums the terms of the first n pixels (n a multiple of 8, all
// slices at least n long) into acc.
func termsKernel(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, t *Terms) {
	rowTermsNEON(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, t.c2)
}
