package orchestrator

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/nvml"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
)

// backendSlot is what discovery hands the orchestrator for one backend.
type backendSlot struct {
	name string
	gpu  bool
	// runtime is a GPU slot's API (WebGPU, CUDA): with the rung it picks
	// the profile class (classes.go). "": WebGPU.
	runtime capability.Runtime
	// gpuIndex is the adapter's index in capability.Report.GPUs (-1: CPU).
	gpuIndex int
	// backend is the ready backend; nil means open it lazily with open on
	// the first task that needs it (a GPU's device creation costs
	// hundreds of ms that a CPU-only run should not pay).
	backend zenmetrics.Backend
	open    func(ctx context.Context) (zenmetrics.Backend, error)
	// free reads live free/total device memory (NVML); nil: none.
	free func() (free, total int64, ok bool)
	// heapBytes is the device memory when there is no live reading.
	heapBytes int64
	// initGuess is the expected open time when the profile has none.
	initGuess time.Duration
	// nsScale multiplies the profile's ns/px for this slot (0: 1). The
	// profile measures one GPU per runtime's class, so discovery leaves it at 1;
	// tests give fake slots different speeds with it.
	nsScale float64
}

// discoverBackends is the one place that knows which backends exist: the
// CPU backend always, one slot per WebGPU adapter and one per CUDA device.
// Nothing else in the orchestrator names a concrete backend.
func discoverBackends(ctx context.Context, cfg Config, rep *capability.Report) ([]backendSlot, error) {
	_, threads := cpuPool(cfg)
	slots := []backendSlot{{name: "cpu", gpuIndex: -1, backend: cpu.New(cpu.Config{Threads: threads})}}
	if cfg.DisableGPU {
		return slots, nil
	}
	// One slot per probed WebGPU adapter, opened lazily on its first task
	// (or by Warm). Software adapters (lavapipe) are left out: the CPU
	// backend is the better use of those cores. The probe lists adapters
	// in webgpu.Enumerate's order, which is what PreferIndex selects.
	// CPU adapters sort last there, so leaving them out shifts no index.
	for i, g := range rep.GPUs {
		if strings.EqualFold(g.AdapterType, "CPU") || (cfg.GPUs != nil && !slices.Contains(cfg.GPUs, i)) {
			continue
		}
		opt := &webgpu.Options{PreferIndex: i, AllowCPUAdapter: false, Label: "zenmetrics orchestrator"}
		slots = append(slots, backendSlot{
			name: "webgpu:" + g.Name, gpu: true, gpuIndex: i, runtime: capability.RuntimeWebGPU,
			open: func(ctx context.Context) (zenmetrics.Backend, error) {
				return webgpu.NewBackend(ctx, opt)
			},
			free:      nvmlFree(i, rep.GPUs),
			heapBytes: g.VRAMMiB << 20,
			initGuess: time.Duration(g.InitMs * float64(time.Millisecond)),
		})
	}
	// CUDA devices, when the NVIDIA driver loads (discover_cuda.go), by
	// the same ordinals: on an NVIDIA machine WebGPU adapter i and CUDA
	// device i are both the i-th GPU in PCI order. Dawn's C API hands out
	// one adapter per kind (wgpuInstanceRequestAdapter; it has no
	// enumeration), so a host with several equal GPUs has one WebGPU
	// adapter and a CUDA device for each GPU: an ordinal is valid when
	// either runtime has it.
	keep := func(i int) bool { return cfg.GPUs == nil || slices.Contains(cfg.GPUs, i) }
	nCUDA := 0
	if len(cfg.GPUs) > 0 {
		nCUDA, _ = cudaCount()
	}
	for _, i := range cfg.GPUs {
		hw := i >= 0 && i < len(rep.GPUs) && !strings.EqualFold(rep.GPUs[i].AdapterType, "CPU")
		if !hw && !(i >= 0 && i < nCUDA) {
			return nil, fmt.Errorf("GPU %d: no such hardware adapter or CUDA device (the probe lists %d adapters and %d CUDA devices; zmprobe shows them): %w",
				i, len(rep.GPUs), nCUDA, zenmetrics.ErrBadInput)
		}
	}
	slots = append(slots, cudaSlots(keep)...)
	return slots, nil
}

// cpuPool is the CPU workers and the threads each of their tasks may use.
func cpuPool(cfg Config) (workers, threads int) {
	workers = cfg.Pool.MaxParallelCPU
	if workers <= 0 {
		workers = cfg.MaxParallelCPU
	}
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	threads = cfg.CPUThreads
	if threads <= 0 {
		// Keep workers × threads ≈ cores: a batch is fastest with one
		// thread per task, a single worker should use the whole machine.
		threads = max(1, runtime.NumCPU()/workers)
	}
	return workers, threads
}

// nvmlState opens NVML once per process for every GPU slot.
var nvmlState struct {
	once sync.Once
	lib  *nvml.Lib
	devs []*nvml.Device
	name []string
}

// nvmlFree returns the live-memory reader of the NVIDIA device matching
// the probed adapter (by name, taking the n-th of equal names for the n-th
// such adapter), or nil when NVML is absent or nothing matches: the chooser
// then uses the heap size minus what we hold.
func nvmlFree(index int, gpus []capability.GPUInfo) func() (int64, int64, bool) {
	nvmlState.once.Do(func() {
		lib, err := nvml.Open()
		if err != nil {
			return
		}
		n, err := lib.DeviceCount()
		if err != nil {
			lib.Close()
			return
		}
		nvmlState.lib = lib
		for i := range n {
			d, err := lib.Device(i)
			if err != nil {
				continue
			}
			name, _ := d.Name()
			nvmlState.devs = append(nvmlState.devs, d)
			nvmlState.name = append(nvmlState.name, name)
		}
	})
	if nvmlState.lib == nil || index < 0 || index >= len(gpus) {
		return nil
	}
	// The n-th adapter with this name is the n-th NVML device with it.
	nth := 0
	for i := range index {
		if gpus[i].Name == gpus[index].Name {
			nth++
		}
	}
	for i, name := range nvmlState.name {
		if name != gpus[index].Name {
			continue
		}
		if nth > 0 {
			nth--
			continue
		}
		d := nvmlState.devs[i]
		return func() (int64, int64, bool) {
			mi, err := d.Memory()
			if err != nil {
				return 0, 0, false
			}
			return int64(mi.Free), int64(mi.Total), true
		}
	}
	return nil
}
