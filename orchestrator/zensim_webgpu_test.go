package orchestrator

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestZensimLadderRealWebGPU: zensim through the whole ladder on the real
// WebGPU backend (lavapipe on CI), with no zensim-specific code in the
// orchestrator: a VRAM budget of a third of the full image's estimate makes
// GpuFull refuse and GpuStrip score it, the same bits as the full image
// (gpu/webgpu/zensim's strips are exact, tolerance 0); with a budget too
// small for one strip the CPU scores it, within 1e-3 relative (the
// backends agree to ~1e-5 on the score, gpu/webgpu/zensim's tests).
func TestZensimLadderRealWebGPU(t *testing.T) {
	ladderRealWebGPU(t, zenmetrics.Zensim, 256, 2000, 0, 1e-3)
}
