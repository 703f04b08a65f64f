//go:build !amd64 || noasm

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
