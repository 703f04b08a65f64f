package webgpu

import (
	"context"
	"fmt"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// Backend is the WebGPU compute backend: one Device (adapter) and the
// metrics registered with this package (registry.go: SSIMULACRA2 and
// Butteraugli from gpu/webgpu/ssim2 and gpu/webgpu/butteraugli, imported
// through gpu/webgpu/all). It implements zenmetrics.Backend; metrics not
// registered return ErrUnsupported.
type Backend struct {
	dev *Device
	own bool // Close closes dev

	budget atomic.Int64 // SetVRAMBudget bytes (0: none)
}

var _ zenmetrics.Backend = (*Backend)(nil)

// NewBackend opens a device (nil opt: DefaultOptions) and returns a backend
// on it. Close closes the device.
func NewBackend(ctx context.Context, opt *Options) (*Backend, error) {
	dev, err := Open(ctx, opt)
	if err != nil {
		return nil, err
	}
	return &Backend{dev: dev, own: true}, nil
}

// NewBackendOn makes a backend on a device the caller keeps owning (Close
// does not close it).
func NewBackendOn(dev *Device) *Backend { return &Backend{dev: dev} }

// Device is the device the backend runs on.
func (b *Backend) Device() *Device { return b.dev }

// Name is "webgpu:<adapter name>".
func (b *Backend) Name() string { return b.dev.Name() }

// UploadStats is the host-side time and bytes of the image uploads made
// on this backend's device since it was opened (see UploadStats the type
// for exactly what is timed: the writeBuffer call, or the staging buffer's
// map wait, parallel fill and unmap; not the GPU-side copy, which runs in
// the score's command buffer and is part of the score). Callers take the
// difference of two snapshots (UploadStats.Sub) to split a run's score
// time into upload and the rest. The counters belong to the device, so
// backends sharing one (NewBackendOn) see each other's uploads. It does
// not wait for the device thread.
func (b *Backend) UploadStats() UploadStats { return uploads(b.dev).snapshot() }

// ConcurrentScores is how many scores a scheduler should run on this
// backend at once (the orchestrator's workers per GPU): 2. The device
// thread still runs one score's GPU work at a time, but a cached
// SSIMULACRA2 score fills its upload outside it (gpu/webgpu/ssim2, pipe.go), so with
// two callers the next image's upload overlaps this one's GPU work.
func (b *Backend) ConcurrentScores() int { return 2 }

// BackendInfo is what `zmscore --json` reports about a WebGPU backend.
type BackendInfo struct {
	Name            string  `json:"name"`
	Adapter         string  `json:"adapter"`
	Vendor          string  `json:"vendor,omitempty"`
	Architecture    string  `json:"architecture,omitempty"`
	Driver          string  `json:"driver,omitempty"`
	Backend         string  `json:"backend"`
	Type            string  `json:"type"`
	SubgroupSize    uint32  `json:"subgroup_size,omitempty"`
	MaxBindingBytes uint64  `json:"max_storage_binding_bytes"`
	MaxBufferBytes  uint64  `json:"max_buffer_bytes"`
	HeapBytes       uint64  `json:"device_local_heap_bytes,omitempty"`
	InitMS          float64 `json:"init_ms"`
}

// Info describes the adapter and the limits that matter for sizing.
func (b *Backend) Info() BackendInfo {
	ai := b.dev.Info()
	lim := b.dev.Limits()
	bi := BackendInfo{
		Name: b.Name(), Adapter: ai.Name(), Vendor: ai.Vendor, Architecture: ai.Architecture,
		Driver: ai.Description, Backend: ai.Backend.String(), Type: ai.Type.String(),
		SubgroupSize: ai.SubgroupMaxSize, MaxBindingBytes: lim.MaxStorageBufferBindingSize,
		MaxBufferBytes: lim.MaxBufferSize, InitMS: float64(b.dev.InitTime().Microseconds()) / 1000,
	}
	for _, h := range ai.Heaps {
		if h.Properties&wgpu.HeapPropertyDeviceLocal != 0 && h.Size > bi.HeapBytes {
			bi.HeapBytes = h.Size
		}
	}
	return bi
}

// SetVRAMBudget caps the device bytes this backend plans to hold (0: no
// cap beyond the device's own free memory). It overrides
// ZENMETRICS_VRAM_BUDGET_MIB. A full image whose estimate exceeds it is
// refused by Estimate and Prepare (as out of memory), and strips are sized
// to it: the knob that forces strips on a large GPU.
func (b *Backend) SetVRAMBudget(bytes int64) { b.budget.Store(max(0, bytes)) }

// VRAMBudget is the cap in force (SetVRAMBudget, else the environment; 0:
// none).
func (b *Backend) VRAMBudget() int64 {
	if v := b.budget.Load(); v > 0 {
		return v
	}
	return envBudget()
}

// available is the device memory one new task may plan on: the device's
// free memory (NVML, else the heap minus what we hold) plus the free
// buffers of our pool (ours to reuse), and the budget minus what is in use,
// the smaller, times the 0.85 headroom; -1 when nothing is known. "What we
// hold" is the last accounting (the device thread sums it after each
// allocating call), read without waiting for the device.
func (b *Backend) available() int64 {
	st := stats(b.dev)
	held, pool := st.held.Load(), st.pool.Load()
	mi := MemoryInfo{Held: held, Free: -1}
	b.dev.fillFree(&mi)
	free := int64(-1)
	if mi.Free >= 0 {
		free = mi.Free + pool
	}
	if cap := b.VRAMBudget(); cap > 0 {
		if left := max(0, cap-(held-pool)); free < 0 || left < free {
			free = left
		}
	}
	if free < 0 {
		return -1
	}
	return int64(vramHeadroom * float64(free))
}

// Estimate implements zenmetrics.Backend with the metric's own model
// (MetricImpl.Estimate; strips and strip pairs: the plan's prediction at
// the band height chosen now). ok is false when a buffer would exceed the
// storage-binding limit, when the total exceeds the device-local heap
// (when known), or — for full images — the VRAM budget, so the ladder
// moves on to strips.
func (b *Backend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	mi := impl(m)
	if mi == nil || !modeOK(mi, mode) {
		return 0, false
	}
	bytes, ok := mi.Estimate(b, w, h, mode)
	if !ok || mode != zenmetrics.ModeFull {
		return bytes, ok
	}
	if heap := b.Info().HeapBytes; heap > 0 && uint64(bytes) > heap {
		return bytes, false
	}
	if cap := b.VRAMBudget(); cap > 0 && bytes > cap {
		return bytes, false
	}
	return bytes, true
}

// Prepare implements zenmetrics.Backend through the metric's
// MetricImpl.Prepare. ModeStrip prepares the reference in strips,
// ModeStripPair in strip pairs (metrics that implement StripPairer);
// ModeFull
// refuses, as out of memory, an image whose estimate exceeds the VRAM
// budget.
func (b *Backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	// Uploads under this context are the reference's (UploadStats.Ref*),
	// not a score's.
	ctx = withPreparing(ctx)
	mi := impl(m)
	if mi == nil {
		return nil, fmt.Errorf("%w: metric %v on %s", zenmetrics.ErrUnsupported, m, b.Name())
	}
	if !modeOK(mi, opt.Mode) {
		return nil, fmt.Errorf("%w: mode %v for %v on %s", zenmetrics.ErrUnsupported, opt.Mode, m, b.Name())
	}
	return mi.Prepare(ctx, b, ref, opt)
}

// refreshHeld brings the held/pool accounting up to date (it waits for the
// device thread; Estimate reads the last value without waiting).
func (b *Backend) refreshHeld(ctx context.Context) {
	_ = b.dev.Do(ctx, func(g *GPU) error {
		g.noteHeld()
		return nil
	})
}

// Close implements zenmetrics.Backend. References prepared on the backend
// must not be used afterwards.
func (b *Backend) Close() error {
	if b.own {
		return b.dev.Close()
	}
	return nil
}
