//go:build !amd64 || noasm

package cpusimd

// Without assembly every Butteraugli kernel is its Go twin (the exported
// wrappers never call these with work to do).
const baAsm = false

func firKernel(dst, src []float32, step int, k []float32, n8 int) {}

func maltaKernel(o, u, h, m []float32, n8, stride int) {}

func maltaDiffKernel(r0, r1, o []float32, n8 int, w *BAMaltaWeights) {}

func diffmapRowKernel(rows *[baRows]*float32, n8 int, k *BADiffmapConsts) {}

func opsinRowKernel(rows *[9]*float32, n8 int, k *BAOpsinConsts) {}

func erosionKernel(row, up, down, o []float32, n8 int) {}
