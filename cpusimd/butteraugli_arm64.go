//go:build arm64 && !noasm

package cpusimd

import "unsafe"

// baAsm: every arm64 CPU runs butteraugli_arm64.s (Advanced SIMD is part
// of ARMv8-A). The kernels there round every product on its own, as the
// Go twins do (an FMUL, then an FADD), so NEON, AVX2 and the twins give
// the same bits. A kernel without a NEON version yet runs its Go twin on
// the wrapper's blocks (the *Go helpers), so every kernel is correct
// here and the NEON ones are drop-in replacements.
const baAsm = true

//go:noescape
func firNEON(src, dst *float32, n8, step, off int, k *[8]float32)

func firKernel(dst, src []float32, step int, k [][8]float32, n8 int) {
	if n8 > 0 {
		firNEON(&src[0], &dst[0], n8, step, len(k)-1, &k[0])
	}
}

// baRow is the n floats at p, for the Go fallbacks of kernels handed raw
// row pointers.
func baRow(p *float32, n int) []float32 { return unsafe.Slice(p, n) }

//go:noescape
func maltaNEON(o, u, h, m *float32, n8, stride int)

func maltaKernel(o, u, h, m []float32, n8, stride int) {
	if n8 > 0 {
		maltaNEON(&o[0], &u[0], &h[0], &m[0], n8, stride)
	}
}

//go:noescape
func maltaDiffNEON(r0, r1, o *float32, n8 int, w *BAMaltaWeights)

func maltaDiffKernel(r0, r1, o []float32, n8 int, w *BAMaltaWeights) {
	if n8 > 0 {
		maltaDiffNEON(&r0[0], &r1[0], &o[0], n8, w)
	}
}

//go:noescape
func diffmapRowNEON(rows *[baRows]*float32, n8 int, k *BADiffmapConsts)

func diffmapRowKernel(rows *[baRows]*float32, n8 int, k *BADiffmapConsts) {
	diffmapRowNEON(rows, n8, k)
}

func opsinRowKernel(rows *[9]*float32, n8 int, k *BAOpsinConsts) {
	n := 8 * n8
	r, g, b, br, bg, bb := baRow(rows[0], n), baRow(rows[1], n), baRow(rows[2], n), baRow(rows[3], n), baRow(rows[4], n), baRow(rows[5], n)
	ox, oy, ob := baRow(rows[6], n), baRow(rows[7], n), baRow(rows[8], n)
	for x := 0; x < n; x++ {
		ox[x], oy[x], ob[x] = opsinGo(k, r[x], g[x], b[x], br[x], bg[x], bb[x])
	}
}

func erosionKernel(row, up, down, o []float32, n8 int) {
	erosionGo(row, up, down, o[:8*n8], 3, 0)
}

//go:noescape
func lfSplitNEON(rows *[6]*float32, n8 int, k *[4]float32)

//go:noescape
func mfSplitRemoveNEON(rows *[2]*float32, n8 int, k *[1]float32)

//go:noescape
func mfSplitAmplifyNEON(rows *[2]*float32, n8 int, k *[1]float32)

//go:noescape
func suppressNEON(rows *[2]*float32, n8 int, k *[3]float32)

//go:noescape
func uhfSplitXNEON(rows *[2]*float32, n8 int, k *[2]float32)

//go:noescape
func uhfSplitYNEON(rows *[2]*float32, n8 int, k *[6]float32)

//go:noescape
func maskPreNEON(rows *[5]*float32, n8 int, k *[6]float32)

//go:noescape
func sep5NEON(src, dst *float32, n8, step int, w *[3]float32)

func lfSplitKernel(rows *[6]*float32, n8 int, k *[4]float32) { lfSplitNEON(rows, n8, k) }

func mfSplitKernel(rows *[2]*float32, n8 int, amplify bool, k *[1]float32) {
	if amplify {
		mfSplitAmplifyNEON(rows, n8, k)
	} else {
		mfSplitRemoveNEON(rows, n8, k)
	}
}

func suppressKernel(rows *[2]*float32, n8 int, k *[3]float32) { suppressNEON(rows, n8, k) }

func uhfSplitXKernel(rows *[2]*float32, n8 int, k *[2]float32) { uhfSplitXNEON(rows, n8, k) }

func uhfSplitYKernel(rows *[2]*float32, n8 int, k *[6]float32) { uhfSplitYNEON(rows, n8, k) }

func maskPreKernel(rows *[5]*float32, n8 int, k *[6]float32) { maskPreNEON(rows, n8, k) }

func sep5Kernel(src, dst []float32, n8, step int, w *[3]float32) {
	if n8 > 0 {
		sep5NEON(&src[0], &dst[0], n8, step, w)
	}
}
