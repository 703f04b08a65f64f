package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
)

// fault says how a fake backend fails in one mode.
type fault uint8

const (
	faultNone        fault = iota
	faultPredicted         // Estimate reports more bytes than will ever fit
	faultConstructor       // Prepare returns ErrOutOfMemory
	faultRuntime           // Score returns ErrOutOfMemory
	faultUnsupported       // Estimate ok=false
	faultDeviceLost        // Score returns ErrDeviceLost
)

// fakeBackend is an instant (or deliberately slow) backend whose scores
// identify it, with faults injected per mode. Test-only: production code
// has no fault flags.
type fakeBackend struct {
	name   string
	value  float64 // the score it returns
	bytes  int64   // Estimate's answer when no fault
	faults map[zenmetrics.Mode]fault
	// metrics it implements (nil: all)
	metrics map[zenmetrics.Metric]bool
	// panicOn panics inside Score when dist.Pix[0] equals it (≥0).
	panicOn int
	// gate, if set, blocks Score until closed (or ctx ends, unless
	// ignoreCtx: a backend that does not honour cancellation).
	gate      chan struct{}
	ignoreCtx bool
	// delay is spent in Score.
	delay time.Duration

	mu        sync.Mutex
	prepares  map[zenmetrics.Mode]int
	scores    map[zenmetrics.Mode]int
	releases  atomic.Int64
	running   atomic.Int64
	maxRun    atomic.Int64
	scoreSeen chan struct{} // receives a token when a Score starts (if set)
}

func newFake(name string, value float64) *fakeBackend {
	return &fakeBackend{name: name, value: value, bytes: 1 << 20, faults: map[zenmetrics.Mode]fault{}, panicOn: -1,
		prepares: map[zenmetrics.Mode]int{}, scores: map[zenmetrics.Mode]int{}}
}

func (f *fakeBackend) Name() string { return f.name }

func (f *fakeBackend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if f.metrics != nil && !f.metrics[m] {
		return 0, false
	}
	switch f.faults[mode] {
	case faultUnsupported:
		return 0, false
	case faultPredicted:
		return 1 << 50, true
	}
	return f.bytes, true
}

func (f *fakeBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	f.mu.Lock()
	f.prepares[opt.Mode]++
	f.mu.Unlock()
	if f.faults[opt.Mode] == faultConstructor {
		return nil, &zenmetrics.OutOfMemoryError{Backend: f.name, Requested: f.bytes, Free: 0}
	}
	return &fakeRef{f: f, mode: opt.Mode}, nil
}

func (f *fakeBackend) Close() error { return nil }

func (f *fakeBackend) count(mode zenmetrics.Mode) (prepares, scores int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prepares[mode], f.scores[mode]
}

func (f *fakeBackend) totalPrepares() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.prepares {
		n += v
	}
	return n
}

type fakeRef struct {
	f        *fakeBackend
	mode     zenmetrics.Mode
	released atomic.Bool
}

func (r *fakeRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	f := r.f
	if r.released.Load() {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxRun.Load()
		if n <= m || f.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	f.scores[r.mode]++
	f.mu.Unlock()
	if f.scoreSeen != nil {
		select {
		case f.scoreSeen <- struct{}{}:
		default:
		}
	}
	if f.gate != nil {
		done := ctx.Done()
		if f.ignoreCtx {
			done = nil
		}
		select {
		case <-f.gate:
		case <-done:
			return zenmetrics.Score{}, ctx.Err()
		}
	}
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.panicOn >= 0 && int(dist.Pix[0]) == f.panicOn {
		var m map[string]int
		m["boom"]++ // a real nil-map panic, as a metric bug would cause
	}
	switch f.faults[r.mode] {
	case faultRuntime:
		return zenmetrics.Score{}, &zenmetrics.OutOfMemoryError{Backend: f.name, Requested: f.bytes, Free: 0}
	case faultDeviceLost:
		return zenmetrics.Score{}, fmt.Errorf("fake: %w", zenmetrics.ErrDeviceLost)
	}
	return zenmetrics.Score{Value: f.value}, nil
}

func (r *fakeRef) Release() {
	if r.released.CompareAndSwap(false, true) {
		r.f.releases.Add(1)
	}
}

const (
	cpuScore = 42.0
	gpuScore = 41.5
)

var testReport = &capability.Report{
	CPU:  capability.CPUInfo{Brand: "Fake CPU", LogicalCores: 4, Features: []string{"AVX2"}, RAMMiB: 8192},
	GPUs: []capability.GPUInfo{{Name: "Fake GPU", Driver: "1.0", VRAMMiB: 2048}},
}

// harness builds an orchestrator over a fake CPU and optionally a fake,
// already-open GPU with 1 GiB live free memory.
type harness struct {
	o   *Orchestrator
	cpu *fakeBackend
	gpu *fakeBackend
	dir string
	// gpuFree is the live free memory the fake NVML reports.
	gpuFree atomic.Int64
}

type hopt func(*Config, *harness)

func newHarness(t *testing.T, withGPU bool, opts ...hopt) *harness {
	t.Helper()
	h := &harness{cpu: newFake("cpu", cpuScore), dir: t.TempDir()}
	h.gpuFree.Store(1 << 30)
	if withGPU {
		h.gpu = newFake("fakegpu", gpuScore)
	}
	cfg := Config{CacheDir: h.dir, MaxParallelCPU: 2}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	cfg.discover = func(ctx context.Context, cfg Config, rep *capability.Report) ([]backendSlot, error) {
		s := []backendSlot{{name: "cpu", gpuIndex: -1, backend: h.cpu}}
		if h.gpu != nil {
			s = append(s, backendSlot{name: h.gpu.name, gpu: true, gpuIndex: 0, backend: h.gpu,
				free: func() (int64, int64, bool) { return h.gpuFree.Load(), 2 << 30, true }})
		}
		return s, nil
	}
	cfg.Pool.VRAMSampleInterval = time.Nanosecond // always a fresh reading
	for _, o := range opts {
		o(&cfg, h)
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.o = o
	t.Cleanup(func() { o.Close() })
	return h
}

// img returns a small RGB8 image whose first byte is tag (so tests can
// tell distorted images apart and make references differ).
func img(w, h int, tag byte) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for i := range im.Pix {
		im.Pix[i] = byte(i*31) ^ tag
	}
	im.Pix[0] = tag
	return im
}

func collect(t *testing.T, ch <-chan Result, n int) []Result {
	t.Helper()
	var out []Result
	timeout := time.After(20 * time.Second)
	for {
		select {
		case r, ok := <-ch:
			if !ok {
				if len(out) != n {
					t.Fatalf("channel closed after %d results, want %d", len(out), n)
				}
				return out
			}
			out = append(out, r)
		case <-timeout:
			t.Fatalf("timed out with %d of %d results", len(out), n)
		}
	}
}
