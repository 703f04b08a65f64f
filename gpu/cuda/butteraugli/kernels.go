package butteraugli

import (
	_ "embed"
	"os"
	"strings"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed butteraugli.cu
var baseSource string

// fastSource is the faster kernel variants (issue #17); they use
// butteraugli.cu's helpers, so they follow it.
//
//go:embed butteraugli_fast.cu
var fastSource string

// kernelSource is every kernel, as the module compiles them.
var kernelSource = baseSource + "\n" + fastSource

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

// Launch geometry, the same numbers as butteraugli.cu's PX, RTX/RTY,
// CTX/CTY and RB.
const (
	pxBlock       = 16 // pixel kernels, opsin, malta: 16×16 blocks
	rowTX, rowTY  = 64, 4
	colTX, colTY  = 32, 8
	reduceThreads = 256
	// reducePer is the map values each reduce_map thread sums.
	reducePer = 16

	// The faster variants (butteraugli_fast.cu's MCW/MCH/MCR, RVX/RVY/RVQ,
	// CVX/CVY/CVR, OVX/OVY): blocks of threads and outputs per thread.
	opsinTX, opsinTY, opsinPer = 32, 8, 2 // opsin_v2: 2 rows per thread
	maltaTX, maltaTY, maltaPer = 32, 8, 4 // malta_*_v2: MCR rows per thread
	rowVX, rowVY, rowVPer      = 64, 4, 4 // rows_*_v2: RVQ columns per thread…
	rowVRows                   = 2        // …in each of RVR rows
	colVX, colVY, colVPer      = 32, 8, 4 // cols_*_v2: CVR rows per thread
)

// EnvVariant picks the kernel variants, so that one binary can time them
// (issue #17's A/B): "0" runs the original kernels (one output per
// thread, 16×16 opsin and Malta tiles), "malta" or "blur" (opsin and the
// separable blurs) the new kernels of that family only, anything else
// (unset) both. The LF pair of the blurs (rows_lf, cols_lf) has no new
// version: one written like the others measured slower on the H200 at
// 16 MP (0.60 + 0.71 ms against 0.53 + 0.62) while every other new
// kernel was faster, so it was taken out. Read once per process.
const EnvVariant = "ZENMETRICS_CUDA_BA_NEW"

// variant says which kernel families run their butteraugli_fast.cu
// version: malta, blur (opsin and the separable blurs but the LF pair).
type variant struct{ malta, blur bool }

func (v variant) String() string {
	blur := "old blurs"
	if v.blur {
		blur = "new blurs (opsin_v2, rows_*_v2, cols_*_v2; rows_lf, cols_lf as before)"
	}
	if v.malta {
		return "new malta (malta_*_v2), " + blur
	}
	return "old malta, " + blur
}

// parseVariant reads EnvVariant's value.
func parseVariant(s string) variant {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0", "old", "false":
		return variant{}
	case "malta":
		return variant{malta: true}
	case "blur":
		return variant{blur: true}
	}
	return variant{malta: true, blur: true}
}

// envVariant is the process's choice.
var envVariant = sync.OnceValue(func() variant { return parseVariant(os.Getenv(EnvVariant)) })

// kern is one kernel with its signature (the shared table type: the
// compile test checks the signatures against butteraugli.cu, every launch
// is checked against them).
type kern = launch.Kernel

// kernels are the module's functions. Each field's kernel and signature
// are listed in kernelList.
type kernels struct {
	unpack, subsample, opsin           kern
	rowsLF, rowsHF, rowsUHF, rowsMask  kern
	colsLF, colsMF, colsUHF, colsMask  kern
	maskPre, erode, maltaX, maltaY     kern
	combine, reduceMap, reducePartials kern
	// The faster variants (butteraugli_fast.cu), used where v says.
	opsin2                       kern
	rowsHF2, rowsUHF2, rowsMask2 kern
	colsMF2, colsUHF2, colsMask2 kern
	maltaX2, maltaY2             kern

	v variant
}

// kernelList names every kernel with its signature, in the order of the
// fields of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.unpack, &k.subsample, &k.opsin, &k.rowsLF, &k.rowsHF, &k.rowsUHF, &k.rowsMask,
		&k.colsLF, &k.colsMF, &k.colsUHF, &k.colsMask, &k.maskPre, &k.erode, &k.maltaX, &k.maltaY,
		&k.combine, &k.reduceMap, &k.reducePartials,
		&k.opsin2, &k.rowsHF2, &k.rowsUHF2, &k.rowsMask2, &k.colsMF2, &k.colsUHF2, &k.colsMask2,
		&k.maltaX2, &k.maltaY2}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is), with the process's variant (EnvVariant).
func newKernels() *kernels { return newKernelsV(envVariant()) }

// newKernelsV is the table with variant v.
func newKernelsV(v variant) *kernels {
	return &kernels{
		v:              v,
		unpack:         kern{Name: "unpack", Sig: "ppiiiiiifppp"},
		subsample:      kern{Name: "subsample", Sig: "pppiipppii"},
		opsin:          kern{Name: "opsin", Sig: "pppiifppp"},
		rowsLF:         kern{Name: "rows_lf", Sig: "ppii"},
		rowsHF:         kern{Name: "rows_hf", Sig: "ppii"},
		rowsUHF:        kern{Name: "rows_uhf", Sig: "ppii"},
		rowsMask:       kern{Name: "rows_mask", Sig: "ppii"},
		colsLF:         kern{Name: "cols_lf", Sig: "pppppppppii"},
		colsMF:         kern{Name: "cols_mf", Sig: "ppppppppii"},
		colsUHF:        kern{Name: "cols_uhf", Sig: "ppppppii"},
		colsMask:       kern{Name: "cols_mask", Sig: "ppii"},
		maskPre:        kern{Name: "mask_pre", Sig: "pppppii"},
		erode:          kern{Name: "erode", Sig: "pppii"},
		maltaX:         kern{Name: "malta_x", Sig: "ppppppppppii"},
		maltaY:         kern{Name: "malta_y", Sig: "pppppppppii"},
		combine:        kern{Name: "combine", Sig: "pppppppppppppiiii"},
		reduceMap:      kern{Name: "reduce_map", Sig: "piidip"},
		reducePartials: kern{Name: "reduce_partials", Sig: "pip"},
		opsin2:         kern{Name: "opsin_v2", Sig: "pppiifppp"},
		rowsHF2:        kern{Name: "rows_hf_v2", Sig: "ppii"},
		rowsUHF2:       kern{Name: "rows_uhf_v2", Sig: "ppii"},
		rowsMask2:      kern{Name: "rows_mask_v2", Sig: "ppii"},
		colsMF2:        kern{Name: "cols_mf_v2", Sig: "ppppppppii"},
		colsUHF2:       kern{Name: "cols_uhf_v2", Sig: "ppppppii"},
		colsMask2:      kern{Name: "cols_mask_v2", Sig: "ppii"},
		maltaX2:        kern{Name: "malta_x_v2", Sig: "ppppppppppii"},
		maltaY2:        kern{Name: "malta_y_v2", Sig: "pppppppppii"},
	}
}

// module loads the kernels once per device.
var module = launch.Module[kernels]{Name: "butteraugli", Source: source, Table: newKernels, List: (*kernels).list}

// load compiles (or takes from the disk cache) and loads the kernels,
// once per device.
func load(d *cuda.Device) (*kernels, error) { return module.Load(d) }

// pxGrid is the 16×16-block launch over a w×h level.
func pxGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, pxBlock), Y: cuda.Groups(h, pxBlock), Z: 1}, cuda.Dim3{X: pxBlock, Y: pxBlock, Z: 1}
}

func rowGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, rowTX), Y: cuda.Groups(h, rowTY), Z: 1}, cuda.Dim3{X: rowTX, Y: rowTY, Z: 1}
}

func colGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, colTX), Y: cuda.Groups(h, colTY), Z: 1}, cuda.Dim3{X: colTX, Y: colTY, Z: 1}
}

// The launches of the faster variants: each thread computes several
// outputs (maltaPer rows, opsinPer rows, rowVPer columns × rowVRows rows,
// colVPer rows).
func maltaGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, maltaTX), Y: cuda.Groups(h, maltaTY*maltaPer), Z: 1},
		cuda.Dim3{X: maltaTX, Y: maltaTY, Z: 1}
}

func opsinGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, opsinTX), Y: cuda.Groups(h, opsinTY*opsinPer), Z: 1},
		cuda.Dim3{X: opsinTX, Y: opsinTY, Z: 1}
}

func rowGrid2(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, rowVX*rowVPer), Y: cuda.Groups(h, rowVY*rowVRows), Z: 1},
		cuda.Dim3{X: rowVX, Y: rowVY, Z: 1}
}

func colGrid2(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, colVX), Y: cuda.Groups(h, colVY*colVPer), Z: 1}, cuda.Dim3{X: colVX, Y: colVY, Z: 1}
}

// reduceGroups is the number of reduce_map blocks over n map values.
func reduceGroups(n int) int { return (n + reduceThreads*reducePer - 1) / (reduceThreads * reducePer) }
