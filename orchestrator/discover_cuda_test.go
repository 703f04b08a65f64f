package orchestrator

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Without a CUDA driver (this machine, CI) or with ZENMETRICS_CUDA=off
// discovery adds no CUDA slot and reports nothing: auto carries on with
// WebGPU and the CPU.
func TestCUDASlotsOff(t *testing.T) {
	t.Setenv(EnvCUDA, "off")
	if s := cudaSlots(nil); len(s) != 0 {
		t.Fatalf("ZENMETRICS_CUDA=off: %d CUDA slots", len(s))
	}
	t.Setenv(EnvCUDA, "")
	for _, s := range cudaSlots(nil) {
		if !s.gpu || s.backend == nil || s.free == nil || s.gpuIndex != -1 {
			t.Errorf("slot %s: gpu %v, backend %v, gpuIndex %d", s.name, s.gpu, s.backend, s.gpuIndex)
		}
		s.backend.Close()
	}
}

// With a CUDA device, discovery's CUDA slot scores SSIMULACRA2,
// Butteraugli, DSSIM and zensim tasks (at least one of them lands there; the
// chooser may share them with the CPU) and never receives a metric it does
// not implement (IW-SSIM here): those go to the CPU without an error.
// Skipped without CUDA, a failure under ZENMETRICS_REQUIRE_CUDA=1.
func TestCUDASlotsScore(t *testing.T) {
	slots := cudaSlots(nil)
	if len(slots) == 0 {
		if os.Getenv("ZENMETRICS_REQUIRE_CUDA") == "1" {
			t.Fatal("ZENMETRICS_REQUIRE_CUDA=1 but discovery found no CUDA device")
		}
		t.Skip("no CUDA device")
	}
	for _, s := range slots {
		s.backend.Close()
	}
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 2}
	cfg.probe = func(context.Context) (*capability.Report, error) {
		return &capability.Report{CPU: capability.CPUInfo{Brand: "test", LogicalCores: 2}}, nil
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var tasks []Task
	want := map[TaskID]float64{}
	ref, _ := metrictest.SyntheticPair(1024, 768, 1)
	for i := 0; i < 12; i++ {
		_, dist := metrictest.SyntheticPair(1024, 768, int64(2+i))
		m := []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.DSSIM, zenmetrics.Butteraugli, zenmetrics.IWSSIM, zenmetrics.Zensim}[i%5]
		id := TaskID(i + 1)
		tasks = append(tasks, Task{ID: id, Metric: m, Ref: ref, Dist: dist})
		s, err := zenmetrics.ScoreOnce(context.Background(), cpu.New(cpu.Config{}), m, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = s.Value
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	onCUDA := 0
	for r := range o.RunAll(ctx, tasks) {
		if r.Err != nil {
			t.Errorf("task %v: %v", r.ID, r.Err)
			continue
		}
		if strings.HasPrefix(r.Backend, "cuda:") {
			onCUDA++
			if m := r.Score.Metric; m != zenmetrics.SSIMULACRA2 && m != zenmetrics.Butteraugli && m != zenmetrics.DSSIM && m != zenmetrics.Zensim {
				t.Errorf("task %v: %v ran on %s", r.ID, r.Score.Metric, r.Backend)
			}
		}
		if d := math.Abs(r.Score.Value - want[r.ID]); d > 1e-4*math.Max(1, math.Abs(want[r.ID])) {
			t.Errorf("task %v on %s: %.8f, cpu %.8f", r.ID, r.Backend, r.Score.Value, want[r.ID])
		}
	}
	if onCUDA == 0 {
		t.Error("no task ran on the CUDA slot")
	}
	t.Logf("%d of %d tasks on CUDA", onCUDA, len(tasks))
}
