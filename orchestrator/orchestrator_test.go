package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/ladder"
	"github.com/zenmetrics-go/zenmetrics/refcache"
)

func tasks(m zenmetrics.Metric, n int, ref *zenmetrics.Image) []Task {
	out := make([]Task, n)
	for i := range out {
		out[i] = Task{ID: TaskID(i + 1), Metric: m, Ref: ref, Dist: img(ref.Width, ref.Height, byte(i))}
	}
	return out
}

func loadCells(t *testing.T, h *harness, m zenmetrics.Metric) []capability.Cell {
	t.Helper()
	p, err := (&capability.Store{Dir: h.dir}).Load(context.Background(), capability.ReportHash(testReport))
	if err != nil {
		t.Fatalf("profile on disk: %v", err)
	}
	return p.OOMCells(m)
}

// The main acceptance test: out of memory at each of the three
// points (predicted, Prepare, Score) on every GPU rung, and 100 % of the
// tasks still finish, with the CPU's score.
func TestOOMAtEachTriggerOnEveryGPURungFallsToCPU(t *testing.T) {
	for _, m := range []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.CVVDP} {
		for _, fk := range []fault{faultPredicted, faultConstructor, faultRuntime} {
			t.Run(fmt.Sprintf("%s/%d", m, fk), func(t *testing.T) {
				h := newHarness(t, true)
				gpuRungs := ladder.Rungs(m, true)
				gpuRungs = gpuRungs[:len(gpuRungs)-1]
				for _, r := range gpuRungs {
					h.gpu.faults[r.Mode()] = fk
				}
				const n = 25
				res := collect(t, h.o.RunAll(context.Background(), tasks(m, n, img(64, 48, 200))), n)
				seen := map[TaskID]bool{}
				for _, r := range res {
					if r.Err != nil || r.Score.Value != cpuScore || r.Rung != ladder.Cpu || r.Backend != "cpu" {
						t.Fatalf("task %d: %+v", r.ID, r)
					}
					if seen[r.ID] {
						t.Fatalf("task %d twice", r.ID)
					}
					seen[r.ID] = true
					// Every GPU rung is in the trace, left for a reason.
					for i, g := range gpuRungs {
						if r.Trace[i].Rung != g || r.Trace[i].Trigger == ladder.TriggerNone {
							t.Fatalf("task %d trace %v", r.ID, r.Trace)
						}
					}
				}
				if len(seen) != n {
					t.Fatalf("%d distinct results", len(seen))
				}
				if fk == faultPredicted {
					for _, g := range gpuRungs {
						if p, _ := h.gpu.count(g.Mode()); p != 0 {
							t.Fatalf("predicted OOM still prepared %d times on %v", p, g)
						}
					}
					return
				}
				// Each rung failed for real once; the persisted cell kept
				// every later task (even those already queued) off it.
				for _, g := range gpuRungs {
					p, s := h.gpu.count(g.Mode())
					if fk == faultConstructor && p != 1 || fk == faultRuntime && s != 1 {
						t.Fatalf("%v: %d prepares %d scores; want one real failure", g, p, s)
					}
				}
				cells := loadCells(t, h, m)
				if len(cells) != len(gpuRungs) {
					t.Fatalf("cells on disk %v, want one per GPU rung", cells)
				}
				for _, g := range gpuRungs {
					if !containsCell(cells, g.Class()) {
						t.Fatalf("cells %v lack %s", cells, g.Class())
					}
				}
			})
		}
	}
}

func containsCell(cells []capability.Cell, class string) bool {
	for _, c := range cells {
		if c.Backend == class && c.Pixels == 64*48 {
			return true
		}
	}
	return false
}

func TestOOMOnFullOnlyEndsOnStrip(t *testing.T) {
	for _, fk := range []fault{faultPredicted, faultConstructor, faultRuntime} {
		h := newHarness(t, true)
		h.gpu.faults[zenmetrics.ModeFull] = fk
		r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(32, 32, 1))[0])
		if r.Err != nil || r.Rung != ladder.GpuStrip || r.Score.Value != gpuScore {
			t.Fatalf("fault %d: %+v", fk, r)
		}
	}
}

func TestNoFallbackOneBackendThenExhausted(t *testing.T) {
	for _, fk := range []fault{faultConstructor, faultRuntime} {
		h := newHarness(t, true, func(c *Config, _ *harness) { c.OomRetry = ladder.NoFallback })
		h.gpu.faults[zenmetrics.ModeFull] = fk
		r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(32, 32, 1))[0])
		if r.Rung != ladder.FullyExhausted || r.Attempts != 1 {
			t.Fatalf("fault %d: rung %v attempts %d", fk, r.Rung, r.Attempts)
		}
		if !errors.Is(r.Err, ladder.ErrExhausted) || !errors.Is(r.Err, zenmetrics.ErrOutOfMemory) {
			t.Fatalf("error %v", r.Err)
		}
		if h.cpu.totalPrepares() != 0 {
			t.Fatal("NoFallback tried a second backend")
		}
		if p, _ := h.gpu.count(zenmetrics.ModeStrip); p != 0 {
			t.Fatal("NoFallback tried strips")
		}
		if len(loadCells(t, h, zenmetrics.SSIMULACRA2)) != 1 {
			t.Fatal("NoFallback must still persist the cell")
		}
	}
}

// A cell recorded by one process is honoured by the next: the failed
// rung is never attempted again on this machine.
func TestOOMCellPersistsAcrossOrchestrators(t *testing.T) {
	h := newHarness(t, true)
	h.gpu.faults[zenmetrics.ModeFull] = faultConstructor
	ref := img(40, 30, 9)
	if r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, ref)[0]); r.Rung != ladder.GpuStrip {
		t.Fatalf("first run: %+v", r)
	}
	h.o.Close()
	// A new process (new orchestrator, new fakes), same cache directory.
	gpu2 := newFake("fakegpu", gpuScore)
	cfg := Config{CacheDir: h.dir}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{{name: "cpu", gpuIndex: -1, backend: newFake("cpu", cpuScore)},
			{name: "fakegpu", gpu: true, backend: gpu2}}, nil
	}
	o2, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	r := o2.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, ref)[0])
	if r.Err != nil || r.Rung != ladder.GpuStrip {
		t.Fatalf("second process: %+v", r)
	}
	if p, _ := gpu2.count(zenmetrics.ModeFull); p != 0 {
		t.Fatal("second process tried the recorded cell again")
	}
	if r.Trace[0].Trigger != ladder.TriggerPredicted || !strings.Contains(r.Trace[0].Reason, "profile cell") {
		t.Fatalf("trace %v", r.Trace)
	}
	// Smaller images are not affected by the cell.
	r = o2.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(20, 20, 3))[0])
	if r.Rung != ladder.GpuFull {
		t.Fatalf("smaller image: %+v", r)
	}
}

func TestVRAMHeadroomFactor(t *testing.T) {
	for _, c := range []struct {
		estMiB int64
		want   ladder.Rung
	}{{849, ladder.GpuFull}, {851, ladder.Cpu}} {
		h := newHarness(t, true)
		h.gpuFree.Store(1000 << 20)
		h.gpu.bytes = c.estMiB << 20
		r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0])
		if r.Err != nil || r.Rung != c.want {
			t.Fatalf("estimate %d MiB of 1000 free: %+v", c.estMiB, r)
		}
	}
}

func TestUnsupportedRungSkippedVisibly(t *testing.T) {
	h := newHarness(t, true)
	h.gpu.faults[zenmetrics.ModeFull] = faultRuntime
	h.gpu.faults[zenmetrics.ModeStrip] = faultUnsupported
	r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0])
	if r.Err != nil || r.Rung != ladder.Cpu || len(r.Trace) != 3 {
		t.Fatalf("%+v", r)
	}
	if s := r.Trace[1]; s.Rung != ladder.GpuStrip || s.Trigger != ladder.TriggerUnsupported || s.Attempted {
		t.Fatalf("strip step %v", s)
	}
	if r.Attempts != 2 {
		t.Fatalf("attempts %d", r.Attempts)
	}
}

func TestDeviceLostMovesToCPU(t *testing.T) {
	h := newHarness(t, true)
	h.gpu.faults[zenmetrics.ModeFull] = faultDeviceLost
	res := collect(t, h.o.RunAll(context.Background(), tasks(zenmetrics.SSIMULACRA2, 5, img(16, 16, 1))), 5)
	for _, r := range res {
		if r.Err != nil || r.Score.Value != cpuScore {
			t.Fatalf("%+v", r)
		}
	}
	if _, s := h.gpu.count(zenmetrics.ModeFull); s != 1 {
		t.Fatalf("lost device was used %d times", s)
	}
	if len(loadCellsOrNil(h)) != 0 {
		t.Fatal("a lost device is not an OOM cell")
	}
}

func loadCellsOrNil(h *harness) []capability.Cell {
	p, err := (&capability.Store{Dir: h.dir}).Load(context.Background(), capability.ReportHash(testReport))
	if err != nil {
		return nil
	}
	return p.OOMCells(zenmetrics.SSIMULACRA2)
}

func TestPanicBecomesThatTasksError(t *testing.T) {
	h := newHarness(t, false)
	h.cpu.panicOn = 3
	const n = 12
	res := collect(t, h.o.RunAll(context.Background(), tasks(zenmetrics.SSIMULACRA2, n, img(16, 16, 250))), n)
	panics := 0
	for _, r := range res {
		var pe *zenmetrics.PanicError
		switch {
		case errors.As(r.Err, &pe):
			panics++
			if r.ID != 4 { // dist tag 3 is task 4
				t.Fatalf("panic reported on task %d", r.ID)
			}
		case r.Err != nil || r.Score.Value != cpuScore:
			t.Fatalf("%+v", r)
		}
	}
	if panics != 1 {
		t.Fatalf("%d panic results", panics)
	}
	// The pool survived: more work still runs.
	if r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
}

func TestCancellationYieldsCancelledResults(t *testing.T) {
	h := newHarness(t, false, func(c *Config, _ *harness) { c.MaxParallelCPU = 1 })
	// The running task's backend ignores cancellation: the queued ones
	// must still end at once, not when the worker gets to them.
	h.cpu.gate = make(chan struct{})
	h.cpu.ignoreCtx = true
	h.cpu.scoreSeen = make(chan struct{}, 1)
	var openGate sync.Once
	t.Cleanup(func() { openGate.Do(func() { close(h.cpu.gate) }) }) // before Close, if we fail early
	ctx, cancel := context.WithCancel(context.Background())
	const n = 10
	ch := h.o.RunAll(ctx, tasks(zenmetrics.SSIMULACRA2, n, img(16, 16, 1)))
	<-h.cpu.scoreSeen // one task is running, nine are queued
	cancel()
	early := collectN(t, ch, n-1)
	for _, r := range early {
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("task %d: %v", r.ID, r.Err)
		}
	}
	openGate.Do(func() { close(h.cpu.gate) })
	// The running task's backend finished its work regardless: a score
	// that was computed is delivered, not thrown away.
	last := collect(t, ch, 1)[0]
	if last.Err != nil || last.Score.Value != cpuScore {
		t.Fatalf("running task: %+v", last)
	}
	// RunSingle with a cancelled context, and a later healthy run.
	if r := h.o.RunSingle(ctx, tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0]); !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("RunSingle on a cancelled ctx: %v", r.Err)
	}
	if r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
}

// collectN reads exactly n results without waiting for the channel to close.
func collectN(t *testing.T, ch <-chan Result, n int) []Result {
	t.Helper()
	var out []Result
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case r := <-ch:
			out = append(out, r)
		case <-timeout:
			t.Fatalf("only %d of %d results arrived", len(out), n)
		}
	}
	return out
}

func TestSubmitAndPoll(t *testing.T) {
	h := newHarness(t, true)
	ids := map[TaskID]bool{}
	for _, tk := range tasks(zenmetrics.SSIMULACRA2, 30, img(16, 16, 1)) {
		tk.ID = 0 // let Submit assign
		id, err := h.o.Submit(tk)
		if err != nil || id == 0 || ids[id] {
			t.Fatalf("id %d err %v", id, err)
		}
		ids[id] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 30 {
		r, err := h.o.PollAnyBlocking(ctx)
		if err != nil || r.Err != nil || !ids[r.ID] {
			t.Fatalf("%+v %v", r, err)
		}
		delete(ids, r.ID)
	}
	if _, ok := h.o.PollAny(); ok {
		t.Fatal("extra result")
	}
	if _, err := h.o.PollAnyBlocking(ctx); !errors.Is(err, ErrNoPending) {
		t.Fatalf("nothing pending: %v", err)
	}
}

func TestCloseEndsQueuedTasks(t *testing.T) {
	h := newHarness(t, false, func(c *Config, _ *harness) { c.MaxParallelCPU = 1 })
	h.cpu.gate = make(chan struct{})
	h.cpu.scoreSeen = make(chan struct{}, 1)
	for _, tk := range tasks(zenmetrics.SSIMULACRA2, 5, img(16, 16, 1)) {
		if _, err := h.o.Submit(tk); err != nil {
			t.Fatal(err)
		}
	}
	<-h.cpu.scoreSeen
	done := make(chan struct{})
	go func() { h.o.Close(); close(done) }()
	<-done // the running task sees its ctx cancelled (Close cancels it)
	n := 0
	for {
		r, ok := h.o.PollAny()
		if !ok {
			break
		}
		n++
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("task %d: %v", r.ID, r.Err)
		}
	}
	if n != 5 {
		t.Fatalf("%d results after Close, want 5", n)
	}
	if _, err := h.o.Submit(tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if r := h.o.RunSingle(context.Background(), tasks(zenmetrics.SSIMULACRA2, 1, img(16, 16, 1))[0]); !errors.Is(r.Err, ErrClosed) {
		t.Fatalf("RunSingle after Close: %v", r.Err)
	}
}

func TestInvalidTasksGetOneErrorResult(t *testing.T) {
	h := newHarness(t, false)
	ref := img(16, 16, 1)
	bad := []Task{
		{ID: 1, Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: nil},
		{ID: 2, Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: img(8, 8, 1)},
		{ID: 3, Metric: 0, Ref: ref, Dist: ref},
		{ID: 4, Metric: zenmetrics.SSIMULACRA2, Ref: nil, Dist: ref},
		{ID: 5, Metric: zenmetrics.SSIMULACRA2, RefHandle: 999, Dist: ref},
		{ID: 6, Metric: zenmetrics.SSIMULACRA2, Ref: &zenmetrics.Image{Width: 16, Height: 16, Format: zenmetrics.RGB8, Stride: 48, Pix: make([]byte, 10)}, Dist: ref},
	}
	want := map[TaskID]error{1: zenmetrics.ErrBadInput, 2: zenmetrics.ErrSizeMismatch, 3: zenmetrics.ErrUnsupported,
		4: zenmetrics.ErrBadInput, 5: ErrReferenceDropped, 6: zenmetrics.ErrBadInput}
	for _, r := range collect(t, h.o.RunAll(context.Background(), bad), len(bad)) {
		if !errors.Is(r.Err, want[r.ID]) {
			t.Fatalf("task %d: %v, want %v", r.ID, r.Err, want[r.ID])
		}
	}
}

func TestUnimplementedMetricIsExhaustedUnsupported(t *testing.T) {
	h := newHarness(t, false)
	h.cpu.metrics = map[zenmetrics.Metric]bool{zenmetrics.SSIMULACRA2: true}
	r := h.o.RunSingle(context.Background(), tasks(zenmetrics.Butteraugli, 1, img(16, 16, 1))[0])
	if !errors.Is(r.Err, zenmetrics.ErrUnsupported) || r.Rung != ladder.FullyExhausted || r.Attempts != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestReferenceCacheReuse(t *testing.T) {
	h := newHarness(t, false)
	ref := img(32, 32, 7)
	res := collect(t, h.o.RunAll(context.Background(), tasks(zenmetrics.SSIMULACRA2, 20, ref)), 20)
	hits := 0
	for _, r := range res {
		if r.CacheHit {
			hits++
		}
	}
	if h.cpu.totalPrepares() != 1 || hits != 19 {
		t.Fatalf("%d prepares, %d hits", h.cpu.totalPrepares(), hits)
	}
	// Same pixels in another buffer hit too (content hash, not pointer).
	ref2 := img(32, 32, 7)
	r := h.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: ref2, Dist: ref2})
	if !r.CacheHit {
		t.Fatal("equal pixels missed")
	}
	s := h.o.CachedRefStats()
	if s.Hits != 20 || s.Misses != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Other options are another prepared reference.
	r = h.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: ref2, Dist: ref2, Options: zenmetrics.Options{IntensityTarget: 250}})
	if r.CacheHit {
		t.Fatal("other options hit")
	}
}

// TestRefHashGiven: a task's RefHash keys the reference cache in place of
// hashing Ref (the batch hashes each decoded reference once): a reference
// with other pixels but the first one's hash reuses the first's prepared
// reference; without RefHash it is hashed and prepared anew.
func TestRefHashGiven(t *testing.T) {
	h := newHarness(t, false)
	ctx := context.Background()
	a, b := img(32, 32, 7), img(32, 32, 9)
	ha := refcache.HashImage(a)
	if r := h.o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, Ref: a, RefHash: ha, Dist: a}); r.Err != nil || r.CacheHit {
		t.Fatalf("first: %+v", r)
	}
	if r := h.o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, Ref: b, RefHash: ha, Dist: b}); r.Err != nil || !r.CacheHit || h.cpu.totalPrepares() != 1 {
		t.Fatalf("given hash: %+v, %d prepares", r, h.cpu.totalPrepares())
	}
	if r := h.o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, Ref: b, Dist: b}); r.Err != nil || r.CacheHit || h.cpu.totalPrepares() != 2 {
		t.Fatalf("own hash: %+v, %d prepares", r, h.cpu.totalPrepares())
	}
}

func TestUploadUseDropHandle(t *testing.T) {
	h := newHarness(t, true, func(c *Config, _ *harness) { c.MaxParallelCPU = 1 })
	ctx := context.Background()
	ref := img(32, 32, 5)
	hd, err := h.o.UploadReference(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := h.o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, RefHandle: hd, Dist: img(32, 32, byte(i))})
		if r.Err != nil || !r.CacheHit || r.Backend != "fakegpu" {
			t.Fatalf("%+v", r)
		}
	}
	if h.gpu.totalPrepares() != 1 {
		t.Fatalf("%d prepares for an uploaded reference", h.gpu.totalPrepares())
	}
	// One task runs (blocked), three wait behind it; drop the handle.
	h.gpu.gate = make(chan struct{})
	h.gpu.scoreSeen = make(chan struct{}, 1)
	var ts []Task
	for i := range 4 {
		ts = append(ts, Task{ID: TaskID(i + 1), Metric: zenmetrics.SSIMULACRA2, RefHandle: hd, Dist: img(32, 32, byte(i))})
	}
	ch := h.o.RunAll(ctx, ts)
	<-h.gpu.scoreSeen
	if err := h.o.DropReference(hd); err != nil {
		t.Fatal(err)
	}
	if h.gpu.releases.Load() != 0 {
		t.Fatal("released while a task uses it")
	}
	close(h.gpu.gate)
	ok, dropped := 0, 0
	for _, r := range collect(t, ch, 4) {
		switch {
		case r.Err == nil:
			ok++
		case errors.Is(r.Err, ErrReferenceDropped):
			dropped++
		default:
			t.Fatalf("%+v", r)
		}
	}
	if ok != 1 || dropped != 3 {
		t.Fatalf("%d ok, %d dropped", ok, dropped)
	}
	if h.gpu.releases.Load() != 1 {
		t.Fatalf("released %d times", h.gpu.releases.Load())
	}
	if err := h.o.DropReference(hd); !errors.Is(err, ErrReferenceDropped) {
		t.Fatalf("double drop: %v", err)
	}
}

// A task with a GPU handle whose rung later runs out of memory falls back
// to the CPU, preparing from the handle's pixels.
func TestHandleTaskFallsBack(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	hd, err := h.o.UploadReference(ctx, zenmetrics.SSIMULACRA2, img(32, 32, 5), zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.gpu.faults[zenmetrics.ModeFull] = faultRuntime
	h.gpu.faults[zenmetrics.ModeStrip] = faultRuntime
	r := h.o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, RefHandle: hd, Dist: img(32, 32, 1)})
	if r.Err != nil || r.Backend != "cpu" || r.Score.Value != cpuScore {
		t.Fatalf("%+v", r)
	}
}

func TestSetPoolConfigChangesCPUParallelism(t *testing.T) {
	h := newHarness(t, false, func(c *Config, _ *harness) { c.MaxParallelCPU = 1 })
	h.cpu.delay = 5 * time.Millisecond
	collect(t, h.o.RunAll(context.Background(), tasks(zenmetrics.SSIMULACRA2, 8, img(16, 16, 1))), 8)
	if m := h.cpu.maxRun.Load(); m != 1 {
		t.Fatalf("max concurrency %d with 1 worker", m)
	}
	h.o.SetPoolConfig(PoolConfig{MaxParallelCPU: 4})
	h.cpu.maxRun.Store(0)
	collect(t, h.o.RunAll(context.Background(), tasks(zenmetrics.SSIMULACRA2, 16, img(16, 16, 2))), 16)
	if m := h.cpu.maxRun.Load(); m < 2 || m > 4 {
		t.Fatalf("max concurrency %d with 4 workers", m)
	}
}

// Under concurrency (race detector) every one of many tasks yields exactly
// one result through each API at once.
func TestManyTasksExactlyOnce(t *testing.T) {
	h := newHarness(t, true, func(c *Config, _ *harness) { c.MaxParallelCPU = 3 })
	h.gpu.faults[zenmetrics.ModeFull] = faultRuntime
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := collect(t, h.o.RunAll(ctx, tasks(zenmetrics.SSIMULACRA2, 50, img(24, 24, byte(g)))), 50)
			seen := map[TaskID]bool{}
			for _, r := range res {
				if r.Err != nil || seen[r.ID] {
					t.Errorf("%+v dup=%v", r, seen[r.ID])
				}
				seen[r.ID] = true
			}
		}()
	}
	wg.Wait()
}

func TestColdGPUPrefersCPUForOneSmallTask(t *testing.T) {
	opened := 0
	h := newHarness(t, false)
	h.o.Close()
	gpu := newFake("fakegpu", gpuScore)
	cfg := Config{CacheDir: t.TempDir(), MaxParallelCPU: 2}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{{name: "cpu", gpuIndex: -1, backend: newFake("cpu", cpuScore)},
			{name: "fakegpu", gpu: true, gpuIndex: 0, initGuess: 300 * time.Millisecond,
				open: func(context.Context) (zenmetrics.Backend, error) { opened++; return gpu, nil }}}, nil
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// 64×64 on the CPU at the default 100 ns/px: 0.4 ms ≪ 300 ms init.
	r := o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(64, 64, 1), Dist: img(64, 64, 2)})
	if r.Err != nil || r.Backend != "cpu" || opened != 0 {
		t.Fatalf("small cold task: %+v, GPU opened %d times", r, opened)
	}
	if !strings.Contains(r.Trace[0].Reason, "cpu predicted to finish sooner") {
		t.Fatalf("trace %v", r.Trace)
	}
	// 2048×2048: CPU 420 ms > 300 ms init + 4 ms: worth opening the GPU.
	big := img(2048, 2048, 1)
	r = o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: big, Dist: big})
	if r.Err != nil || r.Backend != "fakegpu" || opened != 1 {
		t.Fatalf("big cold task: %+v, opened %d", r, opened)
	}
}

func TestWarmThroughOrchestrator(t *testing.T) {
	h := newHarness(t, true, func(c *Config, _ *harness) {
		c.BenchSides = []int{32, 64}
		c.BenchMetrics = []zenmetrics.Metric{zenmetrics.SSIMULACRA2}
	})
	res, err := h.o.Warm(context.Background())
	if err != nil || !res.Benched {
		t.Fatalf("%+v %v", res, err)
	}
	p := h.o.Profile()
	for _, class := range []string{"gpu_full", "gpu_strip", "cpu"} {
		if len(p.Samples(zenmetrics.SSIMULACRA2, class)) != 2 {
			t.Fatalf("%s samples %v", class, p.Samples(zenmetrics.SSIMULACRA2, class))
		}
	}
	if len(p.Samples(zenmetrics.SSIMULACRA2, "gpu_strip_pair")) != 0 {
		t.Fatal("strip pairs benched for ssim2")
	}
	res, err = h.o.Warm(context.Background())
	if err != nil || res.Benched {
		t.Fatalf("second Warm re-benched: %+v %v", res, err)
	}
	if res, err = h.o.Bench(context.Background()); err != nil || !res.Benched {
		t.Fatalf("Bench did not bench: %v", err)
	}
}

// Through the orchestrator the real CPU backend gives the same bits as a
// direct call, cached reference or not.
func TestRealCPUMatchesDirect(t *testing.T) {
	o := cpuOnly(t, 2)
	ref, dist := capability.SyntheticPair(96, 80, 3)
	want, err := zenmetrics.ScoreOnce(context.Background(), cpu.New(cpu.Config{}), zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := make([]Task, 6)
	for i := range ts {
		ts[i] = Task{ID: TaskID(i + 1), Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: dist}
	}
	hits := 0
	for _, r := range collect(t, o.RunAll(context.Background(), ts), len(ts)) {
		if r.Err != nil || r.Score.Value != want.Value || r.Backend != "cpu" || r.Rung != ladder.Cpu {
			t.Fatalf("%+v, want %v", r, want.Value)
		}
		if r.CacheHit {
			hits++
		}
	}
	if hits != len(ts)-1 {
		t.Fatalf("%d cache hits", hits)
	}
	// CVVDP (the last metric the CPU backend gained) gives the direct
	// call's bits too.
	wantJOD, err := zenmetrics.ScoreOnce(context.Background(), cpu.New(cpu.Config{}), zenmetrics.CVVDP, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := o.RunSingle(context.Background(), Task{Metric: zenmetrics.CVVDP, Ref: ref, Dist: dist})
	if r.Err != nil || r.Score.Value != wantJOD.Value || r.Backend != "cpu" {
		t.Fatalf("cvvdp on cpu: %+v, want %v", r, wantJOD.Value)
	}
	// A metric the CPU backend does not implement (no valid metric is
	// left unimplemented there) ends exhausted.
	r = o.RunSingle(context.Background(), Task{Metric: zenmetrics.Metric(200), Ref: ref, Dist: dist})
	if !errors.Is(r.Err, zenmetrics.ErrUnsupported) {
		t.Fatalf("metric(200) on cpu: %v", r.Err)
	}
}
