package iwssim

import (
	_ "embed"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed iwssim.cu
var kernelSource string

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

// Launch geometry, the same numbers as iwssim.cu's BX, BY, RT and CT.
const (
	blockX, blockY = 32, 8 // pixel kernels
	rowThreads     = 128   // terms: one block per region row
	covThreads     = 64    // cov: one block per block row, a thread per pair
)

// kern is one kernel with its signature (checked against iwssim.cu by
// TestSignaturesMatchSource, and at every launch against the arguments).
type kern = launch.Kernel

// kernels are the module's functions.
type kernels struct {
	unpack, downX, downY, upX, upY, hpass, terms kern
	rhpass, rstats, cov, mahal                   kern
}

// list is every kernel of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.unpack, &k.downX, &k.downY, &k.upX, &k.upY, &k.hpass, &k.terms, &k.rhpass, &k.rstats, &k.cov, &k.mahal}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is).
func newKernels() *kernels {
	return &kernels{
		unpack: kern{Name: "unpack", Sig: "piiiiiip"},
		downX:  kern{Name: "down_x", Sig: "piiip"},
		downY:  kern{Name: "down_y", Sig: "piiip"},
		upX:    kern{Name: "up_x", Sig: "piiip"},
		upY:    kern{Name: "up_y", Sig: "piiip"},
		hpass:  kern{Name: "hpass", Sig: "ppiiiipp"},
		terms:  kern{Name: "terms", Sig: "ppppppppiiiiiiip"},
		rhpass: kern{Name: "rhpass", Sig: "piiiipp"},
		rstats: kern{Name: "rstats", Sig: "ppiiiipppp"},
		cov:    kern{Name: "cov", Sig: "ppiiiiiiiiiiiip"},
		mahal:  kern{Name: "mahal", Sig: "pppiiiiiiiiiiip"},
	}
}

// module loads the kernels once per device.
var module = launch.Module[kernels]{Name: "iwssim", Source: source, Table: newKernels, List: (*kernels).list}

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
