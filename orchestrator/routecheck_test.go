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

// spreadProfile builds a profile from {class: {side: {ns/px, spread}}}.
func spreadProfile(m zenmetrics.Metric, cells map[string]map[int][2]float64) *capability.Profile {
	p := &capability.Profile{}
	for c, row := range cells {
		for side, v := range row {
			p.SetSample(m, c, capability.Sample{Pixels: int64(side) * int64(side), NsPerPx: v[0], Spread: v[1]})
		}
	}
	return p
}

// A disagreement the reference's own noise covers (the two cells' runs
// overlap) is a coin flip; one beyond it is a routing error; one where a
// profile kept no spreads (written before they were) is neither.
func TestCompareRoutingNoise(t *testing.T) {
	m := zenmetrics.Zensim
	quick := spreadProfile(m, map[string]map[int][2]float64{
		capability.ClassCPU:      {1024: {200, 0.01}, 2048: {210, 0.01}},
		capability.ClassGPUFull:  {1024: {0.9, 0.03}, 2048: {0.5, 0.03}},
		capability.ClassCUDAFull: {1024: {1.0, 0.03}, 2048: {0.55, 0.03}},
	})
	thorough := spreadProfile(m, map[string]map[int][2]float64{
		capability.ClassCPU:      {1024: {190, 0.01}, 2048: {200, 0.01}},
		capability.ClassGPUFull:  {1024: {1.0, 0.05}, 2048: {0.6, 0.02}},
		capability.ClassCUDAFull: {1024: {0.97, 0.05}, 2048: {0.4, 0.02}},
	})
	rows := CompareRouting(quick, thorough, []zenmetrics.Metric{m}, sidesToPixels([]int{1024, 2048}))
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	r1, r2 := rows[0], rows[1]
	// 1024²: WebGPU instead of CUDA costs 1.0/0.97 − 1 = 3.1 %; the
	// reference's runs span ±5 % of each: noise (1.0·0.05 + 0.97·0.05)/0.97.
	if want := (1.0*0.05 + 0.97*0.05) / 0.97; r1.Chosen != capability.ClassGPUFull || !r1.NoiseKnown || math.Abs(r1.Noise-want) > 1e-12 || !r1.WithinNoise() || !r1.GPUWithinNoise() {
		t.Errorf("1024²: %+v, want a coin flip with noise %g", r1, want)
	}
	// 2048²: 0.6/0.4 − 1 = 50 % against a noise of 5 %: a real error.
	if r2.Chosen != capability.ClassGPUFull || r2.Best != capability.ClassCUDAFull || !r2.NoiseKnown || math.Abs(r2.Noise-0.05) > 1e-12 || r2.WithinNoise() {
		t.Errorf("2048²: %+v, want a real error, noise 0.05", r2)
	}
	s := SummarizeRouting(rows)
	if s.Within != 1 || s.Real != 1 || s.WorstReal != &rows[1] || math.Abs(s.WorstRealRegret-0.5) > 1e-12 || s.GPUWithin != 1 || s.GPUReal != 1 {
		t.Errorf("summary %+v", s)
	}
	// A reference written before spreads were kept: the same picks, and
	// no verdict either way.
	old := routeProfile(m, map[string]map[int]float64{
		capability.ClassCPU:      {1024: 190, 2048: 200},
		capability.ClassGPUFull:  {1024: 1.0, 2048: 0.6},
		capability.ClassCUDAFull: {1024: 0.97, 2048: 0.4},
	})
	s = SummarizeRouting(CompareRouting(quick, old, []zenmetrics.Metric{m}, sidesToPixels([]int{1024, 2048})))
	if s.Agree != 0 || s.Within != 0 || s.Real != 0 || s.WorstReal != nil || s.Worst == nil {
		t.Errorf("against an old reference: %+v", s)
	}
}

// predictSpread takes the spread of the samples the prediction uses.
func TestPredictSpread(t *testing.T) {
	ss := []capability.Sample{{Pixels: 1 << 22, NsPerPx: 1, Spread: 0.04}, {Pixels: 1 << 20, NsPerPx: 2, Spread: 0.01}}
	for _, c := range []struct {
		px   int64
		want float64
	}{{1 << 18, 0.01}, {1 << 20, 0.01}, {1 << 21, 0.04}, {1 << 22, 0.04}, {1 << 26, 0.04}} {
		if got := predictSpread(ss, c.px); got != c.want {
			t.Errorf("%d px: %g, want %g", c.px, got, c.want)
		}
	}
	ss[0].Spread = 0
	if got := predictSpread(ss, 1<<21); got != 0 {
		t.Errorf("with an unknown neighbour: %g, want 0", got)
	}
	if got := predictSpread(nil, 1<<21); got != 0 {
		t.Errorf("no samples: %g", got)
	}
}
