package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Module is compiled kernel code loaded on a device.
type Module struct {
	d      *Device
	h      uintptr
	name   string
	Cubin  bool // compiled for the device's architecture (else PTX, JIT-compiled by the driver)
	Cached bool // loaded from the disk cache

	mu    sync.Mutex
	funcs map[string]*Function
}

// Function is a kernel of a module.
type Function struct {
	h    uintptr
	name string
}

// CompileOptions are the NVRTC options every kernel is compiled with, for
// architecture arch ("sm_90" or "compute_90"). --fmad=false: no multiply
// is fused into an add unless the source asks for fmaf, because the
// metrics reproduce libjxl's float32 operations (which fuse exactly where
// its SIMD code does) and a contraction changes the last bits; division
// and square root stay IEEE-rounded (NVRTC's default, not fast math).
func CompileOptions(arch string) []string {
	return []string{"--gpu-architecture=" + arch, "-default-device", "--std=c++17", "--fmad=false",
		"--prec-div=true", "--prec-sqrt=true", "--ftz=false"}
}

// Module compiles src (once per device and name: later calls return the
// loaded module) and loads it. The compiled code is cached on disk (see
// cacheKey), so NVRTC runs only the first time on a machine.
func (d *Device) Module(name, src string) (*Module, error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, errClosed
	}
	if m := d.modules[name]; m != nil {
		d.mu.Unlock()
		return m, nil
	}
	d.mu.Unlock()
	out, cached, err := d.build(name, src)
	if err != nil {
		return nil, err
	}
	m := &Module{d: d, name: name, Cubin: out.cubin, Cached: cached, funcs: map[string]*Function{}}
	img := out.image
	if !out.cubin {
		img = append(append([]byte(nil), img...), 0) // PTX is read as a C string
	}
	err = d.call(func() error {
		r := d.api.moduleLoadDataEx(&m.h, unsafe.Pointer(&img[0]), 0, nil, nil)
		runtime.KeepAlive(img)
		return d.api.check("cuModuleLoadDataEx "+name, r)
	})
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.modules[name]; old != nil { // another goroutine won the race
		_ = d.call(func() error { d.api.moduleUnload(m.h); return nil })
		return old, nil
	}
	if d.closed {
		return nil, errClosed
	}
	d.modules[name] = m
	return m, nil
}

// build returns the compiled image from the cache or NVRTC: a CUBIN for
// the device's own architecture when NVRTC knows it, else PTX for its
// virtual architecture (an NVRTC older than the GPU).
func (d *Device) build(name, src string) (out compileOutput, cached bool, err error) {
	ver, _, err := NVRTCVersion()
	if err != nil {
		return out, false, err
	}
	dir := cacheDir(os.Getenv)
	var errs []error
	for _, arch := range []string{d.info.Arch(), fmt.Sprintf("compute_%d%d", d.info.Major, d.info.Minor)} {
		opts := CompileOptions(arch)
		key := cacheKey{Driver: d.drv, Major: d.info.Major, Minor: d.info.Minor, NVRTC: ver, Options: opts, Source: src}
		if o, ok := cacheLoad(dir, key); ok {
			return o, true, nil
		}
		o, err := compileSource(name+".cu", src, opts, arch[:3] == "sm_")
		if err != nil {
			errs = append(errs, err)
			if e, ok := err.(*NVRTCError); ok && e.Code == NVRTCCompilation {
				break // the source is wrong: another architecture will not help
			}
			continue
		}
		_ = cacheStore(dir, key, o) // a read-only cache only costs a compile next time
		return o, false, nil
	}
	return out, false, fmt.Errorf("cuda: compiling %s: %w", name, joinErrs(errs))
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Function returns the kernel called name (declared extern "C").
func (m *Module) Function(name string) (*Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	f := &Function{name: name}
	err := m.d.call(func() error {
		return m.d.api.check("cuModuleGetFunction "+name, m.d.api.moduleGetFunction(&f.h, m.h, name))
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", zenmetrics.ErrUnsupported, err)
	}
	m.funcs[name] = f
	return f, nil
}
