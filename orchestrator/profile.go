package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// loadProfile reads this machine's profile without benching. A stale one
// (by age) is still used, its numbers beat the defaults until Warm runs; a
// corrupt, foreign or other-hardware one is ignored with a warning.
func (o *Orchestrator) loadProfile(ctx context.Context) {
	p, err := o.store.Load(ctx, o.hash)
	switch {
	case err == nil:
		switch reason := p.Staleness(o.report, o.now(), o.cfg.CacheValidity); reason {
		case "", capability.StaleAge, capability.StaleNoMeasurements:
			if reason != "" {
				o.log.Info("capability profile is stale; using it until Warm re-measures", "reason", string(reason))
			}
			o.profile = p
		default:
			o.log.Warn("capability profile does not match this machine; using defaults until Warm", "reason", string(reason))
		}
	case errors.Is(err, capability.ErrNoProfile):
		o.log.Debug("no capability profile yet; using default costs until Warm")
	default:
		o.log.Warn("capability profile unusable; using default costs until Warm", "err", err)
	}
}

// Warm makes sure this machine has a fresh profile, benching only when it
// is missing, stale, corrupt or from other hardware: cheap enough to call
// on every start. Do not run it while tasks are running: the bench shares
// the backends and would measure the contention.
func (o *Orchestrator) Warm(ctx context.Context) (*capability.WarmResult, error) {
	return o.warm(ctx, false)
}

// Bench re-measures unconditionally (zmwarm --force).
func (o *Orchestrator) Bench(ctx context.Context) (*capability.WarmResult, error) {
	return o.warm(ctx, true)
}

func (o *Orchestrator) warm(ctx context.Context, force bool) (res *capability.WarmResult, err error) {
	defer zenmetrics.Recover(&err)
	if o.closed.Load() {
		return nil, ErrClosed
	}
	targets, initMs := o.benchTargets(ctx)
	cfg := capability.WarmConfig{
		Store:    o.store,
		Report:   o.report,
		Validity: o.cfg.CacheValidity,
		Force:    force,
		Logger:   o.log,
		Now:      o.now,
		InitMs:   initMs,
		Bench: capability.BenchConfig{
			Metrics:   o.cfg.BenchMetrics,
			Targets:   targets,
			Sides:     o.cfg.BenchSides,
			TimeLimit: o.cfg.BenchTimeLimit,
			Runs:      o.cfg.BenchRuns,
			RunBudget: o.cfg.BenchRunBudget,
			Seed:      1,
		},
	}
	res, err = capability.Warm(ctx, cfg)
	if res != nil && res.Profile != nil {
		o.profMu.Lock()
		o.profile = res.Profile
		o.profMu.Unlock()
	}
	return res, err
}

// benchTargets lists what the quick bench measures: the CPU at the
// smaller sizes, and on the first usable GPU slot of each runtime (the
// WebGPU adapter, the CUDA device) every GPU rung's layout under that
// runtime's class (adapters of one host are assumed alike: the profile
// keys by class). Layouts a runtime declines (CUDA strip pairs) cost an
// Estimate call and show as unsupported; any metric its Estimate takes is
// measured, so a metric ported to CUDA needs no change here.
//
// All GPU targets share one bench lane, and so take turns: a CUDA device
// and the WebGPU adapter are usually the same GPU, and benched side by
// side each would time the other's work too. Which adapter is which CUDA
// device cannot be told reliably (Dawn reports no PCI address, and picks
// its one adapter by its own preference), so no pairing is attempted: on
// a host with different GPUs this costs bench time (the soft limit cuts
// the largest sizes of the GPU lane), never wrong numbers. Targets run in
// list order within a size and metric, layout by layout, and the lane
// benches both runtimes' full-image cells at every size before any strip
// cell (capability's runLane): the chooser compares those first, and the
// strip cells are a fallback's.
func (o *Orchestrator) benchTargets(ctx context.Context) ([]capability.BenchTarget, map[int]float64) {
	var ts []capability.BenchTarget
	initMs := map[int]float64{}
	type benched struct {
		s *slot
		b zenmetrics.Backend
	}
	var gpus []benched
	for _, g := range o.gpus {
		if g.lost.Load() || slices.ContainsFunc(gpus, func(x benched) bool { return x.s.gpuRuntime() == g.gpuRuntime() }) {
			continue
		}
		cold := g.backendNow() == nil
		t0 := time.Now()
		b, err := g.openBackend(ctx)
		if err != nil {
			o.log.Warn("GPU unusable for the bench", "backend", g.name, "err", err)
			g.lost.Store(true)
			continue
		}
		if cold && g.gpuIndex >= 0 {
			initMs[g.gpuIndex] = float64(time.Since(t0).Microseconds()) / 1e3
		}
		gpus = append(gpus, benched{g, b})
	}
	for _, r := range gpuRungs() {
		for _, g := range gpus {
			ts = append(ts, capability.BenchTarget{Class: g.s.class(r), Backend: g.b, Mode: r.Mode(), RecordVRAM: true,
				Lane: gpuBenchLane, Metrics: rungMetrics(r)})
		}
	}
	if o.cpu != nil {
		if b := o.cpu.backendNow(); b != nil {
			// The CPU cell measures the path a batch runs: the pool's
			// workers side by side, each task with the threads it gets
			// there and the kernels this build and CPU use.
			workers := o.poolConfig().MaxParallelCPU
			_, threads := cpuPool(o.cfg)
			simd := "generic kernels"
			if cpusimd.Enabled() {
				simd = "AVX2+FMA kernels"
			}
			ts = append(ts, capability.BenchTarget{Class: capability.ClassCPU, Backend: b, Mode: zenmetrics.ModeFull,
				MaxPixels: capability.DefaultCPUBenchMaxPixels, Concurrency: workers, MemBytes: o.report.CPU.RAMMiB << 20 / 2,
				Path: fmt.Sprintf("%d workers side by side, %d thread(s) each, %s", workers, threads, simd)})
		}
	}
	return ts, initMs
}

// gpuBenchLane is the bench lane of every GPU target (benchTargets).
const gpuBenchLane = "gpu"

// gpuRungs are the ladder's GPU rungs, in the order tasks try them.
func gpuRungs() []ladder.Rung {
	var out []ladder.Rung
	for r := ladder.Rung(0); r < ladder.FullyExhausted; r++ {
		if r.IsGPU() {
			out = append(out, r)
		}
	}
	return out
}

// rungMetrics is the metrics whose ladder has rung r, nil when every
// metric's has (strip pairs are CVVDP's alone: benching the others there
// would only add unsupported cells).
func rungMetrics(r ladder.Rung) []zenmetrics.Metric {
	var out []zenmetrics.Metric
	all := zenmetrics.AllMetrics()
	for _, m := range all {
		if slices.Contains(ladder.Rungs(m, true), r) {
			out = append(out, m)
		}
	}
	if len(out) == len(all) {
		return nil
	}
	return out
}

// Profile returns a copy of the profile the chooser uses (nil: defaults).
func (o *Orchestrator) Profile() *capability.Profile { return o.snapshot().Clone() }

// ProfilePath is where this machine's profile lives.
func (o *Orchestrator) ProfilePath() (string, error) { return o.store.Path(o.hash) }

// RecordOOM implements ladder.Recorder: the chooser sees the cell at once
// (the in-memory profile is replaced), and the file is updated under the
// capability lock, merging with what other processes wrote, so this machine
// never tries the cell again.
func (o *Orchestrator) RecordOOM(ctx context.Context, m zenmetrics.Metric, class string, pixels int64) error {
	cell := capability.Cell{Backend: class, Pixels: pixels}
	o.profMu.Lock()
	p := o.profile.Clone()
	if p == nil {
		p = capability.NewProfile(o.report, o.now())
	}
	p.RecordOOM(m, cell)
	o.profile = p
	o.profMu.Unlock()
	o.log.Info("out of memory; cell recorded", "metric", m, "backend", class, "pixels", pixels)
	if o.cfg.ReadOnlyProfile {
		return nil
	}
	// Persist even if the task's ctx just ended: the knowledge is good.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return o.store.Update(pctx, o.hash, func(cur *capability.Profile, _ error) (*capability.Profile, error) {
		if cur == nil {
			return p.Clone(), nil
		}
		if !cur.RecordOOM(m, cell) {
			return nil, nil // already there: no write
		}
		return cur, nil
	})
}
