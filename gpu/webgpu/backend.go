package webgpu

import (
	"context"
	"fmt"
	"sync"

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

// Estimate implements zenmetrics.Backend with the bytes-per-pixel model of
// each metric (ssim2Estimate, EstimateButteraugli). Full-image mode only:
// strips are not implemented yet, so ok is false for them and the
// orchestrator's ladder skips that rung visibly. ok is also false when a
// plane would exceed the storage-binding limit or the total the
// device-local heap (when known).
func (b *Backend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if mode != zenmetrics.ModeFull {
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
	return bytes, true
}

// Prepare implements zenmetrics.Backend.
func (b *Backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	if m != zenmetrics.SSIMULACRA2 && m != zenmetrics.Butteraugli {
		return nil, fmt.Errorf("%w: metric %v on %s", zenmetrics.ErrUnsupported, m, b.Name())
	}
	// Strips are not implemented on the GPU yet: refuse rather than quietly
	// run the full image, so the ladder's memory model stays truthful.
	if opt.Mode != zenmetrics.ModeFull {
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
	s, err := b.prepareSSIM2(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s, nil
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
