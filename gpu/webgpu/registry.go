package webgpu

import (
	"context"
	"fmt"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Metric registration.
//
// Each metric's host code lives in its own package, gpu/webgpu/<metric>,
// which imports this one; so the Backend here cannot import them (an
// import cycle) and instead looks metrics up in a registry that their
// packages fill from init. The places that construct a Backend (the
// orchestrator, the commands, tests) import gpu/webgpu/all, whose blank
// imports register every metric. Assembling the Backend one level up
// instead would have moved the Backend type, its memory model and every
// caller's import path for no gain: the registry keeps Backend where it
// is and lets a new metric arrive as one new package plus one line in
// gpu/webgpu/all.

// MetricImpl is one metric's GPU host code, as the Backend uses it.
type MetricImpl interface {
	// Estimate is Backend.Estimate for this metric, in mode ModeFull or
	// ModeStrip, or ModeStripPair when it implements StripPairer (the
	// Backend refuses other modes first, and for ModeFull applies the
	// heap and VRAM-budget caps after). For ModeFull it
	// returns the worst case over pixel formats, ok false when a buffer
	// would exceed the device's binding or buffer limits.
	Estimate(b *Backend, w, h int, mode zenmetrics.Mode) (bytes int64, ok bool)
	// Prepare is Backend.Prepare for this metric, in the modes Estimate
	// takes; ctx is marked so that its uploads count as the
	// reference's. It returns no typed nil inside the interface.
	Prepare(ctx context.Context, b *Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error)
}

// StripPairer is implemented by a MetricImpl that handles
// zenmetrics.ModeStripPair (CVVDP: gpu/webgpu/cvvdp). The Backend passes
// that mode only to such metrics and refuses it for the others, whose
// Estimate and Prepare need not know it.
type StripPairer interface {
	StripPairs() bool
}

// modeOK reports whether the Backend passes mode to mi.
func modeOK(mi MetricImpl, mode zenmetrics.Mode) bool {
	switch mode {
	case zenmetrics.ModeFull, zenmetrics.ModeStrip:
		return true
	case zenmetrics.ModeStripPair:
		sp, ok := mi.(StripPairer)
		return ok && sp.StripPairs()
	}
	return false
}

var registry struct {
	mu sync.RWMutex
	m  map[zenmetrics.Metric]MetricImpl
}

// Register makes metric m available on every WebGPU Backend (from the
// metric package's init). Registering a metric twice panics: two packages
// claim it.
func Register(m zenmetrics.Metric, impl MetricImpl) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.m == nil {
		registry.m = map[zenmetrics.Metric]MetricImpl{}
	}
	if _, dup := registry.m[m]; dup {
		panic(fmt.Sprintf("webgpu: metric %v registered twice", m))
	}
	registry.m[m] = impl
}

// impl is the registered host code of m, or nil.
func impl(m zenmetrics.Metric) MetricImpl {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return registry.m[m]
}

// Metrics lists the registered metrics (what this build scores on WebGPU).
func Metrics() []zenmetrics.Metric {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	out := make([]zenmetrics.Metric, 0, len(registry.m))
	for m := range registry.m {
		out = append(out, m)
	}
	return out
}

// Available is the device memory one new task may plan on (bytes; -1 when
// nothing is known): the strip planners size bands to it.
func (b *Backend) Available() int64 { return b.available() }

// RefreshHeld brings the held-bytes accounting up to date, waiting for the
// device thread (Available reads the last value without waiting).
func (b *Backend) RefreshHeld(ctx context.Context) { b.refreshHeld(ctx) }

// CheckBudget refuses, as out of memory, a full image whose predicted
// bytes exceed the VRAM budget (none set: nil).
func (b *Backend) CheckBudget(need int64) error {
	cap := b.VRAMBudget()
	if cap <= 0 || need <= cap {
		return nil
	}
	return &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: need, Free: cap,
		Detail: fmt.Sprintf("above the VRAM budget of %d MiB (%s or SetVRAMBudget)", cap>>20, EnvVRAMBudget)}
}

// Meter measures the device memory held while it runs: Backend.MeasureMemory
// for code that does not fit one closure (tests, benchmarks).
type Meter struct{ m *vramMeter }

// StartMeter trims d's buffer pool (so what follows allocates its own) and
// starts sampling NVML, where there is one, every millisecond.
func StartMeter(ctx context.Context, d *Device) (*Meter, error) {
	m, err := startMeter(ctx, d, 0)
	if err != nil {
		return nil, err
	}
	return &Meter{m: m}, nil
}

// Finish stops the meter and returns the peak of our accounting above the
// start and NVML's used-memory rise (-1 without NVML).
func (m *Meter) Finish(ctx context.Context) (peak, deviceDelta int64, err error) {
	return m.m.finish(ctx)
}

// ReferenceBytes is the device memory a prepared reference of this backend
// holds (resident planes plus its scoring scratch), 0 for other types.
func ReferenceBytes(r zenmetrics.Reference) int64 {
	if s, ok := r.(interface{ Bytes() int64 }); ok {
		return s.Bytes()
	}
	return 0
}

// StripInfo reports how a reference prepared with ModeStrip was cut: the
// number of strips and whether each strip's reference state is kept on
// the device between scores. ok is false for other references.
func StripInfo(r zenmetrics.Reference) (n int, kept, ok bool) {
	if s, is := r.(interface{ Strips() (int, bool) }); is {
		n, kept = s.Strips()
		return n, kept, true
	}
	return 0, false, false
}
