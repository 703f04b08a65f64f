package ssim2

import (
	"errors"
	"os"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

// The kernels compile with NVRTC alone (no GPU needed), to a CUBIN for
// sm_90 (H100/H200) and to PTX for sm_75, the oldest architecture the
// project claims; the kernel names the host looks up are all exported.
func TestKernelsCompile(t *testing.T) {
	for _, arch := range []string{"sm_90", "compute_75"} {
		img, cubin, err := cuda.Compile("ssim2", source(), arch)
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
			for _, name := range []string{"first_scale", "xyb_planes", "downsample", "hblur_ref", "hblur_dist", "vblur_ref", "vblur_terms", "reduce_sums"} {
				if !containsEntry(string(img), name) {
					t.Errorf("%s: no .entry %s in the PTX", arch, name)
				}
			}
		}
		t.Logf("%s: %d bytes", arch, len(img))
	}
}

func containsEntry(ptx, name string) bool {
	for i := 0; i+len(name) < len(ptx); i++ {
		if ptx[i:i+7] == ".entry " && len(ptx) >= i+7+len(name) && ptx[i+7:i+7+len(name)] == name {
			return true
		}
	}
	return false
}
