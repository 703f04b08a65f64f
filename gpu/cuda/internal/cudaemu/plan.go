// Package cudaemu checks a CUDA metric package's kernels and launch
// sequences on machines without a GPU, for every metric alike:
//
//   - Signatures parses the kernels' parameter lists from the .cu source
//     and CheckTable compares them with the host's table (what
//     launch.CheckArgs enforces at every launch);
//   - Recorder is a launch.Launcher that records the launches the host's
//     queue functions make (the very functions Prepare and Score run) over
//     buffers from FakeAlloc, for the metric's own launch-plan checks;
//   - Emulator compiles the .cu source with the host C++ compiler and a
//     small shim, and replays recorded launches on the CPU (emulate.go).
//
// What a launch must satisfy (grid cover, buffer sizes, aliasing) depends
// on the metric's kernels, so those checks stay in each metric's tests.
package cudaemu

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// Param is one parameter of a kernel as declared in the .cu source.
type Param struct {
	Kind byte // 'p', 'i', 'f', 'd'
	Name string
	Out  bool // a pointer to non-const data (written)
}

// entryRE matches an exported kernel's declaration (with or without
// __launch_bounds__); the kernels are written with their parameter list
// on one line.
var entryRE = regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(([^)]*)\)`)

// Signatures parses every exported kernel's parameter list from src.
func Signatures(src string) (map[string][]Param, error) {
	out := map[string][]Param{}
	for _, m := range entryRE.FindAllStringSubmatch(src, -1) {
		var ps []Param
		for _, a := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.TrimSpace(a))
			if len(f) < 2 {
				return nil, fmt.Errorf("kernel %s: cannot parse parameter %q", m[1], a)
			}
			name := strings.TrimLeft(f[len(f)-1], "*")
			typ := strings.Join(f[:len(f)-1], " ")
			p := Param{Name: name}
			switch {
			case strings.Contains(a, "*"):
				p.Kind, p.Out = 'p', !strings.HasPrefix(typ, "const")
			case typ == "int":
				p.Kind = 'i'
			case typ == "float":
				p.Kind = 'f'
			case typ == "double":
				p.Kind = 'd'
			default:
				return nil, fmt.Errorf("kernel %s: parameter %q of type %q", m[1], name, typ)
			}
			ps = append(ps, p)
		}
		if _, dup := out[m[1]]; dup {
			return nil, fmt.Errorf("kernel %s declared twice", m[1])
		}
		out[m[1]] = ps
	}
	return out, nil
}

// CheckTable compares the host's kernel table with the source's
// declarations and returns every mismatch: a signature that differs, a
// kernel missing from the source, a kernel the source exports that the
// host never loads.
func CheckTable(src string, ks []*launch.Kernel) []error {
	sigs, err := Signatures(src)
	if err != nil {
		return []error{err}
	}
	var errs []error
	seen := map[string]bool{}
	for _, k := range ks {
		ps, ok := sigs[k.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("kernel %s is not in the source", k.Name))
			continue
		}
		seen[k.Name] = true
		var s []byte
		for _, p := range ps {
			s = append(s, p.Kind)
		}
		if string(s) != k.Sig {
			errs = append(errs, fmt.Errorf("kernel %s: host signature %q, source %q", k.Name, k.Sig, s))
		}
	}
	for name := range sigs {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("the source exports %s, which the host never loads", name))
		}
	}
	return errs
}

// Launch is one recorded launch.
type Launch struct {
	K           *launch.Kernel
	Grid, Block cuda.Dim3
	Args        []any
}

// Recorder is a launch.Launcher that checks each launch's arguments
// against the kernel's signature (as launch.Stream does) and records it.
type Recorder struct{ L []Launch }

// Launch implements launch.Launcher.
func (r *Recorder) Launch(k *launch.Kernel, grid, block cuda.Dim3, args ...any) error {
	if err := launch.CheckArgs(k, args); err != nil {
		return err
	}
	r.L = append(r.L, Launch{K: k, Grid: grid, Block: block, Args: args})
	return nil
}

// FakeAlloc hands out buffers with distinct, widely spaced addresses and
// no memory behind them, sized as Round says (the device allocator's
// rounding; nil keeps the size). Bufs lists them in order.
type FakeAlloc struct {
	Round func(int64) int64
	Bufs  []*cuda.Buffer
	next  cuda.DevPtr
}

// Alloc returns a new fake buffer of n bytes.
func (f *FakeAlloc) Alloc(n int64) *cuda.Buffer {
	f.next += 1 << 40
	if f.Round != nil {
		n = f.Round(n)
	}
	b := &cuda.Buffer{Ptr: f.next, Size: n}
	f.Bufs = append(f.Bufs, b)
	return b
}
