//go:build amd64 && !noasm

package cpusimd

import "github.com/klauspost/cpuid/v2"

// baAsm: the CPU runs butteraugli_amd64.s (AVX2 only: the kernels use no
// fused multiply-adds, to keep the reference's roundings).
var baAsm = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2)

// The kernels of butteraugli_amd64.s; the exported wrappers check every
// length before calling them (see _generate/butteraugli for what each reads
// and writes).

//go:noescape
func fir3AVX2(src, dst *float32, n8, step int, k *[4][8]float32)

//go:noescape
func fir6AVX2(src, dst *float32, n8, step int, k *[7][8]float32)

//go:noescape
func fir7AVX2(src, dst *float32, n8, step int, k *[8][8]float32)

//go:noescape
func fir16AVX2(src, dst *float32, n8, step int, k *[17][8]float32)

//go:noescape
func maltaAVX2(o, u, h, m *float32, n8, stride int)

//go:noescape
func maltaDiffAVX2(r0, r1, o *float32, n8 int, w *BAMaltaWeights)

func firKernel(dst, src []float32, step int, k [][8]float32, n8 int) {
	if n8 == 0 {
		return
	}
	switch len(k) - 1 {
	case 3:
		fir3AVX2(&src[0], &dst[0], n8, step, (*[4][8]float32)(k))
	case 6:
		fir6AVX2(&src[0], &dst[0], n8, step, (*[7][8]float32)(k))
	case 7:
		fir7AVX2(&src[0], &dst[0], n8, step, (*[8][8]float32)(k))
	case 16:
		fir16AVX2(&src[0], &dst[0], n8, step, (*[17][8]float32)(k))
	}
}

func maltaKernel(o, u, h, m []float32, n8, stride int) {
	if n8 > 0 {
		maltaAVX2(&o[0], &u[0], &h[0], &m[0], n8, stride)
	}
}

func maltaDiffKernel(r0, r1, o []float32, n8 int, w *BAMaltaWeights) {
	if n8 > 0 {
		maltaDiffAVX2(&r0[0], &r1[0], &o[0], n8, w)
	}
}

//go:noescape
func diffmapRowAVX2(rows *[baRows]*float32, n8 int, k *BADiffmapConsts)

//go:noescape
func opsinRowAVX2(rows *[9]*float32, n8 int, k *BAOpsinConsts)

//go:noescape
func erosionAVX2(row, up, down, o *float32, n8 int)

func diffmapRowKernel(rows *[baRows]*float32, n8 int, k *BADiffmapConsts) {
	diffmapRowAVX2(rows, n8, k)
}

func opsinRowKernel(rows *[9]*float32, n8 int, k *BAOpsinConsts) { opsinRowAVX2(rows, n8, k) }

func erosionKernel(row, up, down, o []float32, n8 int) {
	if n8 > 0 {
		erosionAVX2(&row[0], &up[0], &down[0], &o[0], n8)
	}
}

//go:noescape
func lfSplitAVX2(rows *[6]*float32, n8 int, k *[4]float32)

//go:noescape
func mfSplitRemoveAVX2(rows *[2]*float32, n8 int, k *[1]float32)

//go:noescape
func mfSplitAmplifyAVX2(rows *[2]*float32, n8 int, k *[1]float32)

//go:noescape
func suppressAVX2(rows *[2]*float32, n8 int, k *[3]float32)

//go:noescape
func uhfSplitXAVX2(rows *[2]*float32, n8 int, k *[2]float32)

//go:noescape
func uhfSplitYAVX2(rows *[2]*float32, n8 int, k *[6]float32)

//go:noescape
func maskPreAVX2(rows *[5]*float32, n8 int, k *[6]float32)

//go:noescape
func sep5AVX2(src, dst *float32, n8, step int, w *[3]float32)

func lfSplitKernel(rows *[6]*float32, n8 int, k *[4]float32) { lfSplitAVX2(rows, n8, k) }

func mfSplitKernel(rows *[2]*float32, n8 int, amplify bool, k *[1]float32) {
	if amplify {
		mfSplitAmplifyAVX2(rows, n8, k)
	} else {
		mfSplitRemoveAVX2(rows, n8, k)
	}
}

func suppressKernel(rows *[2]*float32, n8 int, k *[3]float32) { suppressAVX2(rows, n8, k) }

func uhfSplitXKernel(rows *[2]*float32, n8 int, k *[2]float32) { uhfSplitXAVX2(rows, n8, k) }

func uhfSplitYKernel(rows *[2]*float32, n8 int, k *[6]float32) { uhfSplitYAVX2(rows, n8, k) }

func maskPreKernel(rows *[5]*float32, n8 int, k *[6]float32) { maskPreAVX2(rows, n8, k) }

func sep5Kernel(src, dst []float32, n8, step int, w *[3]float32) {
	if n8 > 0 {
		sep5AVX2(&src[0], &dst[0], n8, step, w)
	}
}

//go:noescape
func colSumAVX2(dst *float32, rows **float32, k *float32, nrows, n8 int, scale float32)

// colSumKernel runs n8 blocks of BAColumnSum; it reports whether it did.
func colSumKernel(dst []float32, rows *[baColRows]*float32, k []float32, nrows, n8 int, scale float32) bool {
	colSumAVX2(&dst[0], &rows[0], &k[0], nrows, n8, scale)
	return true
}

//go:noescape
func rowBorderAVX2(out *[8]float32, src *float32, w *[8]float32, n int, s *[8]float32)

// rowBorderKernel runs BARowBorder (w not empty); it reports whether it
// did.
func rowBorderKernel(out *[8]float32, src []float32, w [][8]float32, s *[8]float32) bool {
	rowBorderAVX2(out, &src[0], &w[0], len(w), s)
	return true
}
