package orchestrator

import (
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
)

// routeProfile builds a profile from {class: {side: ns/px}}.
func routeProfile(m zenmetrics.Metric, cells map[string]map[int]float64) *capability.Profile {
	p := &capability.Profile{}
	for c, row := range cells {
		for side, ns := range row {
			p.SetSample(m, c, capability.Sample{Pixels: int64(side) * int64(side), NsPerPx: ns})
		}
	}
	return p
}

func TestCompareRouting(t *testing.T) {
	m := zenmetrics.SSIMULACRA2
	// The quick profile skipped 4096² on CUDA and measured CUDA a little
	// slow at 2048²; the thorough one has every size.
	quick := routeProfile(m, map[string]map[int]float64{
		capability.ClassCPU:      {512: 40, 1024: 45},
		capability.ClassGPUFull:  {512: 2, 1024: 1.0, 2048: 0.5},
		capability.ClassCUDAFull: {512: 1, 1024: 0.8, 2048: 0.6},
	})
	thorough := routeProfile(m, map[string]map[int]float64{
		capability.ClassCPU:      {512: 42, 1024: 44, 2048: 50},
		capability.ClassGPUFull:  {512: 2.1, 1024: 1.0, 2048: 0.55, 4096: 0.4},
		capability.ClassCUDAFull: {512: 0.9, 1024: 0.7, 2048: 0.44, 4096: 0.3},
	})
	rows := CompareRouting(quick, thorough, []zenmetrics.Metric{m, zenmetrics.DSSIM}, sidesToPixels([]int{512, 2048, 4096}))
	if len(rows) != 3 { // DSSIM: measured by neither, no rows
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	byPx := map[int64]RouteCompare{}
	for _, r := range rows {
		byPx[r.Pixels] = r
	}
	r512, r2048, r4096 := byPx[512*512], byPx[2048*2048], byPx[4096*4096]
	if r512.Chosen != capability.ClassCUDAFull || r512.Best != capability.ClassCUDAFull || r512.Regret != 0 {
		t.Errorf("512²: chosen %s best %s regret %g, want cuda_full twice and 0", r512.Chosen, r512.Best, r512.Regret)
	}
	// 2048²: the quick profile prefers WebGPU (0.5 < 0.6), the thorough one
	// CUDA (0.44 < 0.55): regret 0.55/0.44 − 1 = 25 %.
	if r2048.Chosen != capability.ClassGPUFull || r2048.Best != capability.ClassCUDAFull {
		t.Errorf("2048²: chosen %s best %s", r2048.Chosen, r2048.Best)
	}
	if want := 0.55/0.44 - 1; math.Abs(r2048.Regret-want) > 1e-12 || math.Abs(r2048.GPURegret-want) > 1e-12 {
		t.Errorf("2048²: regret %g / GPU %g, want %g", r2048.Regret, r2048.GPURegret, want)
	}
	// 4096²: beyond the quick profile's largest size, both GPU classes are
	// extrapolated (×1.2): 0.6 vs 0.72, so WebGPU again.
	if got := r4096.NsPerPx[capability.ClassGPUFull][0]; math.Abs(got-0.6) > 1e-12 {
		t.Errorf("4096² WebGPU prediction %g, want 0.6 (0.5 × 1.2)", got)
	}
	if r4096.GPUChosen != capability.ClassGPUFull || r4096.GPUBest != capability.ClassCUDAFull {
		t.Errorf("4096²: GPU chosen %s best %s", r4096.GPUChosen, r4096.GPUBest)
	}
	s := SummarizeRouting(rows)
	if s.Rows != 3 || s.Agree != 1 || s.GPURows != 3 || s.GPUAgree != 1 {
		t.Errorf("summary %+v, want 3 rows, 1 agreeing, 3 GPU rows, 1 agreeing", s)
	}
	if want := 0.4/0.3 - 1; s.Worst == nil || math.Abs(s.WorstRegret-want) > 1e-12 || s.Worst.Pixels != 4096*4096 {
		t.Errorf("worst regret %g at %v, want %g at 4096²", s.WorstRegret, s.Worst, want)
	}
	// A profile compared with itself agrees everywhere.
	if s := SummarizeRouting(CompareRouting(thorough, thorough, []zenmetrics.Metric{m}, RoutingPixels())); s.Agree != s.Rows || s.Rows != len(RoutingSides()) || s.Worst != nil {
		t.Errorf("self comparison: %+v", s)
	}
}

// A class only one profile measured is left out of the ranking rather
// than given a default that would decide the pick.
func TestCompareRoutingCommonClasses(t *testing.T) {
	m := zenmetrics.Butteraugli
	a := routeProfile(m, map[string]map[int]float64{capability.ClassCPU: {512: 50}, capability.ClassGPUFull: {512: 2}})
	b := routeProfile(m, map[string]map[int]float64{capability.ClassCPU: {512: 50}, capability.ClassCUDAFull: {512: 1}})
	rows := CompareRouting(a, b, []zenmetrics.Metric{m}, []int64{512 * 512})
	if len(rows) != 1 || len(rows[0].NsPerPx) != 1 || rows[0].Chosen != capability.ClassCPU || rows[0].GPUChosen != "" {
		t.Fatalf("rows %+v, want one row ranking only cpu", rows)
	}
}
