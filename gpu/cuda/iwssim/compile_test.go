package iwssim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and
// every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	ptx := cudatest.KernelsCompile(t, "iwssim", source(), cudatest.Names(newKernels().list()))
	// No fused multiply-add anywhere (the CPU reference rounds every
	// product): --fmad=false must hold for every kernel.
	for _, name := range cudatest.Names(newKernels().list()) {
		body := entryBody(ptx, name)
		if body == "" {
			t.Errorf("compute_75: no body for %s", name)
		}
		if strings.Contains(body, "fma.rn.f") || strings.Contains(body, "mad.rn.f") || strings.Contains(body, "mad.f") {
			t.Errorf("compute_75: kernel %s fuses a multiply-add", name)
		}
	}
}

// entryBody is the PTX text of kernel name (from its .entry to the next).
func entryBody(ptx, name string) string {
	i := strings.Index(ptx, ".entry "+name+"(")
	if i < 0 {
		return ""
	}
	rest := ptx[i+1:]
	if j := strings.Index(rest, ".entry "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches iwssim.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "RT": rowThreads, "GRAD": gaussRad, "IWCROP": gaussRad - 1} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("iwssim.cu does not say %q", want)
		}
	}
}
