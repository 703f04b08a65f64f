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
	// Double fused multiply-adds only in CUDA's library code behind the
	// out-of-line fallbacks (exp2_slow, pow_slow, ...: pow, exp2, log10
	// use fma by design); none in the fast paths, whose results the
	// emulation holds to cpu/cvvdp's bits.
	fns := 0
	for _, part := range strings.Split(ptx, "\n.")[1:] {
		head, _, _ := strings.Cut(part, "\n")
		if !strings.Contains(part, "fma.rn.f64") {
			continue
		}
		fns++
		if !strings.Contains(head, "_slow") && !strings.Contains(head, "__internal") {
			t.Errorf("compute_75: fma.rn.f64 in %s", head)
		}
	}
	if fns == 0 {
		t.Error("compute_75: no fallback uses fma.rn.f64: is the PTX split right?")
	}
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches cvvdp.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "RT": rowPixels, "RB": rowThreads, "ST": sumThreads} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("cvvdp.cu does not say %q", want)
		}
	}
}
