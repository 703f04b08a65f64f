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
	// No kernel spills to local memory (a small array indexed at run
	// time lands there and costs a memory round trip per access).
	for _, k := range newKernels().list() {
		if body := entryBody(ptx, k.Name); body == "" || strings.Contains(body, "__local_depot") {
			t.Errorf("compute_75: kernel %s missing or using local memory", k.Name)
		}
	}
}

// entryBody is the PTX text of kernel name (from its .entry to the next
// top-level directive).
func entryBody(ptx, name string) string {
	i := strings.Index(ptx, ".entry "+name+"(")
	if i < 0 {
		return ""
	}
	rest := ptx[i+1:]
	if j := strings.Index(rest, "\n."); j >= 0 {
		rest = rest[:j]
	}
	return rest
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
