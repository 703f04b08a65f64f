package webgpu

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// Backend is the WebGPU compute backend: one Device (adapter) and the
// metric kernels compiled on it. It implements zenmetrics.Backend; today it
// scores SSIMULACRA2 and Butteraugli; other metrics return ErrUnsupported.
type Backend struct {
	dev *Device
	own bool // Close closes dev

	mu    sync.Mutex // guards ssim2 (written on the device thread)
	ssim2 *ssim2Kernels

	budget atomic.Int64 // SetVRAMBudget bytes (0: none)
	// bfKeep and ssim2Keep force the strip reference strategy of
	// Butteraugli and SSIMULACRA2 (tests, benchmarks): nil lets the plan
	// choose.
	bfKeep, ssim2Keep *bool
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
// SSIMULACRA2 score fills its upload outside it (ssim2_pipe.go), so with
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

// Estimate implements zenmetrics.Backend with the bytes-per-pixel model of
// each metric (ssim2Estimate, EstimateButteraugli; strips: the strip plan's
// prediction at the band height chosen now). ok is false when a buffer
// would exceed the storage-binding limit, when the total exceeds the
// device-local heap (when known), or — for full images — the VRAM budget,
// so the ladder moves on to strips.
func (b *Backend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	switch mode {
	case zenmetrics.ModeFull:
	case zenmetrics.ModeStrip:
		return b.estimateStrip(m, w, h)
	default:
		return 0, false
	}
	var bytes int64
	lim := b.dev.Limits()
	switch m {
	case zenmetrics.SSIMULACRA2:
		if w < ssim2MinSide || h < ssim2MinSide {
			return 0, false
		}
		// Worst case: RGBA16 with alpha (two passes).
		bytes = ssim2Estimate(w, h, 2, w*h*8)
		if uint64(w)*uint64(h)*4 > lim.MaxStorageBufferBindingSize || uint64(w)*uint64(h)*8 > lim.MaxBufferSize {
			return bytes, false
		}
	case zenmetrics.Butteraugli:
		// Worst case: RGBA16 with alpha; the raw upload is the largest binding.
		bytes = EstimateButteraugli(w, h)
		if uint64(w)*uint64(h)*8 > lim.MaxStorageBufferBindingSize {
			return bytes, false
		}
	default:
		return 0, false
	}
	if heap := b.Info().HeapBytes; heap > 0 && uint64(bytes) > heap {
		return bytes, false
	}
	if cap := b.VRAMBudget(); cap > 0 && bytes > cap {
		return bytes, false
	}
	return bytes, true
}

// estimateStrip is Estimate for ModeStrip (worst case: 16-bit RGBA).
func (b *Backend) estimateStrip(m zenmetrics.Metric, w, h int) (int64, bool) {
	switch m {
	case zenmetrics.Butteraugli:
		if w < bfMinSize || h < bfMinSize {
			return 0, false
		}
		p, err := planButteraugliStrips(w, h, 2, 8, b.available(), b.dev.Limits().MaxStorageBufferBindingSize, 0)
		if err != nil {
			return 0, false
		}
		return p.bytes, true
	case zenmetrics.SSIMULACRA2:
		if w < ssim2MinSide || h < ssim2MinSide {
			return 0, false
		}
		p, err := planSSIM2Strips(w, h, 2, 8, b.available(), b.dev.Limits().MaxStorageBufferBindingSize, 0)
		if err != nil {
			return 0, false
		}
		return p.bytes, true
	}
	return 0, false
}

// Prepare implements zenmetrics.Backend. ModeStrip prepares the reference
// in strips (Butteraugli, SSIMULACRA2); ModeFull
// refuses, as out of memory, an image whose estimate exceeds the VRAM
// budget.
func (b *Backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	// Uploads under this context are the reference's (UploadStats.Ref*),
	// not a score's.
	ctx = withPreparing(ctx)
	if m != zenmetrics.SSIMULACRA2 && m != zenmetrics.Butteraugli {
		return nil, fmt.Errorf("%w: metric %v on %s", zenmetrics.ErrUnsupported, m, b.Name())
	}
	switch opt.Mode {
	case zenmetrics.ModeFull:
		if err := b.checkBudget(m, ref); err != nil {
			return nil, err
		}
	case zenmetrics.ModeStrip:
		return b.prepareStrip(ctx, m, ref, opt)
	default:
		return nil, fmt.Errorf("%w: mode %v for %v on %s", zenmetrics.ErrUnsupported, opt.Mode, m, b.Name())
	}
	if m == zenmetrics.Butteraugli {
		br, err := prepareButteraugli(ctx, b.dev, ref, opt)
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return br, nil
	}
	if opt.DistMap {
		return nil, fmt.Errorf("%w: distance map for %v on %s", zenmetrics.ErrUnsupported, m, b.Name())
	}
	if err := ssim2Check(ref); err != nil {
		return nil, err
	}
	if uint64(ref.Width)*uint64(ref.Height)*4 > b.dev.Limits().MaxStorageBufferBindingSize {
		return nil, &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: int64(ref.Width) * int64(ref.Height) * 4,
			Free: -1, Detail: "a plane exceeds maxStorageBufferBindingSize"}
	}
	s, err := b.prepareSSIM2(ctx, ref, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// refreshHeld brings the held/pool accounting up to date (it waits for the
// device thread; Estimate reads the last value without waiting).
func (b *Backend) refreshHeld(ctx context.Context) {
	_ = b.dev.Do(ctx, func(g *GPU) error {
		g.noteHeld()
		return nil
	})
}

// checkBudget refuses a full image whose estimate exceeds the VRAM budget.
func (b *Backend) checkBudget(m zenmetrics.Metric, ref *zenmetrics.Image) error {
	cap := b.VRAMBudget()
	if cap <= 0 || ref == nil || ref.Width <= 0 || ref.Height <= 0 {
		return nil
	}
	var need int64
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	switch m {
	case zenmetrics.Butteraugli:
		need = bfEstimate(ref.Width, ref.Height, variants, int64(ref.Width)*int64(ref.Height)*int64(ref.Format.BytesPerPixel()))
	case zenmetrics.SSIMULACRA2:
		need = ssim2Estimate(ref.Width, ref.Height, variants, ref.Width*ref.Height*ref.Format.BytesPerPixel())
	}
	if need > cap {
		return &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: need, Free: cap,
			Detail: fmt.Sprintf("above the VRAM budget of %d MiB (%s or SetVRAMBudget)", cap>>20, EnvVRAMBudget)}
	}
	return nil
}

// prepareStrip prepares ref in strips.
func (b *Backend) prepareStrip(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	switch m {
	case zenmetrics.Butteraugli:
		if err := ref.Validate(); err != nil {
			return nil, err
		}
		if ref.Width < bfMinSize || ref.Height < bfMinSize {
			// Nothing is computed below 8 px: the full path's zero map.
			opt.Mode = zenmetrics.ModeFull
			return prepareButteraugli(ctx, b.dev, ref, opt)
		}
		b.refreshHeld(ctx)
		s, err := prepareButteraugliStrips(ctx, b.dev, ref, opt, b.available(), b.bfKeep)
		if err != nil {
			return nil, err
		}
		return s, nil
	case zenmetrics.SSIMULACRA2:
		if err := ssim2Check(ref); err != nil {
			return nil, err
		}
		b.refreshHeld(ctx)
		s, err := b.prepareSSIM2Strips(ctx, ref, opt, b.available(), b.ssim2Keep)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: mode %v for %v on %s", zenmetrics.ErrUnsupported, opt.Mode, m, b.Name())
}

// kernels compiles the SSIMULACRA2 pipelines once (device thread only).
func (b *Backend) kernels(g *GPU) (*ssim2Kernels, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ssim2 != nil {
		return b.ssim2, nil
	}
	k, err := compileSSIM2(g)
	if err != nil {
		return nil, err
	}
	b.ssim2 = k
	return k, nil
}

// Close implements zenmetrics.Backend. References prepared on the backend
// must not be used afterwards.
func (b *Backend) Close() error {
	if b.own {
		return b.dev.Close()
	}
	return nil
}
