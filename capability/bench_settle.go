package capability

import (
	"context"
	"time"
)

// SettleConfig says how a GPU cell waits for the GPU's clock before it is
// timed. An idle GPU drops its clock, and the first work after the pause
// runs slow: an H200 ran its first nine 16 MP scores at a steady 3× their
// warm time, and needed about 0.2 s of work to ramp (BENCHMARKS.md,
// session 5). A cell timed on that ramp ranks CUDA and WebGPU by which of
// them happened to follow a pause. So a GPU cell repeats its own task,
// untimed, until the GPU has been busy for Ramp without an idle gap and
// the last two slices of runs agree within Tolerance; the agreement alone
// is not enough, since runs on the slow plateau agree with each other
// too. The lane's busy stretch carries from one cell to the next, so only
// the first cell after a pause pays the ramp; the others settle in two
// slices. Zero fields take the defaults.
type SettleConfig struct {
	// Ramp is the busy time the GPU needs after a pause. 0: 250 ms (the
	// H200's 0.2 s and a margin).
	Ramp time.Duration
	// IdleGap is the longest pause between a lane's GPU runs that keeps
	// its busy stretch going (the host work between two cells takes well
	// under it; an image pair generated or kernels compiled take more).
	// An untimed warm-up run longer than this counts as a pause too: its
	// time is mostly the host's (compiling), not the GPU's. 0: 100 ms.
	IdleGap time.Duration
	// Tolerance is how far two slices' times per run may differ, as a
	// fraction of the faster, and still agree. 0: 0.1.
	Tolerance float64
	// Slice is the least time one settle timing spans: shorter runs are
	// repeated within it and averaged, so that a 1 ms cell's jitter does
	// not decide the agreement. 0: 5 ms.
	Slice time.Duration
	// Cap bounds one cell's settling: a GPU that never settles is timed
	// anyway and its cell says so (BenchResult.Unsettled). Settling also
	// stops at the phase's time limit. 0: 500 ms; negative: no settling.
	Cap time.Duration
}

// withDefaults fills in the zero fields.
func (s SettleConfig) withDefaults() SettleConfig {
	if s.Ramp <= 0 {
		s.Ramp = 250 * time.Millisecond
	}
	if s.IdleGap <= 0 {
		s.IdleGap = 100 * time.Millisecond
	}
	if s.Tolerance <= 0 {
		s.Tolerance = 0.1
	}
	if s.Slice <= 0 {
		s.Slice = 5 * time.Millisecond
	}
	if s.Cap == 0 {
		s.Cap = 500 * time.Millisecond
	}
	return s
}

// gpuStretch is a lane's current busy stretch on its GPU: when the GPU
// last started being kept busy, and when its last run ended. The zero
// value is an idle GPU. A lane is one device (BenchTarget.Lane), so a
// CUDA cell following a WebGPU cell of the same GPU finds it warm.
type gpuStretch struct {
	since, last time.Time
}

// note records a run from t0 to t1. busy is false for an untimed warm-up
// longer than gap: it is counted as a pause (mostly host work), so the
// stretch restarts after it.
func (g *gpuStretch) note(t0, t1 time.Time, gap time.Duration, busy bool) {
	switch {
	case !busy:
		g.since, g.last = time.Time{}, t1
	case g.since.IsZero() || t0.Sub(g.last) > gap:
		g.since, g.last = t0, t1
	default:
		g.last = t1
	}
}

// busyFor is how long the GPU has been kept busy at now (0: idle).
func (g *gpuStretch) busyFor(now time.Time) time.Duration {
	if g.since.IsZero() {
		return 0
	}
	return now.Sub(g.since)
}

// agree says two slices' times per run differ by at most tol of the faster.
func agree(a, b, tol float64) bool {
	lo, hi := min(a, b), max(a, b)
	return lo > 0 && hi-lo <= tol*lo
}

// settleGPU repeats run (one untimed task of the cell, which notes itself
// in g) in slices of at least s.Slice until the GPU has been busy for
// s.Ramp and two consecutive slices agree within s.Tolerance, or until
// s.Cap of settling, the phase's limit or ctx ends it. It returns how many
// runs it did and whether the GPU settled.
func (b *benchPlan) settleGPU(ctx context.Context, g *gpuStretch, limit time.Duration, run func() (time.Duration, error)) (runs int, settled bool, err error) {
	s := b.settle
	if s.Cap < 0 {
		return 0, true, nil
	}
	start := b.clock()
	var prev float64
	for {
		var sum time.Duration
		k := 0
		for k == 0 || sum < s.Slice {
			d, err := run()
			if err != nil {
				return runs, false, err
			}
			sum += d
			k++
			runs++
		}
		per := float64(sum) / float64(k)
		now := b.clock()
		if prev > 0 && g.busyFor(now) >= s.Ramp && agree(prev, per, s.Tolerance) {
			return runs, true, nil
		}
		prev = per
		if now.Sub(start) >= s.Cap || now.Sub(b.start) >= limit || ctx.Err() != nil {
			return runs, false, nil
		}
	}
}
