package orchestrator

import (
	"fmt"
	"os"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/all"
)

// EnvCUDA set to "off" keeps CUDA devices out of discovery (WebGPU and the
// CPU are still used).
const EnvCUDA = "ZENMETRICS_CUDA"

// cudaSlots is one GPU slot per CUDA device when the driver loads, none
// (silently: the normal case without an NVIDIA driver) otherwise. The
// backends are opened here rather than lazily: opening costs only the
// driver's initialisation (the kernels compile at the first Prepare), and
// an open backend's Estimate declines the metrics and modes CUDA lacks, so
// the chooser never sends those there. The same GPU usually also has a
// WebGPU slot; both read the device's live free memory, and the chooser
// (adaptive balancing) learns which is faster per metric and size.
func cudaSlots() []backendSlot {
	if os.Getenv(EnvCUDA) == "off" {
		return nil
	}
	n, err := cuda.DeviceCount()
	if err != nil || n == 0 {
		return nil
	}
	var out []backendSlot
	for i := 0; i < n; i++ {
		t0 := time.Now()
		b, err := cuda.NewBackend(i)
		if err != nil {
			continue
		}
		d := b.Device()
		name := b.Name()
		if n > 1 {
			name = fmt.Sprintf("%s#%d", name, i)
		}
		out = append(out, backendSlot{
			name: name, gpu: true, gpuIndex: -1, backend: b,
			free: func() (int64, int64, bool) {
				f, t, err := d.MemInfo()
				return int64(f), int64(t), err == nil
			},
			heapBytes: int64(d.Info().TotalMem),
			initGuess: time.Since(t0),
		})
	}
	return out
}
