package ssim2

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
)

// The kernels compile with NVRTC alone, for sm_90 and compute_75, and the
// kernel names the host looks up are all exported.
func TestKernelsCompile(t *testing.T) {
	cudatest.KernelsCompile(t, "ssim2", source(), []string{"first_scale", "xyb_planes", "downsample", "hblur_ref",
		"hblur_dist", "vblur_ref", "vblur_terms", "reduce_sums", "vblur_ref_strip", "vblur_terms_strip", "hblur_dist_all", "vblur_terms_all"})
}
