package butteraugli

import (
	_ "embed"
	"fmt"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

//go:embed butteraugli.cu
var kernelSource string

var (
	srcOnce sync.Once
	src     string
)

// source is the compiled text: the generated constants, then the kernels.
func source() string {
	srcOnce.Do(func() { src = header() + kernelSource })
	return src
}

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

// kern is one kernel: its name in butteraugli.cu, its parameter kinds
// ('p' pointer, 'i' int, 'f' float, 'd' double, in order; the compile
// test checks them against the source's signatures) and the loaded
// function.
type kern struct {
	name string
	sig  string
	f    *cuda.Function
}

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
		unpack:         kern{name: "unpack", sig: "ppiiiiiifppp"},
		subsample:      kern{name: "subsample", sig: "pppiipppii"},
		opsin:          kern{name: "opsin", sig: "pppiifppp"},
		rowsLF:         kern{name: "rows_lf", sig: "ppii"},
		rowsHF:         kern{name: "rows_hf", sig: "ppii"},
		rowsUHF:        kern{name: "rows_uhf", sig: "ppii"},
		rowsMask:       kern{name: "rows_mask", sig: "ppii"},
		colsLF:         kern{name: "cols_lf", sig: "pppppppppii"},
		colsMF:         kern{name: "cols_mf", sig: "ppppppppii"},
		colsUHF:        kern{name: "cols_uhf", sig: "ppppppii"},
		colsMask:       kern{name: "cols_mask", sig: "ppii"},
		maskPre:        kern{name: "mask_pre", sig: "pppppii"},
		erode:          kern{name: "erode", sig: "pppii"},
		maltaX:         kern{name: "malta_x", sig: "ppppppppppii"},
		maltaY:         kern{name: "malta_y", sig: "pppppppppii"},
		combine:        kern{name: "combine", sig: "pppppppppppppiiii"},
		reduceMap:      kern{name: "reduce_map", sig: "piidip"},
		reducePartials: kern{name: "reduce_partials", sig: "pip"},
	}
}

var (
	kmu   sync.Mutex
	kByDv = map[*cuda.Device]*kernels{}
)

// load compiles (or takes from the disk cache) and loads the kernels,
// once per device.
func load(d *cuda.Device) (*kernels, error) {
	kmu.Lock()
	defer kmu.Unlock()
	if k := kByDv[d]; k != nil {
		return k, nil
	}
	m, err := d.Module("butteraugli", source())
	if err != nil {
		return nil, err
	}
	k := newKernels()
	for _, kn := range k.list() {
		if kn.f, err = m.Function(kn.name); err != nil {
			return nil, err
		}
	}
	kByDv[d] = k
	return k, nil
}

// launcher queues kernels: a stream (streamQueue) or, in tests, a
// recorder that checks each launch without a device.
type launcher interface {
	launch(k *kern, grid, block cuda.Dim3, args ...any) error
}

// streamQueue launches on a CUDA stream.
type streamQueue struct{ st *cuda.Stream }

func (q streamQueue) launch(k *kern, grid, block cuda.Dim3, args ...any) error {
	if err := checkArgs(k, args); err != nil {
		return err
	}
	return q.st.Launch(k.f, grid, block, 0, args...)
}

// argKind is the signature letter a Go launch argument stands for (what
// cuda.Stream.Launch passes it as), or 0.
func argKind(a any) byte {
	switch a.(type) {
	case *cuda.Buffer, cuda.DevPtr:
		return 'p'
	case int, int32, uint32:
		return 'i'
	case float32:
		return 'f'
	case float64:
		return 'd'
	}
	return 0
}

// checkArgs refuses a launch whose arguments do not match the kernel's
// signature: cuLaunchKernel reads each parameter at the size the kernel
// declares, so a missing, extra or mistyped argument would be read as
// garbage instead of failing.
func checkArgs(k *kern, args []any) error {
	if len(args) != len(k.sig) {
		return fmt.Errorf("%w: cuda butteraugli: kernel %s takes %d arguments, got %d", zenmetrics.ErrBadInput, k.name, len(k.sig), len(args))
	}
	for i, a := range args {
		if got := argKind(a); got != k.sig[i] {
			return fmt.Errorf("%w: cuda butteraugli: kernel %s argument %d is %T, want %q", zenmetrics.ErrBadInput, k.name, i, a, k.sig[i])
		}
	}
	return nil
}

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
