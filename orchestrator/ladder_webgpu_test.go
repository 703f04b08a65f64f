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

// The whole ladder with the real WebGPU backend: a VRAM budget below the
// full image's estimate makes GpuFull refuse and GpuStrip score it (the
// same maximum as the full image, bit for bit); with strips also made
// to fail (a budget too small for one strip) the CPU scores it.
func TestLadderRealWebGPU(t *testing.T) {
	g := realGPU(t)
	ref, dist := metrictest.SyntheticPair(256, 640, 5)
	full, err := zenmetrics.ScoreOnce(context.Background(), g, zenmetrics.Butteraugli, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullBytes, _ := g.Estimate(zenmetrics.Butteraugli, 256, 640, zenmetrics.ModeFull)
	run := func(budget int64) Result {
		g.SetVRAMBudget(budget)
		t.Cleanup(func() { g.SetVRAMBudget(0) })
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
		return o.RunSingle(ctx, Task{Metric: zenmetrics.Butteraugli, Ref: ref, Dist: dist})
	}

	r := run(fullBytes / 3)
	if r.Err != nil || r.Rung != ladder.GpuStrip {
		t.Fatalf("budget %d MiB: rung %v err %v, want gpu_strip", (fullBytes/3)>>20, r.Rung, r.Err)
	}
	if r.Score.Value != full.Value {
		t.Errorf("strips through the ladder: max %.9g, full %.9g", r.Score.Value, full.Value)
	}
	t.Logf("budget %d MiB: %v on %s after %d attempt(s), max %.6f", (fullBytes/3)>>20, r.Rung, r.Backend, r.Attempts, r.Score.Value)

	r = run(1 << 10) // 1 KiB: not even one strip
	if r.Err != nil || r.Rung != ladder.Cpu {
		t.Fatalf("1 KiB budget: rung %v err %v, want cpu", r.Rung, r.Err)
	}
	if d := math.Abs(r.Score.Value-full.Value) / full.Value; d > 1e-3 {
		t.Errorf("cpu fallback max %.6f vs gpu %.6f", r.Score.Value, full.Value)
	}
	t.Logf("1 KiB budget: %v on %s after %d attempt(s), max %.6f", r.Rung, r.Backend, r.Attempts, r.Score.Value)
}
