package webgpu

import (
	"context"
	"fmt"
	"runtime"
	"sort"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// AdapterInfo describes one adapter as the runtime reports it.
type AdapterInfo struct {
	Index           int // position in the Adapters list (best first)
	Vendor          string
	Architecture    string
	Device          string
	Description     string // driver description
	Backend         wgpu.BackendType
	Type            wgpu.AdapterType
	VendorID        uint32
	DeviceID        uint32
	SubgroupMinSize uint32
	SubgroupMaxSize uint32
	Limits          wgpu.Limits
	Features        []wgpu.FeatureName
	Heaps           []wgpu.MemoryHeapInfo // empty without AdapterPropertiesMemoryHeaps
}

// Name is a human-readable adapter name ("llvmpipe (LLVM 15.0.6, 256 bits)").
func (a *AdapterInfo) Name() string {
	if a.Device != "" {
		return a.Device
	}
	if a.Description != "" {
		return a.Description
	}
	return fmt.Sprintf("%s %04x:%04x", a.Vendor, a.VendorID, a.DeviceID)
}

// HasFeature reports whether the adapter advertises f.
func (a *AdapterInfo) HasFeature(f wgpu.FeatureName) bool {
	for _, x := range a.Features {
		if x == f {
			return true
		}
	}
	return false
}

// Options choose the adapter and device. The zero value is not the default:
// use nil or DefaultOptions().
type Options struct {
	// PreferIndex picks an adapter from the Adapters list, which is ordered
	// best first (discrete, integrated, other, CPU). 0 is the best one.
	PreferIndex int
	// AllowCPUAdapter admits software adapters (Mesa lavapipe, type CPU).
	// DefaultOptions allows them; Dawn's Null backend is always refused.
	AllowCPUAdapter bool
	// Label names the device in Dawn's messages.
	Label string
}

// DefaultOptions returns the options Open uses for nil: best adapter, CPU
// adapters allowed.
func DefaultOptions() *Options { return &Options{PreferIndex: 0, AllowCPUAdapter: true} }

type adapterRequest struct {
	backend wgpu.BackendType
	power   wgpu.PowerPreference
}

// requests lists the adapter requests that enumerate what this OS offers.
// webgpu.h has no enumeration call, so each backend/power preference is
// asked for and the answers are de-duplicated.
func requests() []adapterRequest {
	var r []adapterRequest
	switch runtime.GOOS {
	case "darwin":
		r = []adapterRequest{{wgpu.BackendMetal, wgpu.PowerPreferenceHighPerformance}, {wgpu.BackendMetal, wgpu.PowerPreferenceLowPower}}
	case "windows":
		r = []adapterRequest{{wgpu.BackendD3D12, wgpu.PowerPreferenceHighPerformance}, {wgpu.BackendD3D12, wgpu.PowerPreferenceLowPower},
			{wgpu.BackendVulkan, wgpu.PowerPreferenceHighPerformance}}
	default:
		r = []adapterRequest{{wgpu.BackendVulkan, wgpu.PowerPreferenceHighPerformance}, {wgpu.BackendVulkan, wgpu.PowerPreferenceLowPower}}
	}
	return append(r, adapterRequest{wgpu.BackendUndefined, wgpu.PowerPreferenceUndefined})
}

type candidate struct {
	handle wgpu.Adapter
	info   AdapterInfo
}

// enumerate runs on a locked thread with a live instance. The caller owns
// (releases) the returned handles.
func enumerate(inst wgpu.Instance, allowCPU bool) (cands []candidate, refused []string, err error) {
	seen := map[string]bool{}
	for _, rq := range requests() {
		opts := &wgpu.RequestAdapterOptions{
			FeatureLevel:         wgpu.FeatureLevelCore,
			PowerPreference:      rq.power,
			ForceFallbackAdapter: wgpu.False,
			BackendType:          rq.backend,
		}
		var (
			status  wgpu.RequestAdapterStatus
			adapter wgpu.Adapter
			msg     string
		)
		f := inst.RequestAdapter(opts, wgpu.CallbackModeWaitAnyOnly, func(s wgpu.RequestAdapterStatus, a wgpu.Adapter, m string) {
			status, adapter, msg = s, a, m
		})
		if err := waitFuture(inst, f, "requestAdapter"); err != nil {
			return cands, refused, err
		}
		if status != wgpu.RequestAdapterStatusSuccess || adapter == 0 {
			if m := fmt.Sprintf("%s adapter unavailable: %s (%s)", rq.backend, msg, status); rq.backend != wgpu.BackendUndefined && msg != "" && !seen[m] {
				seen[m] = true
				refused = append(refused, m)
			}
			continue
		}
		info, ok := adapterInfo(adapter)
		if !ok {
			adapter.Release()
			continue
		}
		key := fmt.Sprintf("%d|%x|%x|%s|%s", info.Backend, info.VendorID, info.DeviceID, info.Device, info.Description)
		if seen[key] {
			adapter.Release()
			continue
		}
		seen[key] = true
		switch {
		case info.Backend == wgpu.BackendNull:
			refused = append(refused, fmt.Sprintf("%q: Dawn's Null backend computes nothing (zeros); refused "+
				"(no working Vulkan/Metal/D3D12 driver? on CPU-only Linux install Mesa >= 25 lavapipe)", info.Name()))
			adapter.Release()
			continue
		case info.Type == wgpu.AdapterTypeCPU && !allowCPU:
			refused = append(refused, fmt.Sprintf("%q: CPU adapter refused by options", info.Name()))
			adapter.Release()
			continue
		}
		cands = append(cands, candidate{handle: adapter, info: info})
	}
	rank := func(t wgpu.AdapterType) int {
		switch t {
		case wgpu.AdapterTypeDiscreteGPU:
			return 0
		case wgpu.AdapterTypeIntegratedGPU:
			return 1
		case wgpu.AdapterTypeCPU:
			return 3
		}
		return 2
	}
	sort.SliceStable(cands, func(i, j int) bool { return rank(cands[i].info.Type) < rank(cands[j].info.Type) })
	for i := range cands {
		cands[i].info.Index = i
	}
	return cands, refused, nil
}

func adapterInfo(a wgpu.Adapter) (AdapterInfo, bool) {
	var out AdapterInfo
	info := &wgpu.AdapterInfo{}
	var heaps *wgpu.AdapterPropertiesMemoryHeaps
	if a.HasFeature(wgpu.FeatureAdapterPropertiesMemoryHeaps) {
		heaps = &wgpu.AdapterPropertiesMemoryHeaps{Chain: wgpu.ChainedStruct{SType: wgpu.STypeAdapterPropertiesMemoryHeaps}}
		info.NextInChain = &heaps.Chain
	}
	if a.GetInfo(info) != wgpu.StatusSuccess {
		return out, false
	}
	out = AdapterInfo{
		Vendor: info.Vendor.String(), Architecture: info.Architecture.String(), Device: info.Device.String(),
		Description: info.Description.String(), Backend: info.BackendType, Type: info.AdapterType,
		VendorID: info.VendorID, DeviceID: info.DeviceID,
		SubgroupMinSize: info.SubgroupMinSize, SubgroupMaxSize: info.SubgroupMaxSize,
	}
	if heaps != nil {
		out.Heaps = heaps.Heaps()
		heaps.FreeMembers()
	}
	info.NextInChain = nil
	info.FreeMembers()
	runtime.KeepAlive(heaps)
	a.GetLimits(&out.Limits)
	out.Limits.NextInChain = nil
	var sf wgpu.SupportedFeatures
	a.GetFeatures(&sf)
	out.Features = sf.List()
	sf.FreeMembers()
	sort.Slice(out.Features, func(i, j int) bool { return out.Features[i] < out.Features[j] })
	return out, true
}

// Adapters lists the usable adapters, best first (Null refused, CPU
// adapters included). It loads the library and creates a short-lived
// instance on a locked OS thread.
func Adapters(ctx context.Context) ([]AdapterInfo, error) {
	list, refused, err := Enumerate(ctx, DefaultOptions())
	if err == nil && len(list) == 0 {
		err = &NoAdapterError{Refused: refused}
	}
	return list, err
}

// Enumerate is Adapters with options, also returning what was refused and
// why (for reports). A nil error with an empty list means none usable.
func Enumerate(ctx context.Context, opts *Options) ([]AdapterInfo, []string, error) {
	if opts == nil {
		opts = DefaultOptions()
	}
	if err := wgpu.Load(); err != nil {
		return nil, nil, err
	}
	type result struct {
		list    []AdapterInfo
		refused []string
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		inst := newInstance()
		if inst == 0 {
			ch <- result{err: fmt.Errorf("webgpu: wgpuCreateInstance returned NULL")}
			return
		}
		cands, refused, err := enumerate(inst, opts.AllowCPUAdapter)
		var list []AdapterInfo
		for _, c := range cands {
			list = append(list, c.info)
			c.handle.Release()
		}
		inst.ProcessEvents()
		inst.Release()
		ch <- result{list, refused, err}
	}()
	select {
	case r := <-ch:
		return r.list, r.refused, r.err
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func newInstance() wgpu.Instance {
	return wgpu.CreateInstance(&wgpu.InstanceDescriptor{
		Capabilities: wgpu.InstanceCapabilities{TimedWaitAnyEnable: wgpu.True},
	})
}
