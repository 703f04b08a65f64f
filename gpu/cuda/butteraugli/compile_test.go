package butteraugli

import (
	"errors"
	"os"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
)

// The kernels compile with NVRTC alone (no GPU needed), to a CUBIN for
// sm_90 (H100/H200) and to PTX for compute_75, the oldest architecture the
// project claims; every kernel the host looks up is an exported .entry.
func TestKernelsCompile(t *testing.T) {
	for _, arch := range []string{"sm_90", "compute_75"} {
		img, cubin, err := cuda.Compile("butteraugli", source(), arch)
		if errors.Is(err, zenmetrics.ErrUnsupported) {
			if os.Getenv("ZENMETRICS_REQUIRE_CUDA") == "1" {
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
		}
		t.Logf("%s: %d bytes", arch, len(img))
	}
}

// signatures parses the kernels' parameter lists from butteraugli.cu.
func signatures(t testing.TB) map[string][]cudaemu.Param {
	t.Helper()
	sigs, err := cudaemu.Signatures(kernelSource)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// The host's signature table (what launch.CheckArgs enforces at every
// launch) matches butteraugli.cu's declarations, kernel by kernel, and
// names every kernel the source exports.
func TestSignaturesMatchSource(t *testing.T) {
	for _, err := range cudaemu.CheckTable(kernelSource, newKernels().list()) {
		t.Error(err)
	}
	// The blur radii the templates are written for.
	want := map[string]int{"OPSIN": 2, "LF": 16, "HF": 7, "UHF": 3, "MASK": 6}
	for _, b := range blurs {
		if b.k.off != want[b.name] {
			t.Errorf("blur %s: radius %d, want %d", b.name, b.k.off, want[b.name])
		}
	}
}
