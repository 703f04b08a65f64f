package capability

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// fakeBackend costs nsPerPx of wall time per pixel, refuses sizes above
// maxPx with ErrOutOfMemory, and counts Prepare calls.
type fakeBackend struct {
	name     string
	nsPerPx  float64
	maxPx    int64 // 0: no limit
	noModes  map[zenmetrics.Mode]bool
	metrics  map[zenmetrics.Metric]bool // nil: all
	prepares atomic.Int64
}

func (f *fakeBackend) Name() string { return f.name }
func (f *fakeBackend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if f.noModes[mode] || (f.metrics != nil && !f.metrics[m]) {
		return 0, false
	}
	return int64(w) * int64(h) * 16, true
}
func (f *fakeBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	f.prepares.Add(1)
	if f.maxPx > 0 && ref.Pixels() > f.maxPx {
		return nil, &zenmetrics.OutOfMemoryError{Backend: f.name, Requested: ref.Pixels() * 16, Free: -1}
	}
	return fakeRef{f, ref.Pixels()}, nil
}
func (f *fakeBackend) Close() error { return nil }

type fakeRef struct {
	f  *fakeBackend
	px int64
}

func (r fakeRef) Score(ctx context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	time.Sleep(time.Duration(r.f.nsPerPx * float64(r.px)))
	return zenmetrics.Score{Value: 1}, nil
}
func (r fakeRef) Release() {}

var smallSides = []int{64, 128, 256}

func TestBenchRecordsAndLimits(t *testing.T) {
	gpu := &fakeBackend{name: "gpu", nsPerPx: 0.01, maxPx: 128 * 128, noModes: map[zenmetrics.Mode]bool{zenmetrics.ModeStripPair: true}}
	cpu := &fakeBackend{name: "cpu", nsPerPx: 0.5}
	p := NewProfile(testReport(), time.Now())
	// A stale OOM cell at a size the bench will show to work is cleared.
	p.RecordOOM(zenmetrics.SSIMULACRA2, Cell{ClassGPUFull, 64 * 64})
	cfg := BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Sides:   smallSides,
		// Settling is TestSettle*'s; here it would only add runs.
		Settle: SettleConfig{Cap: -1},
		Targets: []BenchTarget{
			{Class: ClassGPUFull, Backend: gpu, Mode: zenmetrics.ModeFull, RecordVRAM: true},
			{Class: ClassGPUStripPair, Backend: gpu, Mode: zenmetrics.ModeStripPair, RecordVRAM: true},
			{Class: ClassCPU, Backend: cpu, MaxPixels: 128 * 128},
		},
	}
	rep, err := Bench(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 9 {
		t.Fatalf("%d results, want 3 targets × 3 sizes", len(rep.Results))
	}
	byKey := map[string]BenchResult{}
	for _, r := range rep.Results {
		byKey[r.Class+"/"+strconv.Itoa(r.Side)] = r
	}
	if r := byKey["gpu_full/128"]; r.NsPerPx <= 0 || r.VRAMMiB != float64(128*128*16)/(1<<20) || len(r.Runs) != DefaultGPURuns {
		t.Fatalf("gpu_full/128: %+v", r)
	}
	if r := byKey["gpu_full/256"]; !errors.Is(r.Err, zenmetrics.ErrOutOfMemory) {
		t.Fatalf("gpu_full/256 should OOM: %+v", r)
	}
	if r := byKey["gpu_strip_pair/64"]; r.Skipped != "unsupported" {
		t.Fatalf("strip pair: %+v", r)
	}
	if r := byKey["cpu/256"]; r.Skipped == "" {
		t.Fatalf("cpu above its bench size ran: %+v", r)
	}
	cells := p.OOMCells(zenmetrics.SSIMULACRA2)
	if len(cells) != 1 || cells[0] != (Cell{ClassGPUFull, 256 * 256}) {
		t.Fatalf("cells %+v, want only the new gpu_full@256²", cells)
	}
	if s := p.Samples(zenmetrics.SSIMULACRA2, ClassCPU); len(s) != 2 {
		t.Fatalf("cpu samples %+v", s)
	}
	// 1 warm-up (cheap runs warm up at every size) + 3 runs per measured
	// cell, 5 on the GPU; the OOM cell fails at the first. The GPU lane
	// first primes gpu_full at 64² (its strip pairs are unsupported).
	// gpu: 1 + 64,128 measured (12) + 256 (1); cpu: 64,128 (8)
	if n := gpu.prepares.Load(); n != 14 {
		t.Fatalf("gpu prepares %d, want 14", n)
	}
	if n := cpu.prepares.Load(); n != 8 {
		t.Fatalf("cpu prepares %d, want 8", n)
	}
	if p.LastValidated.IsZero() || p.Metric(zenmetrics.SSIMULACRA2).LastMeasured.IsZero() {
		t.Fatal("timestamps not set")
	}
}

func TestBenchSoftTimeLimit(t *testing.T) {
	slow := &fakeBackend{name: "cpu", nsPerPx: 200} // 64²: ~0.8 ms a run
	p := NewProfile(testReport(), time.Now())
	cfg := BenchConfig{
		Metrics:   []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Sides:     smallSides,
		Targets:   []BenchTarget{{Class: ClassCPU, Backend: slow}},
		TimeLimit: 5 * time.Millisecond,
	}
	rep, err := Bench(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	// 64² takes ~3.3 ms (a warm-up and 3 runs); 128² is predicted at
	// 2 runs × 3.3 ms × 1.2 ≈ 8 ms: over the limit.
	if rep.Results[0].NsPerPx <= 0 {
		t.Fatalf("smallest size must run: %+v", rep.Results[0])
	}
	for _, r := range rep.Results[1:] {
		if !strings.HasPrefix(r.Skipped, "time limit") {
			t.Fatalf("%d² not skipped by the time limit: %+v", r.Side, r)
		}
	}
	if rep.Elapsed > time.Second {
		t.Fatalf("bench took %v", rep.Elapsed)
	}
}

func TestSyntheticPair(t *testing.T) {
	a, b := SyntheticPair(97, 61, 7)
	a2, _ := SyntheticPair(97, 61, 7)
	c, _ := SyntheticPair(97, 61, 8)
	if string(a.Pix) != string(a2.Pix) {
		t.Fatal("not deterministic")
	}
	if string(a.Pix) == string(c.Pix) {
		t.Fatal("seed ignored")
	}
	if string(a.Pix) == string(b.Pix) {
		t.Fatal("distorted equals reference")
	}
	hist := map[byte]int{}
	for _, v := range a.Pix {
		hist[v]++
	}
	if len(hist) < 100 {
		t.Fatalf("only %d distinct sample values: not photo-like", len(hist))
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
}

func warmCfg(dir string, now time.Time, b *fakeBackend) WarmConfig {
	log, _ := newTestLogger()
	return WarmConfig{
		Store:  &Store{Dir: dir},
		Report: testReport(),
		Now:    func() time.Time { return now },
		Logger: log,
		Bench: BenchConfig{
			Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
			Sides:   []int{32, 64},
			Targets: []BenchTarget{{Class: ClassCPU, Backend: b}},
		},
	}
}

func TestWarmBenchesOnlyWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	ctx := context.Background()

	res, err := Warm(ctx, warmCfg(dir, now, b))
	if err != nil || !res.Benched || res.Reason != StaleMissing {
		t.Fatalf("first warm: %+v %v", res, err)
	}
	if _, err := os.Stat(res.Path); err != nil {
		t.Fatal(err)
	}
	n := b.prepares.Load()
	res, err = Warm(ctx, warmCfg(dir, now.Add(time.Hour), b))
	if err != nil || res.Benched || b.prepares.Load() != n {
		t.Fatalf("second warm re-benched a fresh profile: %+v %v", res, err)
	}
	if len(res.Profile.Samples(zenmetrics.SSIMULACRA2, ClassCPU)) != 2 {
		t.Fatal("loaded profile lost its samples")
	}
	cfg := warmCfg(dir, now.Add(time.Hour), b)
	cfg.Force = true
	if res, _ = Warm(ctx, cfg); !res.Benched {
		t.Fatal("force did not bench")
	}
	res, _ = Warm(ctx, warmCfg(dir, now.Add(8*24*time.Hour), b))
	if !res.Benched || res.Reason != StaleAge {
		t.Fatalf("8-day-old profile: benched=%v reason=%q", res.Benched, res.Reason)
	}
	cfg = warmCfg(dir, now.Add(9*24*time.Hour), b)
	cfg.Validity = 30 * 24 * time.Hour
	if res, _ = Warm(ctx, cfg); res.Benched {
		t.Fatal("custom validity ignored")
	}
}

func TestWarmCorruptFileWarnsAndRebenches(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	cfg := warmCfg(dir, now, b)
	log, lb := newTestLogger()
	cfg.Logger = log
	path, _ := cfg.Store.Path(ReportHash(cfg.Report))
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(path, []byte("schema_version = 1\nmachine_hash = [oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Warm(context.Background(), cfg)
	if err != nil {
		t.Fatalf("corrupt profile must not be fatal: %v", err)
	}
	if !res.Benched || !errors.Is(res.LoadErr, ErrCorruptProfile) {
		t.Fatalf("benched=%v loadErr=%v", res.Benched, res.LoadErr)
	}
	if !strings.Contains(lb.String(), "level=WARN") || !strings.Contains(lb.String(), "unusable") {
		t.Fatalf("no warning logged: %s", lb.String())
	}
	if _, err := cfg.Store.Load(context.Background(), ReportHash(cfg.Report)); err != nil {
		t.Fatalf("re-benched profile not saved: %v", err)
	}
}

func TestWarmForeignProfileRebenches(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	cfg := warmCfg(dir, now, b)
	log, lb := newTestLogger()
	cfg.Logger = log
	// Fleet sharing gone wrong: a profile measured elsewhere, renamed to
	// this machine's file name, with made-up fast numbers.
	other := testReport()
	other.GPUs[0].Name = "Much Faster GPU"
	op := sampleProfile(now)
	op.GPUs = other.GPUs
	op.MachineHash = MachineHash(op.CPU, op.GPUs)
	data, _ := op.Marshal()
	path, _ := cfg.Store.Path(ReportHash(cfg.Report))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(path, data, 0o644)
	res, err := Warm(context.Background(), cfg)
	if err != nil || !res.Benched || !errors.Is(res.LoadErr, ErrForeignProfile) {
		t.Fatalf("foreign profile: benched=%v loadErr=%v err=%v", res.Benched, res.LoadErr, err)
	}
	if !strings.Contains(lb.String(), "level=WARN") {
		t.Fatalf("no warning: %s", lb.String())
	}
	if res.Profile.GPUs[0].Name != "Test GPU" {
		t.Fatalf("new profile kept foreign hardware: %+v", res.Profile.GPUs)
	}
	// A correctly shared profile (same hardware) is used as is.
	b2 := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	res, err = Warm(context.Background(), warmCfg(dir, now, b2))
	if err != nil || res.Benched || b2.prepares.Load() != 0 {
		t.Fatalf("shared profile of identical hardware re-benched: %+v %v", res, err)
	}
}

func TestWarmGPUDriverChangeRebenches(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	cfg := warmCfg(dir, now, b)
	if _, err := Warm(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg2 := warmCfg(dir, now, b)
	cfg2.Report.GPUs[0].Driver = "2.0.0"
	res, err := Warm(context.Background(), cfg2)
	if err != nil || !res.Benched {
		t.Fatalf("driver update not noticed: %+v %v", res, err)
	}
	if res.Profile.GPUs[0].Driver != "2.0.0" {
		t.Fatal("new profile has the old driver")
	}
}

func TestWarmKeepsOOMCellsOfSameMachine(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	cfg := warmCfg(dir, now, b)
	res, _ := Warm(context.Background(), cfg)
	hash := res.Profile.MachineHash
	err := cfg.Store.Update(context.Background(), hash, func(cur *Profile, _ error) (*Profile, error) {
		cur.RecordOOM(zenmetrics.SSIMULACRA2, Cell{ClassGPUFull, 1 << 30})
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Force = true
	res, _ = Warm(context.Background(), cfg)
	if c := res.Profile.OOMCells(zenmetrics.SSIMULACRA2); len(c) != 1 {
		t.Fatalf("re-bench forgot the OOM cell: %+v", c)
	}
}

// gateBackend's Score waits until the other backend (peer) has started a
// Score, or gives up after a while and says so: two lanes benched one
// after the other never meet.
type gateBackend struct {
	fakeBackend
	started chan struct{} // closed at this backend's first Score
	once    sync.Once
	peer    *gateBackend
	met     atomic.Bool
}

func (g *gateBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	g.prepares.Add(1)
	return gateRef{g}, nil
}

type gateRef struct{ g *gateBackend }

func (r gateRef) Score(ctx context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	r.g.once.Do(func() { close(r.g.started) })
	select {
	case <-r.g.peer.started:
		r.g.met.Store(true)
	case <-time.After(5 * time.Second):
	}
	return zenmetrics.Score{Value: 1}, nil
}
func (r gateRef) Release() {}

// GPU targets in different lanes (two devices) run side by side; the
// cells still come out in size, metric, target order, the CPU's with
// them although it ran after them (TestBenchCPUNeverBesideGPU).
func TestBenchGPULanesRunSideBySide(t *testing.T) {
	a := &gateBackend{fakeBackend: fakeBackend{name: "gpu0"}, started: make(chan struct{})}
	c := &gateBackend{fakeBackend: fakeBackend{name: "gpu1"}, started: make(chan struct{})}
	a.peer, c.peer = c, a
	cpu := &fakeBackend{name: "cpu"}
	p := NewProfile(testReport(), time.Now())
	rep, err := Bench(context.Background(), BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Sides:   []int{64},
		Runs:    1,
		Settle:  SettleConfig{Cap: -1},
		Targets: []BenchTarget{{Class: ClassCPU, Backend: cpu}, {Class: ClassGPUFull, Backend: a, Lane: "gpu0"}, {Class: ClassCUDAFull, Backend: c, Lane: "gpu1"}},
	}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !a.met.Load() || !c.met.Load() {
		t.Fatal("the two GPUs' cells did not run at the same time")
	}
	if len(rep.Results) != 3 || rep.Results[0].Class != ClassCPU || rep.Results[1].Class != ClassGPUFull || rep.Results[2].Class != ClassCUDAFull {
		t.Fatalf("results %+v", rep.Results)
	}
}

// concBackend counts the most Prepare calls in flight at once. Each call
// waits (up to a few seconds) until `gate` calls are in, so the count does
// not depend on how fast goroutines start on a loaded machine.
type concBackend struct {
	fakeBackend
	gate      int
	mu        sync.Mutex
	cur, peak int
	full      chan struct{}
}

func (b *concBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	b.mu.Lock()
	b.cur++
	b.peak = max(b.peak, b.cur)
	full := b.full
	if b.cur == b.gate {
		close(b.full)
		b.full = make(chan struct{})
	}
	b.mu.Unlock()
	select {
	case <-full:
	case <-time.After(3 * time.Second):
	}
	b.mu.Lock()
	b.cur--
	b.mu.Unlock()
	return b.fakeBackend.Prepare(ctx, m, ref, o)
}

// A CPU target with Concurrency runs that many tasks at once (fewer when
// MemBytes would be exceeded) and records one time per task.
func TestBenchConcurrentCells(t *testing.T) {
	for _, tc := range []struct {
		name string
		mem  int64
		want int
	}{{"four", 0, 4}, {"memory-bound", 64 * 64 * 16 * 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &concBackend{fakeBackend: fakeBackend{name: "cpu", nsPerPx: 0.1}, gate: tc.want, full: make(chan struct{})}
			p := NewProfile(testReport(), time.Now())
			rep, err := Bench(context.Background(), BenchConfig{
				Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
				Sides:   []int{64},
				Runs:    2,
				Targets: []BenchTarget{{Class: ClassCPU, Backend: b, Concurrency: 4, MemBytes: tc.mem, Path: "4 workers"}},
			}, p)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if b.peak != tc.want || r.Concurrent != tc.want || len(r.Runs) != 2*tc.want || r.Path != "4 workers" {
				t.Fatalf("peak %d in flight, cell %+v; want %d at once, %d runs", b.peak, r, tc.want, 2*tc.want)
			}
			if s := p.Samples(zenmetrics.SSIMULACRA2, ClassCPU); len(s) != 1 || s[0].NsPerPx <= 0 {
				t.Fatalf("samples %+v", s)
			}
		})
	}
}

// The p50 of an even count of runs is the mean of the middle two, not the
// slower of them.
func TestMedianEven(t *testing.T) {
	ms := time.Millisecond
	if got := median([]time.Duration{4 * ms, 2 * ms}); got != 3*ms {
		t.Fatalf("median of 2 ms and 4 ms = %v", got)
	}
	if got := median([]time.Duration{5 * ms, 1 * ms, 3 * ms}); got != 3*ms {
		t.Fatalf("median of 1, 3, 5 ms = %v", got)
	}
}

// TestWarmCancelledSavesNothing: a Warm whose context is already cancelled
// (SIGTERM before the bench began: zmwarm's TestSIGTERMStopsBench failed
// ~1 run in 3 when the signal landed there) returns the context's error,
// with or without a profile on disk to read, and writes no profile: every
// cell skipped as cancelled is not a bench.
func TestWarmCancelledSavesNothing(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, force := range []bool{false, true} {
		dir := t.TempDir()
		cfg := warmCfg(dir, now, b)
		cfg.Force = force
		res, err := Warm(ctx, cfg)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("force %v: Warm with a cancelled context: %v, want context.Canceled", force, err)
		}
		if res != nil && res.Path != "" {
			if _, serr := os.Stat(res.Path); serr == nil {
				t.Errorf("force %v: a profile was saved at %s", force, res.Path)
			}
		}
	}
	// And with the bench itself cancelled after a fresh profile was read
	// (force): nothing replaces the saved file.
	dir := t.TempDir()
	res, err := Warm(context.Background(), warmCfg(dir, now, b))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(res.Path)
	cfg := warmCfg(dir, now.Add(time.Hour), b)
	cfg.Force = true
	if _, err := Warm(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("forced Warm with a cancelled context: %v", err)
	}
	if after, _ := os.ReadFile(res.Path); string(after) != string(before) {
		t.Error("a cancelled bench rewrote the profile")
	}
}
