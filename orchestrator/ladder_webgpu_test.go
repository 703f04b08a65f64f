package orchestrator

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// realGPU opens the WebGPU backend (lavapipe on CI): skipped without a
// runtime, a failure under CI=true.
func realGPU(t *testing.T) *webgpu.Backend {
	t.Helper()
	if os.Getenv(wgpu.EnvLibrary) == "" {
		if _, err := os.Stat("../.tools/libwebgpu_wrapper.so"); err == nil {
			t.Setenv(wgpu.EnvLibrary, "../.tools/libwebgpu_wrapper.so")
		}
	}
	b, err := webgpu.NewBackend(context.Background(), nil)
	if err != nil {
		var le *wgpu.LoadError
		var ne *webgpu.NoAdapterError
		if os.Getenv("CI") == "true" || !(errors.As(err, &le) || errors.As(err, &ne)) {
			t.Fatalf("no WebGPU runtime: %v", err)
		}
		t.Skipf("no WebGPU runtime (set CI=true to make this fail): %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The whole ladder with the real WebGPU backend, for both metrics it has
// strips for: a VRAM budget below the full image's estimate makes GpuFull
// refuse and GpuStrip score it (Butteraugli: the same maximum as the full
// image, bit for bit; SSIMULACRA2: within 0.02, in fact ~1e-7, summation
// order); with strips also made to fail (a budget too small for one strip)
// the CPU scores it.
func TestLadderRealWebGPU(t *testing.T) {
	for _, tc := range []struct {
		m    zenmetrics.Metric
		w, h int
		// stripTol: |strips − full| allowed; cpuTol: |cpu − gpu| relative.
		stripTol, cpuTol float64
	}{
		{zenmetrics.Butteraugli, 256, 640, 0, 1e-3},
		// Tall enough that a strip with its 192-row halos fits a third of
		// the full estimate (Estimate plans for RGBA16 with alpha).
		{zenmetrics.SSIMULACRA2, 256, 2000, 0.02, 1e-4},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			ladderRealWebGPU(t, tc.m, tc.w, tc.h, tc.stripTol, tc.cpuTol)
		})
	}
}

func ladderRealWebGPU(t *testing.T, m zenmetrics.Metric, w, h int, stripTol, cpuTol float64) {
	ref, dist := metrictest.SyntheticPair(w, h, 5)
	g0 := realGPU(t)
	full, err := zenmetrics.ScoreOnce(context.Background(), g0, m, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullBytes, _ := g0.Estimate(m, w, h, zenmetrics.ModeFull)
	run := func(budget int64) Result { return runRealWebGPU(t, m, ref, dist, budget) }

	r := run(fullBytes / 3)
	if r.Err != nil || r.Rung != ladder.GpuStrip {
		t.Fatalf("budget %d MiB: rung %v err %v, want gpu_strip", (fullBytes/3)>>20, r.Rung, r.Err)
	}
	d := math.Abs(r.Score.Value - full.Value)
	if d > stripTol {
		t.Errorf("strips through the ladder: %.9g, full %.9g (|Δ| %.3g > %g)", r.Score.Value, full.Value, d, stripTol)
	}
	t.Logf("budget %d MiB: %v on %s after %d attempt(s), %.9f vs full %.9f (|Δ| %.2e)", (fullBytes/3)>>20, r.Rung, r.Backend, r.Attempts,
		r.Score.Value, full.Value, d)

	r = run(1 << 10) // 1 KiB: not even one strip
	if r.Err != nil || r.Rung != ladder.Cpu {
		t.Fatalf("1 KiB budget: rung %v err %v, want cpu", r.Rung, r.Err)
	}
	if d := math.Abs(r.Score.Value-full.Value) / full.Value; d > cpuTol {
		t.Errorf("cpu fallback %.6f vs gpu %.6f", r.Score.Value, full.Value)
	}
	t.Logf("1 KiB budget: %v on %s after %d attempt(s), %.6f", r.Rung, r.Backend, r.Attempts, r.Score.Value)
}

// runRealWebGPU scores one task through an orchestrator whose only GPU is
// a fresh real WebGPU backend under a VRAM budget of budget bytes, beside
// a one-thread CPU slot.
func runRealWebGPU(t *testing.T, m zenmetrics.Metric, ref, dist *zenmetrics.Image, budget int64) Result {
	t.Helper()
	// A backend per run: closing the orchestrator closes it.
	g := realGPU(t)
	g.SetVRAMBudget(budget)
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 1}
	cfg.probe = func(context.Context) (*capability.Report, error) {
		return &capability.Report{CPU: capability.CPUInfo{Brand: "test", LogicalCores: 2},
			GPUs: []capability.GPUInfo{{Name: g.Name(), VRAMMiB: 1 << 14}}}, nil
	}
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{
			{name: "cpu", gpuIndex: -1, backend: cpu.New(cpu.Config{Threads: 1})},
			{name: g.Name(), gpu: true, gpuIndex: 0, backend: g, heapBytes: 16 << 30},
		}, nil
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return o.RunSingle(ctx, Task{Metric: m, Ref: ref, Dist: dist})
}
