package orchestrator

import (
	"context"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// TestCVVDPLadderRealWebGPU: ColorVideoVDP walks all four rungs on the
// real WebGPU backend (lavapipe on CI) with no CVVDP-specific code in the
// orchestrator. The budgets come from the backend's own Estimate (the
// smallest that accepts strips, and the smallest that accepts strip
// pairs); under a budget between the two, GpuFull and GpuStrip refuse
// and GpuStripPair scores the pair, with the whole image's JOD bit for
// bit (gpu/webgpu/cvvdp's strip pairs sum the same rows in the same
// order, tolerance 0); under one between the strip floor and the whole
// image, GpuStrip scores it (same bits); under 1 KiB the CPU does,
// within 1e-4 JOD (the backends agree to ~2e-6 JOD, gpu/webgpu/cvvdp's
// tests).
func TestCVVDPLadderRealWebGPU(t *testing.T) {
	const w, h = 300, 260
	m := zenmetrics.CVVDP
	ref, dist := metrictest.SyntheticPair(w, h, 4)
	g0 := realGPU(t)
	full, err := zenmetrics.ScoreOnce(context.Background(), g0, m, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// floor is the smallest budget (to 1 KiB) under which Estimate
	// accepts mode.
	floor := func(mode zenmetrics.Mode) int64 {
		lo, hi := int64(1<<10), int64(1<<34)
		for hi-lo > 1<<10 {
			mid := lo + (hi-lo)/2
			g0.SetVRAMBudget(mid)
			if _, ok := g0.Estimate(m, w, h, mode); ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		g0.SetVRAMBudget(0)
		return hi
	}
	fullB, stripB, pairB := floor(zenmetrics.ModeFull), floor(zenmetrics.ModeStrip), floor(zenmetrics.ModeStripPair)
	t.Logf("%dx%d: smallest budgets accepted: full %d, strips %d, strip pairs %d bytes", w, h, fullB, stripB, pairB)
	if !(pairB < stripB && stripB < fullB) {
		t.Fatalf("budget floors full %d, strips %d, strip pairs %d: want strip pairs < strips < full", fullB, stripB, pairB)
	}
	for _, c := range []struct {
		budget int64
		rung   ladder.Rung
		tol    float64
	}{
		{(stripB + fullB) / 2, ladder.GpuStrip, 0},
		{(pairB + stripB) / 2, ladder.GpuStripPair, 0},
		{1 << 10, ladder.Cpu, 1e-4},
	} {
		r := runRealWebGPU(t, m, ref, dist, c.budget)
		if r.Err != nil || r.Rung != c.rung {
			t.Errorf("budget %d: rung %v err %v, want %v", c.budget, r.Rung, r.Err, c.rung)
			continue
		}
		d := math.Abs(r.Score.Value - full.Value)
		if !(d <= c.tol) {
			t.Errorf("budget %d on %v: %.9f JOD, whole image on the GPU %.9f (|Δ| %.3g > %g)", c.budget, r.Rung, r.Score.Value, full.Value, d, c.tol)
		}
		t.Logf("budget %d: %v on %s after %d attempt(s), %.9f JOD (whole image %.9f, |Δ| %.2g)",
			c.budget, r.Rung, r.Backend, r.Attempts, r.Score.Value, full.Value, d)
	}
}
