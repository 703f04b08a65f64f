package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Two WebGPU slots on one adapter (two devices on lavapipe on CI): with
// round-robin each gets exactly half of the tasks, the per-device
// statistics count them, and both devices give the same score bit for
// bit (same kernels on the same adapter; tolerance 0). A real multi-GPU
// run is a separate issue.
func TestTwoWebGPUSlotsOneAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("lavapipe: slow")
	}
	g0, g1 := realGPU(t), realGPU(t)
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 1, Balance: BalanceRoundRobin}
	cfg.probe = func(context.Context) (*capability.Report, error) {
		return &capability.Report{CPU: capability.CPUInfo{Brand: "test", LogicalCores: 2},
			GPUs: []capability.GPUInfo{{Name: g0.Name(), VRAMMiB: 1 << 14}, {Name: g1.Name(), VRAMMiB: 1 << 14}}}, nil
	}
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{
			{name: "cpu", gpuIndex: -1, backend: cpu.New(cpu.Config{Threads: 1})},
			{name: "webgpu0", gpu: true, gpuIndex: 0, backend: g0, heapBytes: 16 << 30},
			{name: "webgpu1", gpu: true, gpuIndex: 1, backend: g1, heapBytes: 16 << 30},
		}, nil
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	const n = 8
	ref, dist := metrictest.SyntheticPair(64, 64, 3)
	ts := make([]Task, n)
	for i := range ts {
		ts[i] = Task{ID: TaskID(i + 1), Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: dist}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	per := map[string]int{}
	var first float64
	for i, r := range collect(t, o.RunAll(ctx, ts), n) {
		if r.Err != nil {
			t.Fatalf("task %d: %v", r.ID, r.Err)
		}
		if i == 0 {
			first = r.Score.Value
		} else if r.Score.Value != first {
			t.Fatalf("task %d on %s: %v, first %v", r.ID, r.Backend, r.Score.Value, first)
		}
		per[r.Backend]++
	}
	if per["webgpu0"] != n/2 || per["webgpu1"] != n/2 {
		t.Fatalf("round-robin over two devices: %v", per)
	}
	st := o.Stats()
	if st[0].Tasks != n/2 || st[1].Tasks != n/2 || st[0].EMAMpxPerS <= 0 || st[1].EMAMpxPerS <= 0 {
		t.Fatalf("%+v", st)
	}
}
