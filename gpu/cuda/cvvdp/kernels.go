package cvvdp

import (
	_ "embed"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

//go:embed cvvdp.cu
var kernelSource string

// source is the compiled text: the generated constants, then the kernels
// (built once per process).
var source = sync.OnceValue(func() string { return header() + kernelSource })

// Launch geometry, the same numbers as cvvdp.cu's BX/BY, RT, RB and ST.
const (
	blockX, blockY = 32, 8 // pixel kernels
	rowPixels      = 128   // rows: pixels per round
	rowThreads     = 160   // rows: one block per row (rowPixels and a summing warp)
	sumThreads     = 256   // base_ref, base_dist, band_sums
)

// kern is one kernel with its signature (checked against cvvdp.cu by
// TestSignaturesMatchSource, and at every launch against the arguments).
type kern = launch.Kernel

// kernels are the module's functions.
type kernels struct {
	unpack, reduce, refBand, distBand, blurH, rows  kern
	bandSums, baseRef, baseDist, heatAdd, heatFinal kern
}

// list is every kernel of k.
func (k *kernels) list() []*kern {
	return []*kern{&k.unpack, &k.reduce, &k.refBand, &k.distBand, &k.blurH, &k.rows,
		&k.bandSums, &k.baseRef, &k.baseDist, &k.heatAdd, &k.heatFinal}
}

// newKernels is the table without functions (the dry-run tests use it as
// it is).
func newKernels() *kernels {
	return &kernels{
		unpack:    kern{Name: "unpack", Sig: "pppiiiiiiiiiip"},
		reduce:    kern{Name: "reduce", Sig: "piip"},
		refBand:   kern{Name: "ref_band", Sig: "pppiiiiifiipp"},
		distBand:  kern{Name: "dist_band", Sig: "ppppiiiifiiiipp"},
		blurH:     kern{Name: "blur_h", Sig: "piip"},
		rows:      kern{Name: "rows", Sig: "ppiiiiiiiffffpp"},
		bandSums:  kern{Name: "band_sums", Sig: "pip"},
		baseRef:   kern{Name: "base_ref", Sig: "ppiiip"},
		baseDist:  kern{Name: "base_dist", Sig: "ppiiiffffpp"},
		heatAdd:   kern{Name: "heat_add", Sig: "piiiip"},
		heatFinal: kern{Name: "heat_final", Sig: "ppiiiip"},
	}
}

// module loads the kernels once per device.
var module = launch.Module[kernels]{Name: "cvvdp", Source: source, Table: newKernels, List: (*kernels).list}

// load compiles (or takes from the disk cache) and loads the kernels,
// once per device.
func load(d *cuda.Device) (*kernels, error) { return module.Load(d) }

// pxGrid is the 32×8-block launch over a w×h plane, z layers deep.
func pxGrid(w, h, z int) (cuda.Dim3, cuda.Dim3) {
	return cuda.Dim3{X: cuda.Groups(w, blockX), Y: cuda.Groups(h, blockY), Z: uint32(z)}, cuda.Dim3{X: blockX, Y: blockY, Z: 1}
}

// maxGridY is the driver's limit on a grid's Y dimension; the pixel
// kernels put the rows there.
const maxGridY = 65535
