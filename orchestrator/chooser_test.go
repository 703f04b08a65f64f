package orchestrator

import (
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/capability"
)

const mp = 1 << 20 // 1024²

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestPredictNsPerPx(t *testing.T) {
	s := []capability.Sample{
		{Pixels: 16 * mp, NsPerPx: 0.5}, // unsorted on purpose
		{Pixels: mp, NsPerPx: 2},
		{Pixels: 4 * mp, NsPerPx: 1},
		{Pixels: 2 * mp, VRAMMiB: 10}, // VRAM only: not a timing point
	}
	cases := []struct {
		px   int64
		want float64
	}{
		{1000, 2},              // clamped below the smallest size
		{mp, 2},                // exact
		{2 * mp, 1.5},          // halfway in log2 between 1 MP and 4 MP
		{4 * mp, 1},            // exact
		{8 * mp, 0.75},         // halfway in log2 between 4 MP and 16 MP
		{16 * mp, 0.5},         // exact largest
		{64 * mp, 0.5 * 1.2},   // above the largest: ×1.2
		{16*mp + 1, 0.5 * 1.2}, // just above
	}
	for _, c := range cases {
		got, ok := predictNsPerPx(s, c.px)
		if !ok || !near(got, c.want) {
			t.Errorf("predict(%d) = %v, %v; want %v", c.px, got, ok, c.want)
		}
	}
	// Not linear in pixels: 3 MP is log2-interpolated, not at 2/3 of the way.
	got, _ := predictNsPerPx(s, 3*mp)
	want := 2 + (math.Log2(3)/2)*(1-2)
	if !near(got, want) {
		t.Errorf("3 MP: %v, want %v", got, want)
	}
	if _, ok := predictNsPerPx(nil, mp); ok {
		t.Error("no samples must say so")
	}
	if _, ok := predictNsPerPx([]capability.Sample{{Pixels: mp, VRAMMiB: 5}}, mp); ok {
		t.Error("VRAM-only samples are not timings")
	}
	one := []capability.Sample{{Pixels: mp, NsPerPx: 3}}
	if got, _ := predictNsPerPx(one, 100); got != 3 {
		t.Errorf("single point below: %v", got)
	}
	if got, _ := predictNsPerPx(one, 2*mp); !near(got, 3.6) {
		t.Errorf("single point above: %v", got)
	}
	if got := nsPerPxOrDefault(nil, capability.ClassCPU, mp); got != 100 {
		t.Errorf("default cpu %v", got)
	}
	if nsPerPxOrDefault(nil, capability.ClassGPUFull, mp) >= nsPerPxOrDefault(nil, capability.ClassCPU, mp) {
		t.Error("without a profile the GPU must be preferred")
	}
}

func TestPredictBytes(t *testing.T) {
	s := []capability.Sample{{Pixels: mp, VRAMMiB: 100}, {Pixels: 16 * mp, VRAMMiB: 1000}}
	// 2 MP is nearest (in log2) to 1 MP: 100 MiB × 2.
	if got := predictBytes(s, 2*mp, 0); got != 200<<20 {
		t.Errorf("2 MP: %d MiB", got>>20)
	}
	// 32 MP is nearest to 16 MP: 1000 × 2.
	if got := predictBytes(s, 32*mp, 0); got != 2000<<20 {
		t.Errorf("32 MP: %d MiB", got>>20)
	}
	// The backend's own estimate wins when larger.
	if got := predictBytes(s, mp, 300<<20); got != 300<<20 {
		t.Errorf("estimate: %d MiB", got>>20)
	}
	if got := predictBytes(nil, mp, 0); got != 0 {
		t.Errorf("unknown: %d", got)
	}
}

func TestVRAMAdmits(t *testing.T) {
	free := int64(1000) << 20
	if ok, _ := vramAdmits(850<<20, free, 0); !ok {
		t.Error("exactly free × 0.85 must fit")
	}
	if ok, why := vramAdmits(851<<20, free, 0); ok || why == "" {
		t.Error("above free × 0.85 must be refused, with a reason")
	}
	if ok, _ := vramAdmits(999<<20, free, 0); ok {
		t.Error("99.9 % of free is not safe")
	}
	if ok, _ := vramAdmits(500<<20, free, 600<<20); ok {
		t.Error("floor ignored")
	}
	if ok, _ := vramAdmits(300<<20, free, 600<<20); !ok {
		t.Error("floor too strict")
	}
	if ok, _ := vramAdmits(0, free, 0); !ok {
		t.Error("unknown need must admit")
	}
	if ok, _ := vramAdmits(5<<30, -1, 0); !ok {
		t.Error("unknown free must admit")
	}
}

func TestOOMBlocked(t *testing.T) {
	cells := []capability.Cell{{Backend: "gpu_full", Pixels: 4 * mp}}
	for _, c := range []struct {
		name    string
		samples []capability.Sample
		class   string
		px      int64
		want    bool
	}{
		{"smaller size is fine", nil, "gpu_full", 2 * mp, false},
		{"the failed size", nil, "gpu_full", 4 * mp, true},
		{"larger sizes too", nil, "gpu_full", 64 * mp, true},
		{"other class unaffected", nil, "gpu_strip", 64 * mp, false},
		{"a success at the same size does not clear it",
			[]capability.Sample{{Pixels: 4 * mp, NsPerPx: 1}}, "gpu_full", 4 * mp, true},
		{"a larger success clears sizes up to it",
			[]capability.Sample{{Pixels: 16 * mp, NsPerPx: 1}}, "gpu_full", 8 * mp, false},
		{"... and exactly it",
			[]capability.Sample{{Pixels: 16 * mp, NsPerPx: 1}}, "gpu_full", 16 * mp, false},
		{"... but not beyond it",
			[]capability.Sample{{Pixels: 16 * mp, NsPerPx: 1}}, "gpu_full", 32 * mp, true},
		{"the failed size stays failed even then",
			[]capability.Sample{{Pixels: 16 * mp, NsPerPx: 1}}, "gpu_full", 4 * mp, true},
		{"a VRAM-only sample is not a success",
			[]capability.Sample{{Pixels: 16 * mp, VRAMMiB: 1}}, "gpu_full", 8 * mp, true},
	} {
		got, at := oomBlocked(cells, c.samples, c.class, c.px)
		if got != c.want {
			t.Errorf("%s: blocked=%v, want %v", c.name, got, c.want)
		}
		if got && at != 4*mp {
			t.Errorf("%s: cell at %d", c.name, at)
		}
	}
}

func TestColdGPUCostRule(t *testing.T) {
	const initNs = 200e6 // 200 ms device creation
	// One cold 1 MP task: GPU 1 ns/px + init vs CPU 100 ns/px (105 ms).
	gpu := finishNs(0, 1, initNs, 1*mp)
	cpu := finishNs(0, 8, 0, 100*mp)
	if !preferCPU(gpu, cpu) {
		t.Error("a single small cold task should stay on the CPU")
	}
	// 16 MP: the CPU needs 1.7 s, the GPU 0.2 s + 17 ms.
	if preferCPU(finishNs(0, 1, initNs, 16*mp), finishNs(0, 8, 0, 100*16*mp)) {
		t.Error("a big task should pay the init")
	}
	// Once warm, the GPU wins a small task too.
	if preferCPU(finishNs(0, 1, 0, 1*mp), finishNs(0, 8, 0, 100*mp)) {
		t.Error("warm GPU lost a small task")
	}
	// A long GPU queue sends work to idle CPU workers.
	if !preferCPU(finishNs(500*100*mp, 1, 0, mp), finishNs(0, 8, 0, 100*mp)) {
		t.Error("idle CPU did not take work from a long GPU queue")
	}
	if finishNs(80, 0, 0, 1) != 81 {
		t.Error("zero workers must count as one")
	}
}
