//go:build arm64 && !noasm

package cpusimd

// baAsm: every arm64 CPU runs butteraugli_arm64.s (Advanced SIMD is part
// of ARMv8-A). The kernels there round every product on its own, as the
// Go twins do (an FMUL, then an FADD), so NEON, AVX2 and the twins give
// the same bits. Every kernel has a NEON version; a block of eight (the
// wrappers' unit) is two vectors of four lanes.
const baAsm = true

// The kernels of butteraugli_arm64.s; the exported wrappers check every
// length before calling them, and the functions below only unpack slices
// (the amd64 dispatch has the same shape).

//go:noescape
func firNEON(src, dst *float32, n8, step, off int, k *[8]float32)

func firKernel(dst, src []float32, step int, k [][8]float32, n8 int) {
	if n8 > 0 {
		firNEON(&src[0], &dst[0], n8, step, len(k)-1, &k[0])
	}
}

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

//go:noescape
func opsinRowNEON(rows *[9]*float32, n8 int, k *BAOpsinConsts)

//go:noescape
func erosionNEON(row, up, down, o *float32, n8 int)

func opsinRowKernel(rows *[9]*float32, n8 int, k *BAOpsinConsts) { opsinRowNEON(rows, n8, k) }

func erosionKernel(row, up, down, o []float32, n8 int) {
	if n8 > 0 {
		erosionNEON(&row[0], &up[0], &down[0], &o[0], n8)
	}
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

//go:noescape
func colSumNEON(dst *float32, rows **float32, k *float32, nrows, n8 int, scale float32)

// colSumKernel runs n8 blocks of BAColumnSum; it reports whether it did
// (always, on arm64).
func colSumKernel(dst []float32, rows *[baColRows]*float32, k []float32, nrows, n8 int, scale float32) bool {
	colSumNEON(&dst[0], &rows[0], &k[0], nrows, n8, scale)
	return true
}

//go:noescape
func rowBorderNEON(out *[8]float32, src *float32, w *[8]float32, n int, s *[8]float32)

// rowBorderKernel runs BARowBorder (w not empty); it reports whether it
// did (always, on arm64).
func rowBorderKernel(out *[8]float32, src []float32, w [][8]float32, s *[8]float32) bool {
	rowBorderNEON(out, &src[0], &w[0], len(w), s)
	return true
}
