package butteraugli

import (
	_ "embed"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed butteraugli.cu
var kernelSource string

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
)

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
}

// kernelList names every kernel with its signature, in the order of the
// fields of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.unpack, &k.subsample, &k.opsin, &k.rowsLF, &k.rowsHF, &k.rowsUHF, &k.rowsMask,
		&k.colsLF, &k.colsMF, &k.colsUHF, &k.colsMask, &k.maskPre, &k.erode, &k.maltaX, &k.maltaY,
		&k.combine, &k.reduceMap, &k.reducePartials}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is).
func newKernels() *kernels {
	return &kernels{
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

// reduceGroups is the number of reduce_map blocks over n map values.
func reduceGroups(n int) int { return (n + reduceThreads*reducePer - 1) / (reduceThreads * reducePer) }
