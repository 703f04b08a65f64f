package cvvdp

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and
// every kernel the host looks up is an exported .entry; no multiply is
// fused into an add (--fmad=false holds: a contraction would move the
// last bits away from cpu/cvvdp's).
func TestKernelsCompile(t *testing.T) {
	ptx := cudatest.KernelsCompile(t, "cvvdp", source(), cudatest.Names(newKernels().list()))
	if strings.Contains(ptx, "fma.rn.f32") {
		t.Error("compute_75: a float multiply-add was contracted")
	}
	if n := strings.Count(ptx, "fma.rn.f64"); n > 0 {
		// The double pow, exp2, log10 and ldexp of the fallback paths are
		// CUDA's library code, which uses fma by design; the fast paths
		// must not: their callers are checked by the emulation's bit
		// equality. Logged for the record.
		t.Logf("compute_75: %d fma.rn.f64 (library fallbacks)", n)
	}
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches cvvdp.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "RT": rowThreads, "ST": sumThreads} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("cvvdp.cu does not say %q", want)
		}
	}
}
