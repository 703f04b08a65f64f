//go:build (!amd64 && !arm64) || noasm

package cpusimd

// Without assembly every kernel is its Go twin.
const useAsm = false

func colsKernel(in, out []float32, w, h, x0, x1 int, b *Blur) {
	colsGo(in, out, w, h, x0, x1, b)
}

func hblurKernel(t, o []float32, pad, n0, e1, e2, xs int, b *Blur) {
	hblurGo(t, o, pad, n0, e1, e2, xs, b)
}

func transposeInKernel(in, mul []float32, w int, t []float32) {
	transposeInGo(in, mul, w, t, 0)
}

func transposeOutKernel(o, out []float32, w int) {
	transposeOutGo(o, out, w, 0)
}

func xybKernel(r, g, b, dx, dy, db []float32, t *XYB) {
	xybGo(r, g, b, dx, dy, db, 0, t)
}

func termsKernel(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, t *Terms) {
	termsGo(img1, mu1, vr1, img2, mu2, s22, s12, n, acc, t)
}

func vrowKernel(top, bot, out, st []float32, n, mode, set int, b *Blur) {
	vrowGo(top, bot, out, st, n, mode, set, b)
}

func vrow2Kernel(top0, bot0, top1, bot1, out0, out1, st []float32, n, mode0, mode1, set int, b *Blur) {
	vrow2Go(top0, bot0, top1, bot1, out0, out1, st, n, mode0, mode1, set, b)
}
