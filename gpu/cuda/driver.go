package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// DevPtr is a CUdeviceptr: an address in device memory.
type DevPtr uint64

// driverAPI holds the driver entry points. Names with a _v2 suffix are
// bound by that name: the unsuffixed symbols are the CUDA 3.x ABI with
// 32-bit sizes, kept by the driver for old binaries only.
type driverAPI struct {
	path string

	init              func(flags uint32) Result
	driverGetVersion  func(v *int32) Result
	deviceGetCount    func(n *int32) Result
	deviceGet         func(dev *int32, ordinal int32) Result
	deviceGetName     func(name *byte, n int32, dev int32) Result
	deviceGetAttr     func(v *int32, attr int32, dev int32) Result
	deviceTotalMem    func(bytes *uint64, dev int32) Result
	primaryCtxRetain  func(ctx *uintptr, dev int32) Result
	primaryCtxRelease func(dev int32) Result
	ctxSetCurrent     func(ctx uintptr) Result
	ctxSynchronize    func() Result
	memGetInfo        func(free, total *uint64) Result
	memAlloc          func(p *DevPtr, bytes uint64) Result
	memFree           func(p DevPtr) Result
	memHostAlloc      func(p *unsafe.Pointer, bytes uint64, flags uint32) Result
	memFreeHost       func(p unsafe.Pointer) Result
	memcpyHtoDAsync   func(dst DevPtr, src unsafe.Pointer, bytes uint64, stream uintptr) Result
	memcpyDtoHAsync   func(dst unsafe.Pointer, src DevPtr, bytes uint64, stream uintptr) Result
	memsetD8Async     func(dst DevPtr, v uint8, n uint64, stream uintptr) Result
	memsetD32Async    func(dst DevPtr, v uint32, n uint64, stream uintptr) Result
	moduleLoadDataEx  func(m *uintptr, image unsafe.Pointer, nopts uint32, opts, vals unsafe.Pointer) Result
	moduleUnload      func(m uintptr) Result
	moduleGetFunction func(f *uintptr, m uintptr, name string) Result
	launchKernel      func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params, extra unsafe.Pointer) Result
	streamCreate      func(s *uintptr, flags uint32) Result
	streamDestroy     func(s uintptr) Result
	streamSynchronize func(s uintptr) Result
	streamWaitEvent   func(s, e uintptr, flags uint32) Result
	eventCreate       func(e *uintptr, flags uint32) Result
	eventDestroy      func(e uintptr) Result
	eventRecord       func(e, s uintptr) Result
	eventSynchronize  func(e uintptr) Result
	eventElapsedTime  func(ms *float32, start, end uintptr) Result
	getErrorName      func(r Result, s **byte) Result
	getErrorString    func(r Result, s **byte) Result
}

// driverSymbols pairs each entry point with its exported name.
func (d *driverAPI) symbols() []struct {
	name string
	fn   any
} {
	return []struct {
		name string
		fn   any
	}{
		{"cuInit", &d.init}, {"cuDriverGetVersion", &d.driverGetVersion},
		{"cuDeviceGetCount", &d.deviceGetCount}, {"cuDeviceGet", &d.deviceGet},
		{"cuDeviceGetName", &d.deviceGetName}, {"cuDeviceGetAttribute", &d.deviceGetAttr},
		{"cuDeviceTotalMem_v2", &d.deviceTotalMem},
		{"cuDevicePrimaryCtxRetain", &d.primaryCtxRetain}, {"cuDevicePrimaryCtxRelease_v2", &d.primaryCtxRelease},
		{"cuCtxSetCurrent", &d.ctxSetCurrent}, {"cuCtxSynchronize", &d.ctxSynchronize},
		{"cuMemGetInfo_v2", &d.memGetInfo}, {"cuMemAlloc_v2", &d.memAlloc}, {"cuMemFree_v2", &d.memFree},
		{"cuMemHostAlloc", &d.memHostAlloc}, {"cuMemFreeHost", &d.memFreeHost},
		{"cuMemcpyHtoDAsync_v2", &d.memcpyHtoDAsync}, {"cuMemcpyDtoHAsync_v2", &d.memcpyDtoHAsync},
		{"cuMemsetD8Async", &d.memsetD8Async}, {"cuMemsetD32Async", &d.memsetD32Async},
		{"cuModuleLoadDataEx", &d.moduleLoadDataEx}, {"cuModuleUnload", &d.moduleUnload},
		{"cuModuleGetFunction", &d.moduleGetFunction}, {"cuLaunchKernel", &d.launchKernel},
		{"cuStreamCreate", &d.streamCreate}, {"cuStreamDestroy_v2", &d.streamDestroy},
		{"cuStreamSynchronize", &d.streamSynchronize}, {"cuStreamWaitEvent", &d.streamWaitEvent},
		{"cuEventCreate", &d.eventCreate}, {"cuEventDestroy_v2", &d.eventDestroy},
		{"cuEventRecord", &d.eventRecord}, {"cuEventSynchronize", &d.eventSynchronize},
		{"cuEventElapsedTime", &d.eventElapsedTime},
		{"cuGetErrorName", &d.getErrorName}, {"cuGetErrorString", &d.getErrorString},
	}
}

var (
	driverOnce sync.Once
	driverLib  *driverAPI
	driverErr  error
)

// loadDriver opens the driver library once per process, binds every entry
// point and runs cuInit. Every failure is kept: the error lists each
// candidate that was tried and why it failed.
func loadDriver() (*driverAPI, error) {
	driverOnce.Do(func() {
		driverLib, driverErr = openDriver(driverCandidates(runtime.GOOS, os.Getenv))
		if driverErr != nil {
			return
		}
		if err := driverLib.check("cuInit", driverLib.init(0)); err != nil {
			driverLib, driverErr = nil, err
		}
	})
	return driverLib, driverErr
}

func openDriver(cands []string) (*driverAPI, error) {
	if !dlSupported || len(cands) == 0 {
		return nil, &LoadError{Library: "CUDA driver", Tried: fmt.Errorf("no CUDA driver library on %s/%s", runtime.GOOS, runtime.GOARCH)}
	}
	var errs []error
	for _, p := range cands {
		h, err := dlOpen(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", p, err))
			continue
		}
		d := &driverAPI{path: p}
		if err := bindAll(h, d.symbols()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", p, err))
			continue
		}
		return d, nil
	}
	return nil, &LoadError{Library: "CUDA driver", Tried: errors.Join(errs...)}
}

// bindAll resolves every symbol first (so a missing one is an error, not
// purego's panic) and binds them only when all are present.
func bindAll(h uintptr, syms []struct {
	name string
	fn   any
}) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("binding: %v", v)
		}
	}()
	addrs := make([]uintptr, len(syms))
	var missing []error
	for i, s := range syms {
		a, e := dlSym(h, s.name)
		if e != nil || a == 0 {
			missing = append(missing, fmt.Errorf("missing %s", s.name))
			continue
		}
		addrs[i] = a
	}
	if len(missing) > 0 {
		return errors.Join(missing...)
	}
	for i, s := range syms {
		bindFunc(s.fn, addrs[i])
	}
	return nil
}

// check turns a CUresult into an *Error with the driver's own text.
func (d *driverAPI) check(fn string, r Result) error {
	if r == Success {
		return nil
	}
	e := &Error{Func: fn, Code: r}
	if d != nil && d.getErrorString != nil {
		var s *byte
		if d.getErrorString(r, &s) == Success {
			e.Detail = goString(s)
		}
	}
	return e
}

// goString copies a NUL-terminated C string (at most 4 KiB).
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 4096; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cString is s with a terminating NUL, for char* arguments.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

func cTrim(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
