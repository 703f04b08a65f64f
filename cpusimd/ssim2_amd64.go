//go:build amd64 && !noasm

package cpusimd

import "github.com/klauspost/cpuid/v2"

// useAsm: the CPU runs the AVX2 + FMA3 kernels of ssim2blur_amd64.s and
// ssim2pixel_amd64.s.
var useAsm = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3)

// The kernels of the .s files. The callers below check every length
// before calling them; see the generator (_generate/ssim2) for what
// each reads and writes.

//go:noescape
func hblurAVX2(t, o []float32, n0, e1, e2, xs, radius int, tab *[blurTabLen][8]float32)

//go:noescape
func colsBlockAVX2(in, out []float32, w, h, x0, strips, radius int, tab *[blurTabLen][8]float32, st *[colStateLen]float32)

// colMaxStrips is the most 16-column strips colsBlockAVX2 filters side by
// side; colStateLen its state buffer: two sets of three filters' states.
const (
	colMaxStrips = 4
	colStateLen  = 2 * 3 * 16 * colMaxStrips
)

//go:noescape
func vrowAVX2(top, bot, out, st []float32, n, mode, set int, tab *[blurTabLen][8]float32)

//go:noescape
func vrow2AVX2(top0, bot0, top1, bot1, out0, out1, st []float32, n, mode0, mode1, set int, tab *[blurTabLen][8]float32)

// vrow2Kernel: see Blur.VRow2, which checks the lengths.
func vrow2Kernel(top0, bot0, top1, bot1, out0, out1, st []float32, n, mode0, mode1, set int, b *Blur) {
	if useAsm {
		vrow2AVX2(top0, bot0, top1, bot1, out0, out1, st, n, mode0, mode1, set, &b.tab)
		return
	}
	vrow2Go(top0, bot0, top1, bot1, out0, out1, st, n, mode0, mode1, set, b)
}

// vrowKernel: see Blur.VRow, which checks the lengths.
func vrowKernel(top, bot, out, st []float32, n, mode, set int, b *Blur) {
	if useAsm {
		vrowAVX2(top, bot, out, st, n, mode, set, &b.tab)
		return
	}
	vrowGo(top, bot, out, st, n, mode, set, b)
}

//go:noescape
func cols8AVX2(in, out []float32, w, h, x0, radius int, tab *[blurTabLen][8]float32)

//go:noescape
func transposeInAVX2(a []float32, w int, t []float32, n int)

//go:noescape
func transposeMulInAVX2(a, m []float32, w int, t []float32, n int)

//go:noescape
func transposeOutAVX2(o, out []float32, w, n int)

// colsKernel runs the vertical pass over columns [x0, x1): up to 64 and
// then 8 at a time in assembly, the rest (fewer than 8) with the Go twin.
func colsKernel(in, out []float32, w, h, x0, x1 int, b *Blur) {
	if !useAsm {
		colsGo(in, out, w, h, x0, x1, b)
		return
	}
	checkCols(in, out, w, h, x0, x1)
	x := x0
	for x+16 <= x1 {
		strips := min((x1-x)/16, colMaxStrips)
		var st [colStateLen]float32
		colsBlockAVX2(in, out, w, h, x, strips, b.radius, &b.tab, &st)
		x += 16 * strips
	}
	if x+8 <= x1 {
		cols8AVX2(in, out, w, h, x, b.radius, &b.tab)
		x += 8
	}
	if x < x1 {
		colsGo(in, out, w, h, x, x1, b)
	}
}

// hblurKernel runs the transposed horizontal pass; see Blur.Rows8.
func hblurKernel(t, o []float32, pad, n0, e1, e2, xs int, b *Blur) {
	if !useAsm {
		hblurGo(t, o, pad, n0, e1, e2, xs, b)
		return
	}
	checkHblur(t, o, pad, n0, xs, b.radius)
	hblurAVX2(t[pad*8:], o[pad*8:], n0, e1, e2, xs, b.radius, &b.tab)
}

// transposeInKernel: t[8x+r] = in[r*w+x] (× mul[r*w+x]) for x < w.
func transposeInKernel(in, mul []float32, w int, t []float32) {
	if !useAsm {
		transposeInGo(in, mul, w, t, 0)
		return
	}
	in, t = in[:8*w], t[:8*w]
	n := w &^ 7
	if mul != nil {
		mul = mul[:8*w]
		transposeMulInAVX2(in, mul, w, t, n)
	} else {
		transposeInAVX2(in, w, t, n)
	}
	transposeInGo(in, mul, w, t, n)
}

// transposeOutKernel: out[r*w+x] = o[8x+r] for x < w.
func transposeOutKernel(o, out []float32, w int) {
	if !useAsm {
		transposeOutGo(o, out, w, 0)
		return
	}
	o, out = o[:8*w], out[:8*w]
	n := w &^ 7
	transposeOutAVX2(o, out, w, n)
	transposeOutGo(o, out, w, n)
}

//go:noescape
func xybAVX2(r, g, b, dx, dy, db []float32, n int, tab *[xybTabLen][8]float32)

//go:noescape
func rowTermsAVX2(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, tab *[termsTabLen][8]float32)

// xybKernel converts a row (all slices of one length), eight pixels at a
// time in assembly. The last few pixels (fewer than eight) go through the
// assembly too, copied into eight padded with zeros: pixels are
// independent and the kernel gives the twin's bits, and the twin's FMAs,
// emulated in float64, cost about as much for those few pixels as the
// kernel for a row of a thousand.
func xybKernel(r, g, b, dx, dy, db []float32, t *XYB) {
	if !useAsm {
		xybGo(r, g, b, dx, dy, db, 0, t)
		return
	}
	n := len(r) &^ 7
	xybAVX2(r, g, b, dx, dy, db, n, &t.tab)
	if k := len(r) - n; k > 0 {
		var in, out [3][8]float32
		copy(in[0][:], r[n:])
		copy(in[1][:], g[n:])
		copy(in[2][:], b[n:])
		xybAVX2(in[0][:], in[1][:], in[2][:], out[0][:], out[1][:], out[2][:], 8, &t.tab)
		copy(dx[n:], out[0][:k])
		copy(dy[n:], out[1][:k])
		copy(db[n:], out[2][:k])
	}
}

// termsKernel sums the terms of the first n pixels (n a multiple of 8, all
// slices at least n long) into acc.
func termsKernel(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, t *Terms) {
	if useAsm {
		rowTermsAVX2(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, &t.tab)
		return
	}
	termsGo(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, t)
}
