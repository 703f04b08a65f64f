package dssim

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone (no GPU needed), to a CUBIN for
// sm_90 (H100/H200) and to PTX for compute_75, the oldest architecture the
// project claims; every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	for _, arch := range []string{"sm_90", "compute_75"} {
		img, cubin, err := cuda.Compile("dssim", source(), arch)
		if errors.Is(err, zenmetrics.ErrUnsupported) {
			if cudatest.Required() {
				t.Fatalf("NVRTC required: %v", err)
			}
			t.Skipf("no NVRTC here: %v", err)
		}
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if len(img) == 0 || cubin != (arch[:3] == "sm_") {
			t.Fatalf("%s: %d bytes, cubin %v", arch, len(img), cubin)
		}
		if !cubin {
			for _, k := range newKernels().list() {
				if !strings.Contains(string(img), ".entry "+k.Name+"(") {
					t.Errorf("%s: no .entry %s in the PTX", arch, k.Name)
				}
			}
			// Doubles only where the pooling wants them: a double in a
			// per-pixel kernel would be a slip (a literal without f).
			for _, name := range []string{"unpack", "down", "lab", "chroma", "stats", "ssim"} {
				if body := entryBody(string(img), name); strings.Contains(body, ".f64") {
					t.Errorf("%s: kernel %s computes in double", arch, name)
				}
			}
		}
		t.Logf("%s: %d bytes", arch, len(img))
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

// signatures parses the kernels' parameter lists from dssim.cu.
func signatures(t testing.TB) map[string][]cudaemu.Param {
	t.Helper()
	sigs, err := cudaemu.Signatures(kernelSource)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches dssim.cu's declarations, kernel by kernel, and names
// every kernel the source exports; and the geometry the host launches
// with is the one the source is written for.
func TestSignaturesMatchSource(t *testing.T) {
	for _, err := range cudaemu.CheckTable(kernelSource, newKernels().list()) {
		t.Error(err)
	}
	for def, v := range map[string]int{"BX": blockX, "BY": blockY, "RW": rowThreads, "RC": rowChunk, "RS": sumThreads} {
		want := "#define " + def + " " + strconv.Itoa(v) + " "
		if !strings.Contains(kernelSource, want) {
			t.Errorf("dssim.cu does not say %q", want)
		}
	}
}
