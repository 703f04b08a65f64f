package capability

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// fakeClock is BenchConfig.Clock for tests: time moves only when a fake
// backend spends it, so settling and the time limit are decided exactly,
// whatever the machine's load.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// scriptBackend's n-th Score (from 0, the lane's priming run included)
// takes cost(n, pixels) of the fake clock.
type scriptBackend struct {
	name  string
	clock *fakeClock
	cost  func(n int, px int64) time.Duration
	mu    sync.Mutex
	n     int
}

func (s *scriptBackend) Name() string { return s.name }
func (s *scriptBackend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	return int64(w) * int64(h) * 16, true
}
func (s *scriptBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	return scriptRef{s, ref.Pixels()}, nil
}
func (s *scriptBackend) Close() error { return nil }

type scriptRef struct {
	s  *scriptBackend
	px int64
}

func (r scriptRef) Score(ctx context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	r.s.mu.Lock()
	n := r.s.n
	r.s.n++
	r.s.mu.Unlock()
	r.s.clock.advance(r.s.cost(n, r.px))
	return zenmetrics.Score{Value: 1}, nil
}
func (r scriptRef) Release() {}

func scriptBench(t *testing.T, clock *fakeClock, sides []int, targets []BenchTarget, tweak func(*BenchConfig)) *BenchReport {
	t.Helper()
	cfg := BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Sides:   sides,
		Targets: targets,
		Clock:   clock.Now,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	rep, err := Bench(context.Background(), cfg, NewProfile(testReport(), time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A GPU that runs its first scores at a steady slow pace and then
// ramps, as an idle H200 did (nine 16 MP scores at 3× their warm time,
// BENCHMARKS.md): the slow runs agree with each other, but the cell must
// not be timed on them. It waits until the GPU has been busy for the
// ramp time and two slices agree, and times only fast runs.
func TestSettleWaitsOutTheRamp(t *testing.T) {
	const slow, fast = 20 * time.Millisecond, 6 * time.Millisecond
	clock := newFakeClock()
	gpu := &scriptBackend{name: "gpu", clock: clock, cost: func(n int, _ int64) time.Duration {
		if n < 10 { // the priming run, the warm-up and eight settle runs
			return slow
		}
		return fast
	}}
	rep := scriptBench(t, clock, []int{64}, []BenchTarget{{Class: ClassGPUFull, Backend: gpu}}, nil)
	r := rep.Results[0]
	if r.Unsettled || len(r.Runs) != DefaultGPURuns {
		t.Fatalf("cell %+v: want settled, %d timed runs", r, DefaultGPURuns)
	}
	for _, d := range r.Runs {
		if d != fast {
			t.Fatalf("timed runs %v include the ramp's", r.Runs)
		}
	}
	// Settling ran past the plateau (eight slow runs): the slow runs
	// agreed, but the GPU had been busy for 180 ms of the 250 ms ramp.
	if r.SettleRuns <= 8+2 {
		t.Fatalf("settled after %d runs, within the slow plateau's", r.SettleRuns)
	}
	if r.Spread != 0.001 {
		t.Fatalf("spread %g of identical runs, want the 0.001 floor", r.Spread)
	}
}

// A GPU whose runs never agree is timed anyway once the cap is reached,
// and the cell says it did not settle.
func TestSettleStopsAtCap(t *testing.T) {
	for _, cap := range []time.Duration{0, 100 * time.Millisecond} {
		clock := newFakeClock()
		gpu := &scriptBackend{name: "gpu", clock: clock, cost: func(n int, _ int64) time.Duration {
			return time.Duration(5+5*(n%2)) * time.Millisecond // 5, 10, 5, 10 ms ...
		}}
		rep := scriptBench(t, clock, []int{64}, []BenchTarget{{Class: ClassGPUFull, Backend: gpu}},
			func(c *BenchConfig) { c.Settle.Cap = cap })
		r := rep.Results[0]
		want := cap
		if want == 0 {
			want = 500 * time.Millisecond // the default
		}
		// Each run is a slice of its own (≥ 5 ms); settling ends at the
		// first slice at or past the cap: between cap/10ms and cap/5ms runs.
		lo, hi := int(want/(10*time.Millisecond)), int(want/(5*time.Millisecond))+1
		if !r.Unsettled || r.SettleRuns < lo || r.SettleRuns > hi || r.NsPerPx <= 0 || len(r.Runs) == 0 {
			t.Fatalf("cap %v: cell %+v, want unsettled after %d–%d settle runs, and timed", cap, r, lo, hi)
		}
	}
}

// The busy stretch carries from cell to cell: only the first cell waits
// out the ramp, the next settles in two slices. A warm-up longer than the
// idle gap (kernels compiling while the GPU idles) starts it over.
func TestSettleStretchCarriesAndRestarts(t *testing.T) {
	const run = 10 * time.Millisecond
	clock := newFakeClock()
	warmUpAt256 := true
	gpu := &scriptBackend{name: "gpu", clock: clock}
	gpu.cost = func(n int, px int64) time.Duration {
		if px == 256*256 && warmUpAt256 {
			warmUpAt256 = false
			return time.Second
		}
		return run
	}
	rep := scriptBench(t, clock, []int{64, 128, 256}, []BenchTarget{{Class: ClassGPUFull, Backend: gpu}}, nil)
	got := []int{rep.Results[0].SettleRuns, rep.Results[1].SettleRuns, rep.Results[2].SettleRuns}
	// 64²: the warm-up and 24 settle runs make the 250 ms ramp; 128²: two
	// slices; 256²: after the 1 s warm-up, 25 settle runs make it again.
	if got[0] != 24 || got[1] != 2 || got[2] != 25 {
		t.Fatalf("settle runs %v, want [24 2 25]", got)
	}
	for _, r := range rep.Results {
		if r.Unsettled || r.NsPerPx != float64(run)/float64(r.Pixels) {
			t.Fatalf("cell %+v", r)
		}
	}
}

// The GPU phase leaves HostShare of the time limit to the CPU phase: a
// GPU cell that would fit the whole limit but not the GPU's part is
// skipped when a CPU target follows, and measured when none does.
func TestHostShareKeepsTimeForTheCPU(t *testing.T) {
	run := func(withCPU bool) []BenchResult {
		clock := newFakeClock()
		// 64²: 200 ms a run; 128²: 800 ms; 256²: 3.2 s.
		gpu := &scriptBackend{name: "gpu", clock: clock, cost: func(_ int, px int64) time.Duration {
			return time.Duration(px) * 200 * time.Millisecond / 4096
		}}
		ts := []BenchTarget{{Class: ClassGPUFull, Backend: gpu}}
		if withCPU {
			cpu := &scriptBackend{name: "cpu", clock: clock, cost: func(int, int64) time.Duration { return 10 * time.Millisecond }}
			ts = append(ts, BenchTarget{Class: ClassCPU, Backend: cpu})
		}
		return scriptBench(t, clock, []int{64, 128, 256}, ts, func(c *BenchConfig) { c.TimeLimit = 20 * time.Second }).Results
	}
	// The GPU's 64² and 128² cells end at 3.6 s; its 256² cell is
	// predicted at 11.5 s more (3.84 s a run: one, and two settle
	// slices): past the GPU phase's 13.3 s, within the whole 20 s.
	rs := run(true)
	for _, r := range rs {
		gpu256 := r.Class == ClassGPUFull && r.Side == 256
		if gpu256 != strings.HasPrefix(r.Skipped, "time limit") || (!gpu256 && r.NsPerPx <= 0) {
			t.Errorf("with a CPU target: %s %d²: %+v", r.Class, r.Side, r)
		}
	}
	for _, r := range run(false) {
		if r.NsPerPx <= 0 {
			t.Errorf("GPU alone: %d² not measured: %+v", r.Side, r)
		}
	}
}

// intervalBackend records when each of its scores ran (real time).
type intervalBackend struct {
	fakeBackend
	mu   sync.Mutex
	runs [][2]time.Time
}

func (b *intervalBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	return intervalRef{b}, nil
}

type intervalRef struct{ b *intervalBackend }

func (r intervalRef) Score(ctx context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	t0 := time.Now()
	time.Sleep(100 * time.Microsecond)
	r.b.mu.Lock()
	r.b.runs = append(r.b.runs, [2]time.Time{t0, time.Now()})
	r.b.mu.Unlock()
	return zenmetrics.Score{Value: 1}, nil
}
func (r intervalRef) Release() {}

// No CPU cell runs while a GPU cell does: every CPU run starts after the
// last GPU run (two runtimes of one GPU lane, and a second GPU) ended.
func TestBenchCPUNeverBesideGPU(t *testing.T) {
	webgpu := &intervalBackend{fakeBackend: fakeBackend{name: "webgpu"}}
	cuda := &intervalBackend{fakeBackend: fakeBackend{name: "cuda"}}
	other := &intervalBackend{fakeBackend: fakeBackend{name: "gpu1"}}
	cpu := &intervalBackend{fakeBackend: fakeBackend{name: "cpu"}}
	p := NewProfile(testReport(), time.Now())
	rep, err := Bench(context.Background(), BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.DSSIM},
		Sides:   []int{32, 64},
		Settle:  SettleConfig{Ramp: time.Millisecond, Cap: 20 * time.Millisecond},
		Targets: []BenchTarget{
			{Class: ClassCPU, Backend: cpu, Concurrency: 2}, // listed first: still benched last
			{Class: ClassGPUFull, Backend: webgpu, Lane: "gpu0"},
			{Class: ClassCUDAFull, Backend: cuda, Lane: "gpu0"},
			{Class: ClassGPUStrip, Backend: other, Lane: "gpu1"},
		},
	}, p)
	if err != nil {
		t.Fatal(err)
	}
	var gpuEnd time.Time
	for _, b := range []*intervalBackend{webgpu, cuda, other} {
		if len(b.runs) == 0 {
			t.Fatalf("%s never ran", b.name)
		}
		for _, r := range b.runs {
			if r[1].After(gpuEnd) {
				gpuEnd = r[1]
			}
		}
	}
	if len(cpu.runs) == 0 {
		t.Fatal("the CPU never ran")
	}
	for _, r := range cpu.runs {
		if r[0].Before(gpuEnd) {
			t.Fatalf("a CPU run started at %v, before the GPUs' last run ended (%v)", r[0], gpuEnd)
		}
	}
	for _, r := range rep.Results {
		if r.NsPerPx <= 0 {
			t.Errorf("cell not measured: %+v", r)
		}
	}
}
