package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Device attributes used here (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock = 1
	attrMultiprocessors    = 16
	attrPCIBusID           = 33
	attrPCIDeviceID        = 34
	attrPCIDomainID        = 50
	attrCCMajor            = 75
	attrCCMinor            = 76
)

// Flags (cuda.h).
const (
	streamNonBlocking    = 0x1 // CU_STREAM_NON_BLOCKING
	eventDefault         = 0x0 // CU_EVENT_DEFAULT
	memHostAllocPortable = 0x1 // CU_MEMHOSTALLOC_PORTABLE
)

// DeviceInfo describes one CUDA device.
type DeviceInfo struct {
	Ordinal  int    `json:"ordinal"`
	Name     string `json:"name"`
	Major    int    `json:"cc_major"`
	Minor    int    `json:"cc_minor"`
	SMs      int    `json:"multiprocessors"`
	TotalMem uint64 `json:"total_bytes"`
	FreeMem  uint64 `json:"free_bytes"`
	PCIBusID string `json:"pci_bus_id"`
}

// Arch is the compute capability as NVRTC spells it, e.g. "sm_90".
func (i DeviceInfo) Arch() string { return fmt.Sprintf("sm_%d%d", i.Major, i.Minor) }

// DriverVersion is the driver's CUDA version as an integer (13000 for
// 13.0). It loads the driver library (and returns its load error).
func DriverVersion() (int, error) {
	d, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var v int32
	if err := d.check("cuDriverGetVersion", d.driverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DriverPath is the driver library that was loaded ("" if none).
func DriverPath() string {
	d, err := loadDriver()
	if err != nil {
		return ""
	}
	return d.path
}

// DeviceCount is the number of CUDA devices (0 with an error that matches
// ErrUnsupported when the driver cannot be loaded).
func DeviceCount() (int, error) {
	d, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := d.check("cuDeviceGetCount", d.deviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device is one CUDA device with its primary context retained.
//
// Threads: the CUDA driver API is thread-safe, but a context is "current"
// per OS thread. Every method here runs its driver calls with the
// goroutine locked to its OS thread and the device's context made current
// first (call), so any goroutine may use the device and several workers
// drive their own streams in parallel; nothing is funnelled through one
// thread as WebGPU requires. cuCtxSetCurrent is a thread-local store, far
// cheaper than a hop to a device goroutine.
type Device struct {
	api  *driverAPI
	dev  int32
	ctx  uintptr
	info DeviceInfo
	drv  int

	mu      sync.Mutex
	closed  bool
	modules map[string]*Module

	held atomic.Int64 // bytes of device memory allocated through Alloc and not freed

	cache memCache // freed buffers kept for reuse (pool.go)
	wmu   sync.Mutex
	idle  []*Worker // idle workers kept for reuse
}

// Open retains device ordinal's primary context (shared with any other
// user of the driver API in this process).
func Open(ordinal int) (*Device, error) {
	api, err := loadDriver()
	if err != nil {
		return nil, err
	}
	d := &Device{api: api, modules: map[string]*Module{}}
	d.drv, err = DriverVersion()
	if err != nil {
		return nil, err
	}
	if err := api.check("cuDeviceGet", api.deviceGet(&d.dev, int32(ordinal))); err != nil {
		return nil, err
	}
	if err := d.readInfo(ordinal); err != nil {
		return nil, err
	}
	d.cache.cap = min(int64(d.info.TotalMem)/8, 8<<30)
	if err := api.check("cuDevicePrimaryCtxRetain", api.primaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	if err := d.call(func() error {
		var free, total uint64
		if err := api.check("cuMemGetInfo_v2", api.memGetInfo(&free, &total)); err != nil {
			return err
		}
		d.info.FreeMem = free
		return nil
	}); err != nil {
		api.primaryCtxRelease(d.dev)
		return nil, err
	}
	return d, nil
}

func (d *Device) readInfo(ordinal int) error {
	api := d.api
	name := make([]byte, 256)
	if err := api.check("cuDeviceGetName", api.deviceGetName(&name[0], int32(len(name)), d.dev)); err != nil {
		return err
	}
	attr := func(a int32) (int, error) {
		var v int32
		err := api.check("cuDeviceGetAttribute", api.deviceGetAttr(&v, a, d.dev))
		return int(v), err
	}
	var errs []error
	get := func(a int32) int {
		v, err := attr(a)
		errs = append(errs, err)
		return v
	}
	d.info = DeviceInfo{Ordinal: ordinal, Name: cTrim(name), Major: get(attrCCMajor), Minor: get(attrCCMinor), SMs: get(attrMultiprocessors)}
	dom, bus, dev := get(attrPCIDomainID), get(attrPCIBusID), get(attrPCIDeviceID)
	d.info.PCIBusID = fmt.Sprintf("%08X:%02X:%02X.0", dom, bus, dev)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return api.check("cuDeviceTotalMem_v2", api.deviceTotalMem(&d.info.TotalMem, d.dev))
}

// Info describes the device (FreeMem as of Open; MemInfo for live values).
func (d *Device) Info() DeviceInfo { return d.info }

// Name is "cuda:<device name>".
func (d *Device) Name() string { return "cuda:" + d.info.Name }

// Driver is the driver's CUDA version (13000 for 13.0).
func (d *Device) Driver() int { return d.drv }

// Held is the device memory allocated through this Device and not freed.
func (d *Device) Held() int64 { return d.held.Load() }

// errClosed is returned by every call on a closed device.
var errClosed = fmt.Errorf("%w: cuda: device closed", zenmetrics.ErrDeviceLost)

// call runs fn with this goroutine locked to its OS thread and the
// device's context current on that thread.
func (d *Device) call(fn func() error) (err error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return errClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if v := recover(); v != nil {
			err = &zenmetrics.PanicError{Value: v}
		}
	}()
	if err := d.api.check("cuCtxSetCurrent", d.api.ctxSetCurrent(d.ctx)); err != nil {
		return err
	}
	return fn()
}

// Do runs fn with the device's context current on the calling OS thread,
// for code that calls several Stream/Buffer methods back to back (they
// would each do the same).
func (d *Device) Do(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.call(fn)
}

// MemInfo is the device's free and total memory now, for every process.
func (d *Device) MemInfo() (free, total uint64, err error) {
	err = d.call(func() error {
		return d.api.check("cuMemGetInfo_v2", d.api.memGetInfo(&free, &total))
	})
	return free, total, err
}

// Synchronize waits for all work on the device's context.
func (d *Device) Synchronize() error {
	return d.call(func() error { return d.api.check("cuCtxSynchronize", d.api.ctxSynchronize()) })
}

// Close unloads the modules and releases the primary context. Buffers,
// streams and references made on the device must be freed first.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	mods := d.modules
	d.modules = nil
	d.mu.Unlock()
	d.Trim()
	var errs []error
	_ = d.call(func() error {
		for _, m := range mods {
			errs = append(errs, d.api.check("cuModuleUnload", d.api.moduleUnload(m.h)))
		}
		return nil
	})
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	errs = append(errs, d.api.check("cuDevicePrimaryCtxRelease_v2", d.api.primaryCtxRelease(d.dev)))
	return errors.Join(errs...)
}

// Buffer is device memory.
type Buffer struct {
	Ptr  DevPtr
	Size int64
}

// Alloc allocates size bytes of device memory (rounded up to a bucket,
// pool.go), from the cache when it has a buffer of that size. Out of
// memory, after emptying the cache and trying again, is a
// *zenmetrics.OutOfMemoryError (matching ErrOutOfMemory) with the free
// memory at the time, for the ladder and the logs.
func (d *Device) Alloc(size int64) (*Buffer, error) {
	size = AllocSize(size)
	if p := d.cache.take(size); p != 0 {
		d.held.Add(size)
		return &Buffer{Ptr: p, Size: size}, nil
	}
	b := &Buffer{Size: size}
	err := d.call(func() error {
		r := d.api.memAlloc(&b.Ptr, uint64(size))
		if r == ErrorOutOfMemory {
			for _, p := range d.cache.drain() {
				d.api.memFree(p)
			}
			r = d.api.memAlloc(&b.Ptr, uint64(size))
		}
		if r == ErrorOutOfMemory {
			free := int64(-1)
			var f, t uint64
			if d.api.memGetInfo(&f, &t) == Success {
				free = int64(f)
			}
			return &zenmetrics.OutOfMemoryError{Backend: d.Name(), Requested: size, Free: free,
				Detail: (&Error{Func: "cuMemAlloc_v2", Code: r}).Error()}
		}
		return d.api.check("cuMemAlloc_v2", r)
	})
	if err != nil {
		return nil, err
	}
	d.held.Add(size)
	return b, nil
}

// Free gives buffers back (nil entries are skipped): to the cache while it
// has room, else to the driver (cuMemFree waits for work that uses them).
// A cached buffer may be handed out again at once: callers free a buffer
// only once the work that uses it is done or queued on the same stream
// as its next user.
func (d *Device) Free(bufs ...*Buffer) {
	var drop []*Buffer
	for _, b := range bufs {
		if b == nil || b.Ptr == 0 {
			continue
		}
		d.held.Add(-b.Size)
		if !d.cache.put(b.Ptr, b.Size) {
			drop = append(drop, &Buffer{Ptr: b.Ptr, Size: b.Size})
		}
		b.Ptr = 0
	}
	if len(drop) == 0 {
		return
	}
	_ = d.call(func() error {
		for _, b := range drop {
			d.api.memFree(b.Ptr)
		}
		return nil
	})
}

// HostBuffer is page-locked host memory: the DMA engines read it directly,
// which is what makes uploads run at PCIe speed instead of going through
// the driver's own staging copy.
type HostBuffer struct {
	p     unsafe.Pointer
	Bytes []byte
}

// HostAlloc allocates size bytes of page-locked host memory.
func (d *Device) HostAlloc(size int64) (*HostBuffer, error) {
	if size <= 0 {
		size = 8
	}
	h := &HostBuffer{}
	err := d.call(func() error {
		r := d.api.memHostAlloc(&h.p, uint64(size), memHostAllocPortable)
		if r == ErrorOutOfMemory {
			return &zenmetrics.OutOfMemoryError{Backend: d.Name() + " (page-locked host memory)", Requested: size, Free: -1}
		}
		return d.api.check("cuMemHostAlloc", r)
	})
	if err != nil {
		return nil, err
	}
	h.Bytes = unsafe.Slice((*byte)(h.p), size)
	return h, nil
}

// FreeHost releases page-locked buffers (nil entries are skipped).
func (d *Device) FreeHost(hs ...*HostBuffer) {
	_ = d.call(func() error {
		for _, h := range hs {
			if h != nil && h.p != nil {
				d.api.memFreeHost(h.p)
				h.p, h.Bytes = nil, nil
			}
		}
		return nil
	})
}

// Stream is a CUDA stream: work on one stream runs in order, streams run
// side by side. Each scoring worker has its own.
type Stream struct {
	d *Device
	h uintptr
}

// NewStream creates a non-blocking stream (no implicit synchronisation
// with the legacy default stream).
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{d: d}
	err := d.call(func() error { return d.api.check("cuStreamCreate", d.api.streamCreate(&s.h, streamNonBlocking)) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Destroy releases the stream (work already queued still completes).
func (s *Stream) Destroy() {
	if s == nil || s.h == 0 {
		return
	}
	_ = s.d.call(func() error { s.d.api.streamDestroy(s.h); return nil })
	s.h = 0
}

// Sync waits for everything queued on the stream.
func (s *Stream) Sync() error {
	return s.d.call(func() error { return s.d.api.check("cuStreamSynchronize", s.d.api.streamSynchronize(s.h)) })
}

// Upload queues a copy of n bytes from src.Bytes[srcOff:] to dst at
// dstOff. src must stay untouched until the stream passes this point.
func (s *Stream) Upload(dst *Buffer, dstOff int64, src *HostBuffer, srcOff, n int64) error {
	if n <= 0 {
		return nil
	}
	if dstOff < 0 || srcOff < 0 || dstOff+n > dst.Size || srcOff+n > int64(len(src.Bytes)) {
		return fmt.Errorf("%w: cuda: upload of %d bytes out of range", zenmetrics.ErrBadInput, n)
	}
	return s.d.call(func() error {
		return s.d.api.check("cuMemcpyHtoDAsync_v2", s.d.api.memcpyHtoDAsync(dst.Ptr+DevPtr(dstOff), unsafe.Add(src.p, srcOff), uint64(n), s.h))
	})
}

// Download queues a copy of n bytes from src at srcOff into
// dst.Bytes[dstOff:]; the bytes are there after Sync.
func (s *Stream) Download(dst *HostBuffer, dstOff int64, src *Buffer, srcOff, n int64) error {
	if n <= 0 {
		return nil
	}
	if dstOff < 0 || srcOff < 0 || srcOff+n > src.Size || dstOff+n > int64(len(dst.Bytes)) {
		return fmt.Errorf("%w: cuda: download of %d bytes out of range", zenmetrics.ErrBadInput, n)
	}
	return s.d.call(func() error {
		return s.d.api.check("cuMemcpyDtoHAsync_v2", s.d.api.memcpyDtoHAsync(unsafe.Add(dst.p, dstOff), src.Ptr+DevPtr(srcOff), uint64(n), s.h))
	})
}

// Zero queues setting n bytes of dst at off to zero.
func (s *Stream) Zero(dst *Buffer, off, n int64) error {
	if off < 0 || off+n > dst.Size {
		return fmt.Errorf("%w: cuda: memset out of range", zenmetrics.ErrBadInput)
	}
	return s.d.call(func() error {
		return s.d.api.check("cuMemsetD8Async", s.d.api.memsetD8Async(dst.Ptr+DevPtr(off), 0, uint64(n), s.h))
	})
}

// Fill32 queues setting n 32-bit words of dst at byte offset off to v.
func (s *Stream) Fill32(dst *Buffer, off int64, v uint32, n int64) error {
	if off < 0 || off%4 != 0 || off+4*n > dst.Size {
		return fmt.Errorf("%w: cuda: memset out of range", zenmetrics.ErrBadInput)
	}
	return s.d.call(func() error {
		return s.d.api.check("cuMemsetD32Async", s.d.api.memsetD32Async(dst.Ptr+DevPtr(off), v, uint64(n), s.h))
	})
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// Groups is the number of blocks of size b covering n items.
func Groups(n, b int) uint32 { return uint32((n + b - 1) / b) }

// Launch queues kernel f. Arguments are *Buffer or DevPtr (pointers),
// int / int32 / uint32 (C int or unsigned), float32 (float), float64
// (double) or uint64/int64 (64-bit integers), in the kernel's order.
func (s *Stream) Launch(f *Function, grid, block Dim3, shared uint32, args ...any) error {
	n := len(args)
	// One allocation: the argument values, then the pointers to them that
	// cuLaunchKernel reads (kernelParams). It escapes to the heap (it is
	// passed to a C function), where Go never moves memory.
	buf := make([]uint64, 2*n+1)
	for i, a := range args {
		switch v := a.(type) {
		case *Buffer:
			if v != nil {
				buf[i] = uint64(v.Ptr)
			}
		case DevPtr:
			buf[i] = uint64(v)
		case int:
			if v < math.MinInt32 || v > math.MaxInt32 {
				return fmt.Errorf("%w: cuda: kernel %s argument %d: %d overflows a C int", zenmetrics.ErrBadInput, f.name, i, v)
			}
			buf[i] = uint64(uint32(int32(v)))
		case int32:
			buf[i] = uint64(uint32(v))
		case uint32:
			buf[i] = uint64(v)
		case float32:
			buf[i] = uint64(math.Float32bits(v))
		case float64:
			buf[i] = math.Float64bits(v)
		case int64:
			buf[i] = uint64(v)
		case uint64:
			buf[i] = v
		default:
			return fmt.Errorf("%w: cuda: kernel %s argument %d has type %T", zenmetrics.ErrBadInput, f.name, i, a)
		}
		buf[n+i] = uint64(uintptr(unsafe.Pointer(&buf[i])))
	}
	err := s.d.call(func() error {
		return s.d.api.check("cuLaunchKernel "+f.name, s.d.api.launchKernel(f.h, grid.X, max(grid.Y, 1), max(grid.Z, 1),
			block.X, max(block.Y, 1), max(block.Z, 1), shared, s.h, unsafe.Pointer(&buf[n]), nil))
	})
	runtime.KeepAlive(buf)
	return err
}

// Event marks a point in a stream, for timing and cross-stream waits.
type Event struct {
	d *Device
	h uintptr
}

// NewEvent creates an event that records time.
func (d *Device) NewEvent() (*Event, error) {
	e := &Event{d: d}
	err := d.call(func() error { return d.api.check("cuEventCreate", d.api.eventCreate(&e.h, eventDefault)) })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record queues the event on s.
func (e *Event) Record(s *Stream) error {
	return e.d.call(func() error { return e.d.api.check("cuEventRecord", e.d.api.eventRecord(e.h, s.h)) })
}

// Sync waits for the event.
func (e *Event) Sync() error {
	return e.d.call(func() error { return e.d.api.check("cuEventSynchronize", e.d.api.eventSynchronize(e.h)) })
}

// Wait makes s wait for the event before its later work.
func (s *Stream) Wait(e *Event) error {
	return s.d.call(func() error { return s.d.api.check("cuStreamWaitEvent", s.d.api.streamWaitEvent(s.h, e.h, 0)) })
}

// Elapsed is the GPU time in milliseconds between two recorded events.
func Elapsed(start, end *Event) (float32, error) {
	var ms float32
	err := start.d.call(func() error {
		return start.d.api.check("cuEventElapsedTime", start.d.api.eventElapsedTime(&ms, start.h, end.h))
	})
	return ms, err
}

// Destroy releases the event.
func (e *Event) Destroy() {
	if e == nil || e.h == 0 {
		return
	}
	_ = e.d.call(func() error { e.d.api.eventDestroy(e.h); return nil })
	e.h = 0
}

// Probe lists every CUDA device with its live free memory, for zmprobe and
// discovery. The error is the driver's load error when there is none.
func Probe() ([]DeviceInfo, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	var out []DeviceInfo
	var errs []error
	for i := 0; i < n; i++ {
		d, err := Open(i)
		if err != nil {
			errs = append(errs, fmt.Errorf("device %d: %w", i, err))
			continue
		}
		out = append(out, d.Info())
		errs = append(errs, d.Close())
	}
	return out, errors.Join(errs...)
}
