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

// Launch geometry, the same numbers as butteraugli.cu's: blocks of
// threads and, where a thread computes several outputs, how many.
const (
	pxBlock       = 16 // PX: pixel kernels (unpack, subsample, mask_pre, erode, combine), 16×16 blocks
	reduceThreads = 256
	// reducePer is the map values each reduce_map thread sums.
	reducePer = 16

	lfRowTX, lfRowTY           = 64, 4    // LRX, LRY: rows_lf, one output per thread
	lfColTX, lfColTY           = 32, 8    // LCX, LCY: cols_lf, one output per thread
	opsinTX, opsinTY, opsinPer = 32, 8, 2 // OTX, OTY: opsin, 2 rows per thread
	rowTX, rowTY, rowPer       = 64, 4, 4 // RTX, RTY, RTQ: rows_hf, rows_uhf, rows_mask, RTQ columns per thread…
	rowRows                    = 2        // …in each of RTR rows
	colTX, colTY, colPer       = 32, 8, 4 // CTX, CTY, CTR: cols_mf, cols_uhf, cols_mask, CTR rows per thread
	maltaTX, maltaTY, maltaPer = 32, 8, 4 // MCW, MCH, MCR: malta_x, malta_y, MCR rows per thread
)

// kern is one kernel with its signature (the shared table type: the
// compile test checks the signatures against butteraugli.cu, every launch
// is checked against them).
type kern = launch.Kernel

// kernels are the module's functions. Each field's kernel and signature
// are set in newKernels.
type kernels struct {
	unpack, subsample, opsin           kern
	rowsLF, rowsHF, rowsUHF, rowsMask  kern
	colsLF, colsMF, colsUHF, colsMask  kern
	maskPre, erode, maltaX, maltaY     kern
	combine, reduceMap, reducePartials kern
}

// list is every kernel of k, in the order of its fields.
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

// grid is the launch of blocks of tx×ty threads, each computing px×py
// outputs, over a w×h level.
func grid(w, h, tx, ty, px, py int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, tx*px), Y: cuda.Groups(h, ty*py), Z: 1}, cuda.Dim3{X: uint32(tx), Y: uint32(ty), Z: 1}
}

// pxGrid is the 16×16-block launch of the pixel kernels over a w×h level.
func pxGrid(w, h int) (cuda.Dim3, cuda.Dim3) { return grid(w, h, pxBlock, pxBlock, 1, 1) }

// lfRowGrid and lfColGrid are the LF pair's launches (rows_lf, cols_lf).
func lfRowGrid(w, h int) (cuda.Dim3, cuda.Dim3) { return grid(w, h, lfRowTX, lfRowTY, 1, 1) }
func lfColGrid(w, h int) (cuda.Dim3, cuda.Dim3) { return grid(w, h, lfColTX, lfColTY, 1, 1) }

// opsinGrid, rowGrid (rows_hf, rows_uhf, rows_mask), colGrid (cols_mf,
// cols_uhf, cols_mask) and maltaGrid are the launches of the kernels that
// compute several outputs per thread.
func opsinGrid(w, h int) (cuda.Dim3, cuda.Dim3) { return grid(w, h, opsinTX, opsinTY, 1, opsinPer) }
func rowGrid(w, h int) (cuda.Dim3, cuda.Dim3)   { return grid(w, h, rowTX, rowTY, rowPer, rowRows) }
func colGrid(w, h int) (cuda.Dim3, cuda.Dim3)   { return grid(w, h, colTX, colTY, 1, colPer) }
func maltaGrid(w, h int) (cuda.Dim3, cuda.Dim3) { return grid(w, h, maltaTX, maltaTY, 1, maltaPer) }

// reduceGroups is the number of reduce_map blocks over n map values.
func reduceGroups(n int) int { return (n + reduceThreads*reducePer - 1) / (reduceThreads * reducePer) }
