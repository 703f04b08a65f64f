//go:build (!amd64 && !arm64) || noasm

package cpusimd

// Without assembly every Butteraugli kernel is its Go twin (the exported
// wrappers never call these with work to do).
const baAsm = false

func firKernel(dst, src []float32, step int, k [][8]float32, n8 int) {}

func maltaKernel(o, u, h, m []float32, n8, stride int) {}

func maltaDiffKernel(r0, r1, o []float32, n8 int, w *BAMaltaWeights) {}

func diffmapRowKernel(rows *[baRows]*float32, n8 int, k *BADiffmapConsts) {}

func opsinRowKernel(rows *[9]*float32, n8 int, k *BAOpsinConsts) {}

func erosionKernel(row, up, down, o []float32, n8 int) {}

func lfSplitKernel(rows *[6]*float32, n8 int, k *[4]float32) {}

func mfSplitKernel(rows *[2]*float32, n8 int, amplify bool, k *[1]float32) {}

func suppressKernel(rows *[2]*float32, n8 int, k *[3]float32) {}

func uhfSplitXKernel(rows *[2]*float32, n8 int, k *[2]float32) {}

func uhfSplitYKernel(rows *[2]*float32, n8 int, k *[6]float32) {}

func maskPreKernel(rows *[5]*float32, n8 int, k *[6]float32) {}

func sep5Kernel(src, dst []float32, n8, step int, w *[3]float32) {}

func colSumKernel(dst []float32, rows *[baColRows]*float32, k []float32, nrows, n8 int, scale float32) bool {
	return false
}

func rowBorderKernel(out *[8]float32, src []float32, w [][8]float32, s *[8]float32) bool {
	return false
}
