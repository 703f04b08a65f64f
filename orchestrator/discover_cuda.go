package orchestrator

import (
	"fmt"
	"os"
	"time"

	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/all"
)

// EnvCUDA set to "off" keeps CUDA devices out of discovery (WebGPU and the
// CPU are still used).
const EnvCUDA = "ZENMETRICS_CUDA"

// cudaCount and cudaOpen find and open CUDA devices; tests replace them
// to check discovery's device selection without a driver.
var (
	cudaCount = func() (int, error) {
		if os.Getenv(EnvCUDA) == "off" {
			return 0, nil
		}
		return cuda.DeviceCount()
	}
	cudaOpen = openCUDASlot
)

// cudaSlots is one GPU slot per CUDA device that keep accepts (nil: every
// device) when the driver loads, none (silently: the normal case without
// an NVIDIA driver) otherwise. The backends are opened here rather than
// lazily: opening costs only the driver's initialisation (the kernels
// compile at the first Prepare), and an open backend's Estimate declines
// the metrics and modes CUDA lacks, so the chooser never sends those
// there. The same GPU usually also has a WebGPU slot; both read the
// device's live free memory, and the chooser picks the one predicted to
// finish first per metric and size: from the profile's cuda_* cells
// against its gpu_* cells (zmwarm benches both), then from what it
// measures (adaptive balancing).
func cudaSlots(keep func(ordinal int) bool) []backendSlot {
	n, err := cudaCount()
	if err != nil || n == 0 {
		return nil
	}
	var out []backendSlot
	for i := 0; i < n; i++ {
		if keep != nil && !keep(i) {
			continue
		}
		if s, err := cudaOpen(i, n); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// openCUDASlot opens CUDA device i of n as a slot (named with #i when
// there are several).
func openCUDASlot(i, n int) (backendSlot, error) {
	t0 := time.Now()
	b, err := cuda.NewBackend(i)
	if err != nil {
		return backendSlot{}, err
	}
	d := b.Device()
	name := b.Name()
	if n > 1 {
		name = fmt.Sprintf("%s#%d", name, i)
	}
	return backendSlot{
		name: name, gpu: true, gpuIndex: -1, backend: b, runtime: capability.RuntimeCUDA,
		free: func() (int64, int64, bool) {
			f, t, err := d.MemInfo()
			return int64(f), int64(t), err == nil
		},
		heapBytes: int64(d.Info().TotalMem),
		initGuess: time.Since(t0),
	}, nil
}
