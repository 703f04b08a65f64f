package butteraugli

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and
// every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	cudatest.KernelsCompile(t, "butteraugli", source(), cudatest.Names(newKernels().list()))
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches butteraugli.cu's declarations, kernel by kernel, and
// names every kernel the source exports.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	// The blur radii the templates are written for.
	want := map[string]int{"OPSIN": 2, "LF": 16, "HF": 7, "UHF": 3, "MASK": 6}
	for _, b := range blurs {
		if b.k.off != want[b.name] {
			t.Errorf("blur %s: radius %d, want %d", b.name, b.k.off, want[b.name])
		}
	}
}
