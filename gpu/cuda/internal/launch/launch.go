// Package launch is the kernel table and launch path the CUDA metric
// packages share. Each metric names its kernels with the parameter kinds
// of their declarations in its .cu file; every launch is checked against
// them before it reaches the driver, because cuLaunchKernel reads each
// parameter at the size the kernel declares: a missing, extra or mistyped
// argument would be read as garbage instead of failing. The launches go
// through the Launcher interface, so that tests can record and replay the
// very sequences Prepare and Score queue without a device (package
// cudaemu).
package launch

import (
	"fmt"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

// Kernel is one kernel: its name in the .cu source, its parameter kinds
// ('p' pointer, 'i' int, 'f' float, 'd' double, in order; the metric's
// tests check them against the source's declarations) and, once loaded,
// the function.
type Kernel struct {
	Name string
	Sig  string
	F    *cuda.Function
}

// Launcher queues kernels: a CUDA stream (Stream) or, in tests, a
// recorder.
type Launcher interface {
	Launch(k *Kernel, grid, block cuda.Dim3, args ...any) error
}

// Stream launches on a CUDA stream, with no dynamic shared memory.
type Stream struct{ St *cuda.Stream }

// Launch checks args against k's signature and queues k.
func (s Stream) Launch(k *Kernel, grid, block cuda.Dim3, args ...any) error {
	if err := CheckArgs(k, args); err != nil {
		return err
	}
	return s.St.Launch(k.F, grid, block, 0, args...)
}

// ArgKind is the signature letter a Go launch argument stands for (what
// cuda.Stream.Launch passes it as), or 0.
func ArgKind(a any) byte {
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

// CheckArgs refuses (ErrBadInput) a launch whose arguments do not match
// k's signature in number or kind.
func CheckArgs(k *Kernel, args []any) error {
	if len(args) != len(k.Sig) {
		return fmt.Errorf("%w: cuda: kernel %s takes %d arguments, got %d", zenmetrics.ErrBadInput, k.Name, len(k.Sig), len(args))
	}
	for i, a := range args {
		if got := ArgKind(a); got != k.Sig[i] {
			return fmt.Errorf("%w: cuda: kernel %s argument %d is %T, want %q", zenmetrics.ErrBadInput, k.Name, i, a, k.Sig[i])
		}
	}
	return nil
}

// Load compiles src as module name on d (once per device; NVRTC's output
// is cached on disk by package cuda) and looks up every kernel of ks.
func Load(d *cuda.Device, name, src string, ks []*Kernel) error {
	m, err := d.Module(name, src)
	if err != nil {
		return err
	}
	for _, k := range ks {
		if k.F, err = m.Function(k.Name); err != nil {
			return err
		}
	}
	return nil
}

// Module is a metric's kernel table, compiled and loaded once per device
// (a process may drive several GPUs, each with its own functions).
type Module[T any] struct {
	Name   string             // the module's name (NVRTC's, the disk cache's)
	Source func() string      // the complete CUDA source
	Table  func() *T          // a table without functions
	List   func(*T) []*Kernel // every kernel of a table, for Load

	mu sync.Mutex
	by map[*cuda.Device]*T
}

// Load returns d's table, compiling (or taking from the disk cache) and
// loading the module the first time.
func (m *Module[T]) Load(d *cuda.Device) (*T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.by[d]; t != nil {
		return t, nil
	}
	t := m.Table()
	if err := Load(d, m.Name, m.Source(), m.List(t)); err != nil {
		return nil, err
	}
	if m.by == nil {
		m.by = map[*cuda.Device]*T{}
	}
	m.by[d] = t
	return t, nil
}
