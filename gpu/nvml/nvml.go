// Package nvml is a minimal binding to NVIDIA's management library, loaded
// at run time (no cgo) with purego: just enough to read the live free VRAM
// of each GPU, its name, PCI bus id and the driver version. The orchestrator
// uses it to refuse work that would not fit before a kernel finds out the
// hard way; without NVML it falls back to the adapter's heap size minus what
// it holds itself.
//
// On a machine without the NVIDIA driver (or on macOS) Open returns an error
// that matches zenmetrics.ErrUnsupported: absence is normal, not a failure.
package nvml

import (
	"errors"
	"fmt"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// ErrNVML is matched by every error that NVML itself returned.
var ErrNVML = errors.New("nvml")

// Error is an NVML return code from a named call.
type Error struct {
	Func string
	Code int32
}

var codeNames = map[int32]string{
	1: "uninitialized", 2: "invalid argument", 3: "not supported", 4: "no permission",
	6: "not found", 7: "insufficient size", 9: "driver not loaded", 12: "library not found",
	13: "function not found", 15: "GPU is lost", 999: "unknown error",
}

func (e *Error) Error() string {
	name := codeNames[e.Code]
	if name == "" {
		name = fmt.Sprintf("code %d", e.Code)
	}
	return fmt.Sprintf("nvml: %s: %s", e.Func, name)
}

// Is matches ErrNVML, zenmetrics.ErrUnsupported for "not supported",
// "driver not loaded", "library/function not found", and
// zenmetrics.ErrDeviceLost for "GPU is lost".
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNVML:
		return true
	case zenmetrics.ErrUnsupported:
		return e.Code == 3 || e.Code == 9 || e.Code == 12 || e.Code == 13
	case zenmetrics.ErrDeviceLost:
		return e.Code == 15
	}
	return false
}

func check(fn string, rc int32) error {
	if rc == 0 {
		return nil
	}
	return &Error{Func: fn, Code: rc}
}

// MemoryInfo is a device's memory in bytes, as NVML reports it now.
type MemoryInfo struct {
	Total, Free, Used uint64
}

// Lib is an initialised NVML. It is safe for concurrent use (NVML is).
type Lib struct {
	mu     sync.Mutex
	closed bool
	fns    *functions
}

// Device is one GPU as NVML numbers it.
type Device struct {
	lib    *Lib
	handle uintptr
	Index  int
}

// Open loads the library and initialises NVML. Close must be called.
func Open() (*Lib, error) {
	fns, err := load()
	if err != nil {
		return nil, err
	}
	if err := check("nvmlInit_v2", fns.init()); err != nil {
		return nil, err
	}
	return &Lib{fns: fns}, nil
}

// Close shuts NVML down (NVML counts Init/Shutdown pairs). Idempotent.
func (l *Lib) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return check("nvmlShutdown", l.fns.shutdown())
}

func (l *Lib) live() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("%w: nvml: library closed", zenmetrics.ErrUnsupported)
	}
	return nil
}

// DeviceCount is the number of NVIDIA GPUs visible to this process.
func (l *Lib) DeviceCount() (int, error) {
	if err := l.live(); err != nil {
		return 0, err
	}
	var n uint32
	if err := check("nvmlDeviceGetCount_v2", l.fns.deviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns GPU i (0-based, NVML order, which follows PCI bus order
// unless CUDA_VISIBLE_DEVICES says otherwise).
func (l *Lib) Device(i int) (*Device, error) {
	if err := l.live(); err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("nvmlDeviceGetHandleByIndex_v2", l.fns.deviceGetHandleByIndex(uint32(i), &h)); err != nil {
		return nil, err
	}
	return &Device{lib: l, handle: h, Index: i}, nil
}

// DriverVersion is the kernel driver's version, e.g. "580.159.04".
func (l *Lib) DriverVersion() (string, error) {
	if err := l.live(); err != nil {
		return "", err
	}
	buf := make([]byte, 96)
	if err := check("nvmlSystemGetDriverVersion", l.fns.systemGetDriverVersion(&buf[0], uint32(len(buf)))); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// Name is the product name, e.g. "NVIDIA H200".
func (d *Device) Name() (string, error) {
	if err := d.lib.live(); err != nil {
		return "", err
	}
	buf := make([]byte, 96)
	if err := check("nvmlDeviceGetName", d.lib.fns.deviceGetName(d.handle, &buf[0], uint32(len(buf)))); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// Memory reads the live memory counters: Free already accounts for every
// process on the GPU, which is why the orchestrator prefers it to its own
// bookkeeping.
func (d *Device) Memory() (MemoryInfo, error) {
	if err := d.lib.live(); err != nil {
		return MemoryInfo{}, err
	}
	var m MemoryInfo
	if err := check("nvmlDeviceGetMemoryInfo", d.lib.fns.deviceGetMemoryInfo(d.handle, &m)); err != nil {
		return MemoryInfo{}, err
	}
	return m, nil
}

// pciInfo mirrors nvmlPciInfo_t (v3 layout): 68 bytes.
type pciInfo struct {
	BusIDLegacy    [16]byte
	Domain         uint32
	Bus            uint32
	Device         uint32
	PciDeviceID    uint32
	PciSubSystemID uint32
	BusID          [32]byte
}

// PCIBusID is the bus id, e.g. "00000000:1B:00.0", used to match an NVML
// device with a WebGPU adapter when several GPUs share a model name. It
// returns an error matching ErrUnsupported on drivers without the call.
func (d *Device) PCIBusID() (string, error) {
	if err := d.lib.live(); err != nil {
		return "", err
	}
	if d.lib.fns.deviceGetPciInfo == nil {
		return "", fmt.Errorf("%w: nvml: nvmlDeviceGetPciInfo_v3 not found", zenmetrics.ErrUnsupported)
	}
	var p pciInfo
	if err := check("nvmlDeviceGetPciInfo_v3", d.lib.fns.deviceGetPciInfo(d.handle, &p)); err != nil {
		return "", err
	}
	return cString(p.BusID[:]), nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// functions are the NVML entry points bound by load.
type functions struct {
	init                   func() int32
	shutdown               func() int32
	deviceGetCount         func(*uint32) int32
	deviceGetHandleByIndex func(uint32, *uintptr) int32
	deviceGetName          func(uintptr, *byte, uint32) int32
	deviceGetMemoryInfo    func(uintptr, *MemoryInfo) int32
	systemGetDriverVersion func(*byte, uint32) int32
	deviceGetPciInfo       func(uintptr, *pciInfo) int32 // optional
}
