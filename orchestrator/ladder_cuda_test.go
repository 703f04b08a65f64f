package orchestrator

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// A CUDA slot that takes strips, whose whole-image estimate exceeds the
// free memory, scores the task in strips there (the rung after GpuFull)
// rather than falling to the CPU; the WebGPU slot is absent so that the
// CUDA strips are the only GPU strips on offer.
func TestLadderUsesCUDAStrips(t *testing.T) {
	d := newDual(t, 1, nil)
	c := d.cudas[0]
	c.metrics = nil // every metric
	delete(c.faults, zenmetrics.ModeStrip)
	c.faults[zenmetrics.ModeFull] = faultPredicted // a whole image never fits
	d.webgpu.faults[zenmetrics.ModeFull] = faultUnsupported
	d.webgpu.faults[zenmetrics.ModeStrip] = faultUnsupported
	for _, m := range []zenmetrics.Metric{zenmetrics.DSSIM, zenmetrics.Butteraugli, zenmetrics.SSIMULACRA2} {
		r := d.o.RunSingle(context.Background(), Task{Metric: m, Ref: img(64, 64, 1), Dist: img(64, 64, 2)})
		if r.Err != nil || r.Rung != ladder.GpuStrip || r.Backend != c.name {
			t.Errorf("%s: %s on %s (err %v), want gpu_strip on %s", m, r.Rung, r.Backend, r.Err, c.name)
		}
	}
	if p, s := c.count(zenmetrics.ModeStrip); p != 3 || s != 3 {
		t.Errorf("CUDA strips: %d prepares, %d scores, want 3 and 3", p, s)
	}
	if p, _ := c.count(zenmetrics.ModeFull); p != 0 {
		t.Errorf("a whole image predicted not to fit was prepared %d times", p)
	}
}

// realCUDA opens CUDA device 0 for the ladder test: skipped without a
// device, failed under ZENMETRICS_REQUIRE_CUDA=1 (gpu/cuda/internal/
// cudatest's rule, which this package cannot import).
func realCUDA(t *testing.T) *cuda.Backend {
	t.Helper()
	b, err := cuda.NewBackend(0)
	if err != nil {
		if os.Getenv("ZENMETRICS_REQUIRE_CUDA") == "1" {
			t.Fatalf("CUDA required: %v", err)
		}
		t.Skipf("no CUDA device: %v", err)
	}
	return b
}

// The whole ladder with the real CUDA backend: with its free memory capped
// (cuda.Backend.SetFreeLimit, and the slot's live reading capped alike)
// below a whole image's estimate, GpuFull is refused and GpuStrip scores
// the image on CUDA. Tolerance: none, for every metric (each CUDA
// package's strips reproduce the whole image's maps and sums bit for bit:
// their strip.go and TestStripsGPU); with a cap below any strip plan the
// CPU scores it.
func TestLadderRealCUDAStrips(t *testing.T) {
	realCUDA(t).Close() // skip (or fail) here, not in each subtest
	for _, m := range []zenmetrics.Metric{zenmetrics.DSSIM, zenmetrics.Butteraugli, zenmetrics.IWSSIM, zenmetrics.Zensim, zenmetrics.CVVDP} {
		t.Run(m.String(), func(t *testing.T) {
			g := realCUDA(t)
			ref, dist := metrictest.SyntheticPair(600, 2400, 7)
			full, err := zenmetrics.ScoreOnce(context.Background(), g, m, ref, dist, zenmetrics.Options{})
			fullBytes, _ := g.Estimate(m, ref.Width, ref.Height, zenmetrics.ModeFull)
			g.Close()
			if err != nil {
				t.Fatal(err)
			}
			r := runRealCUDA(t, m, ref, dist, fullBytes/3)
			if r.Err != nil || r.Rung != ladder.GpuStrip {
				t.Fatalf("cap %d MiB: rung %v on %s, err %v; want gpu_strip", (fullBytes/3)>>20, r.Rung, r.Backend, r.Err)
			}
			t.Logf("cap %d MiB: %v on %s, %.17g vs whole %.17g", (fullBytes/3)>>20, r.Rung, r.Backend, r.Score.Value, full.Value)
			if r.Score.Value != full.Value {
				t.Errorf("strips through the ladder: %.17g, whole image %.17g", r.Score.Value, full.Value)
			}
			r = runRealCUDA(t, m, ref, dist, 1<<10)
			if r.Err != nil || r.Rung != ladder.Cpu {
				t.Fatalf("1 KiB cap: rung %v err %v, want cpu", r.Rung, r.Err)
			}
			if d := math.Abs(r.Score.Value-full.Value) / full.Value; d > 1e-3 {
				t.Errorf("cpu fallback %.9g vs cuda %.9g", r.Score.Value, full.Value)
			}
		})
	}
}

// runRealCUDA scores one task through an orchestrator whose only GPU is a
// fresh CUDA backend with its free memory capped at limit bytes, beside a
// one-thread CPU slot.
func runRealCUDA(t *testing.T, m zenmetrics.Metric, ref, dist *zenmetrics.Image, limit int64) Result {
	t.Helper()
	g := realCUDA(t) // closed with the orchestrator
	g.SetFreeLimit(limit)
	d := g.Device()
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 1}
	cfg.probe = func(context.Context) (*capability.Report, error) {
		return &capability.Report{CPU: capability.CPUInfo{Brand: "test", LogicalCores: 2}}, nil
	}
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{
			{name: "cpu", gpuIndex: -1, backend: cpu.New(cpu.Config{Threads: 1})},
			{name: g.Name(), gpu: true, gpuIndex: -1, backend: g, runtime: capability.RuntimeCUDA,
				free: func() (int64, int64, bool) {
					f, tot, err := d.MemInfo()
					return min(int64(f), limit), int64(tot), err == nil
				}},
		}, nil
	}
	cfg.Pool.VRAMSampleInterval = time.Nanosecond
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	return o.RunSingle(context.Background(), Task{Metric: m, Ref: ref, Dist: dist})
}
