package webgpu

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// TestHeapFreeSharedMemory: a discrete GPU's heap is its own, so free is
// heap − held whatever the OS says; an integrated or software adapter's
// heap is system RAM, so free may not exceed what the OS has available
// now (and an unknown OS figure, 0, leaves the heap bound alone).
func TestHeapFreeSharedMemory(t *testing.T) {
	const gib = int64(1) << 30
	avail := func(n int64) func() int64 { return func() int64 { return n } }
	cases := []struct {
		name      string
		typ       wgpu.AdapterType
		heap      int64
		held      int64
		sys       int64
		wantFree  int64
		wantSrc   string
		wantTotal int64
	}{
		{"discrete ignores the OS", wgpu.AdapterTypeDiscreteGPU, 80 * gib, 10 * gib, 2 * gib, 70 * gib, "heap", 80 * gib},
		{"integrated capped by the OS", wgpu.AdapterTypeIntegratedGPU, 16 * gib, 1 * gib, 3 * gib, 3 * gib, "heap+sysmem", 16 * gib},
		{"integrated, OS has more than the heap", wgpu.AdapterTypeIntegratedGPU, 8 * gib, 1 * gib, 20 * gib, 7 * gib, "heap+sysmem", 8 * gib},
		{"software adapter capped", wgpu.AdapterTypeCPU, 64 * gib, 0, 5 * gib, 5 * gib, "heap+sysmem", 64 * gib},
		{"integrated, OS unknown", wgpu.AdapterTypeIntegratedGPU, 16 * gib, 2 * gib, 0, 14 * gib, "heap", 16 * gib},
		{"held above heap never negative", wgpu.AdapterTypeIntegratedGPU, 4 * gib, 5 * gib, 3 * gib, 0, "heap+sysmem", 4 * gib},
	}
	for _, c := range cases {
		free, total, src := heapFree(c.heap, c.held, c.typ, avail(c.sys))
		if free != c.wantFree || total != c.wantTotal || src != c.wantSrc {
			t.Errorf("%s: got free %d total %d %q, want %d %d %q", c.name, free, total, src, c.wantFree, c.wantTotal, c.wantSrc)
		}
	}
}
