package dssim

import (
	_ "embed"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed dssim.cu
var kernelSource string

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

// Launch geometry, the same numbers as dssim.cu's BX/BY, RW, RC and RS.
const (
	blockX, blockY = 32, 8 // pixel and tile kernels
	rowThreads     = 32    // row_sums, row_devs: one block per row
	rowChunk       = 128   // their values per round (shared buffer)
	sumThreads     = 256   // mean, finish: one block
)

// kern is one kernel with its signature (checked against dssim.cu by
// TestSignaturesMatchSource, and at every launch against the arguments).
type kern = launch.Kernel

// kernels are the module's functions.
type kernels struct {
	unpack, down, lab, chroma, stats, ssim kern
	rowSums, mean, rowDevs, finish         kern
}

// list is every kernel of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.unpack, &k.down, &k.lab, &k.chroma, &k.stats, &k.ssim, &k.rowSums, &k.mean, &k.rowDevs, &k.finish}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is).
func newKernels() *kernels {
	return &kernels{
		unpack:  kern{Name: "unpack", Sig: "ppiiiiiiiipp"},
		down:    kern{Name: "down", Sig: "piiip"},
		lab:     kern{Name: "lab", Sig: "piiiip"},
		chroma:  kern{Name: "chroma", Sig: "piip"},
		stats:   kern{Name: "stats", Sig: "piip"},
		ssim:    kern{Name: "ssim", Sig: "ppppiiiiip"},
		rowSums: kern{Name: "row_sums", Sig: "piip"},
		mean:    kern{Name: "mean", Sig: "piddip"},
		rowDevs: kern{Name: "row_devs", Sig: "piipipp"},
		finish:  kern{Name: "finish", Sig: "ppiip"},
	}
}

// module loads the kernels once per device.
var module = launch.Module[kernels]{Name: "dssim", Source: source, Table: newKernels, List: (*kernels).list}

// load compiles (or takes from the disk cache) and loads the kernels,
// once per device.
func load(d *cuda.Device) (*kernels, error) { return module.Load(d) }

// pxGrid is the 32×8-block launch over a w×h plane.
func pxGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, blockX), Y: cuda.Groups(h, blockY), Z: 1}, cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// maxGridY is the driver's limit on a grid's Y dimension; the pixel
// kernels put the rows there.
const maxGridY = 65535
