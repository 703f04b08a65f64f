package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// TestIWSSIMOnRealCPU: IW-SSIM goes through the metric-generic cells with
// no IW-SSIM-specific code: the quick bench (zmwarm) measures it on the CPU
// at sizes above its 161-pixel minimum and skips the one below (the CPU
// backend's Estimate does not claim it), the chooser sends it to the CPU,
// and the score is the direct call's bits.
func TestIWSSIMOnRealCPU(t *testing.T) {
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 2, DisableGPU: true,
		BenchSides: []int{128, 192, 256}, BenchMetrics: []zenmetrics.Metric{zenmetrics.IWSSIM}}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	res, err := o.Warm(context.Background())
	if err != nil || !res.Benched {
		t.Fatalf("warm: %+v %v", res, err)
	}
	s := o.Profile().Samples(zenmetrics.IWSSIM, capability.ClassCPU)
	if len(s) != 2 || !(s[0].NsPerPx > 0) {
		t.Fatalf("iwssim cpu samples %+v, want the 192 and 256 sizes", s)
	}
	ref, dist := capability.SyntheticPair(200, 170, 3)
	want, err := zenmetrics.ScoreOnce(context.Background(), cpu.New(cpu.Config{}), zenmetrics.IWSSIM, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := o.RunSingle(context.Background(), Task{Metric: zenmetrics.IWSSIM, Ref: ref, Dist: dist})
	if r.Err != nil || r.Score.Value != want.Value || r.Backend != "cpu" || r.Rung != ladder.Cpu || !(want.Value > 0 && want.Value < 1) {
		t.Fatalf("%+v, want %v", r, want.Value)
	}
	// Below the minimum the task fails (no backend claims the size: the
	// ladder's error), not a panic or a silent fallback.
	small, smallDist := capability.SyntheticPair(100, 300, 4)
	if r := o.RunSingle(context.Background(), Task{Metric: zenmetrics.IWSSIM, Ref: small, Dist: smallDist}); r.Err == nil {
		t.Errorf("100×300: %+v, want an error", r)
	} else if msg := r.Err.Error(); !strings.Contains(msg, "too small") || strings.Contains(msg, "does not implement") {
		// The reason names the size, not a missing metric.
		t.Errorf("100×300: %q, want a too-small reason", msg)
	}
}
