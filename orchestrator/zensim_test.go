package orchestrator

import (
	"context"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// TestZensimOnRealCPU: zensim goes through the metric-generic cells with no
// zensim-specific code: the quick bench (zmwarm) measures it on the CPU
// because the CPU backend's Estimate claims it, the chooser sends it to
// the CPU, and the score is the direct call's bits.
func TestZensimOnRealCPU(t *testing.T) {
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 2, DisableGPU: true,
		BenchSides: []int{32, 64}, BenchMetrics: []zenmetrics.Metric{zenmetrics.Zensim}}
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
	s := o.Profile().Samples(zenmetrics.Zensim, capability.ClassCPU)
	if len(s) != 2 || !(s[0].NsPerPx > 0) {
		t.Fatalf("zensim cpu samples %+v", s)
	}
	ref, dist := capability.SyntheticPair(96, 80, 3)
	want, err := zenmetrics.ScoreOnce(context.Background(), cpu.New(cpu.Config{}), zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := o.RunSingle(context.Background(), Task{Metric: zenmetrics.Zensim, Ref: ref, Dist: dist})
	if r.Err != nil || r.Score.Value != want.Value || r.Backend != "cpu" || r.Rung != ladder.Cpu || !(want.Value < 100) {
		t.Fatalf("%+v, want %v", r, want.Value)
	}
}
