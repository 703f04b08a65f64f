package dssim

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and
// every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	ptx := cudatest.KernelsCompile(t, "dssim", source(), cudatest.Names(newKernels().list()))
	// Doubles only where the pooling wants them: a double in a per-pixel
	// kernel would be a slip (a literal without f).
	for _, name := range []string{"unpack", "down", "lab", "chroma", "stats", "ssim"} {
		if body := entryBody(ptx, name); strings.Contains(body, ".f64") {
			t.Errorf("compute_75: kernel %s computes in double", name)
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
// launch) matches dssim.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	cudatest.CheckTable(t, kernelSource, newKernels().list())
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "RW": rowThreads, "RC": rowChunk, "RS": sumThreads} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("dssim.cu does not say %q", want)
		}
	}
}
