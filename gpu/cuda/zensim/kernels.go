package zensim

import (
	_ "embed"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed zensim.cu
var kernelSource string

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

// Launch geometry, the same numbers as zensim.cu's BX/BY, HT, HR, VT, CT, MT.
const (
	blockX, blockY = 32, 8 // xyb, down
	hblurThreads   = 128   // hblur: all load and store; warp 0 walks the rows
	hblurRows      = 32    // hblur: rows per block (one per lane of warp 0)
	vstatsThreads  = 64    // vstats: one column each
	chainThreads   = 128   // chain: all load a batch; the first nq add it
	mergeThreads   = 64    // merge: one (channel, quantity) each
)

// zensim.cu's record: 17 sums, then 3 maxima; strips of 16 output rows.
const (
	nq    = 20
	nsum  = 17
	strip = 16
)

// kern is one kernel with its signature (checked against zensim.cu by
// TestSignaturesMatchSource, and at every launch against the arguments).
type kern = launch.Kernel

// kernels are the module's functions.
type kernels struct {
	xyb, down, hblur, vstats, chain, merge kern
}

// list is every kernel of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.xyb, &k.down, &k.hblur, &k.vstats, &k.chain, &k.merge}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is).
func newKernels() *kernels {
	return &kernels{
		xyb:    kern{Name: "xyb", Sig: "ppiiiiiiiiiiiippp"},
		down:   kern{Name: "down", Sig: "piiiip"},
		hblur:  kern{Name: "hblur", Sig: "ppiiip"},
		vstats: kern{Name: "vstats", Sig: "pppiiiiiip"},
		chain:  kern{Name: "chain", Sig: "piiiip"},
		merge:  kern{Name: "merge", Sig: "piip"},
	}
}

// module loads the kernels once per device.
var module = launch.Module[kernels]{Name: "zensim", Source: source, Table: newKernels, List: (*kernels).list}

// load compiles (or takes from the disk cache) and loads the kernels,
// once per device.
func load(d *cuda.Device) (*kernels, error) { return module.Load(d) }

// pxGrid is the 32×8-block launch over a w×h plane.
func pxGrid(w, h int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, blockX), Y: cuda.Groups(h, blockY), Z: 1}, cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// maxGridY is the driver's limit on a grid's Y and Z dimensions; xyb and
// down put the rows there, vstats the strips.
const maxGridY = 65535
