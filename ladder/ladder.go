// Package ladder is the fallback policy for one task: the order in which
// memory layouts and backends are tried (GPU full image, GPU strips, GPU
// strip pairs for CVVDP, CPU) and what a failure on one rung means for the
// next. It decides nothing about speed (that is the orchestrator's chooser)
// and runs nothing itself: the orchestrator asks it for the next rung, runs
// the attempt on a worker, and reports back. Keeping it a small state
// machine rather than a loop with callbacks lets a task move between worker
// goroutines without a goroutine of its own waiting on it.
package ladder

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
)

// Rung is one step of the ladder, from the fastest and most memory-hungry
// to the slowest and leanest.
type Rung uint8

// The rungs, in the order they are tried.
const (
	GpuFull      Rung = iota // whole image on a GPU
	GpuStrip                 // horizontal bands with a halo on a GPU
	GpuStripPair             // bands of the reference/distorted pair (CVVDP only)
	Cpu                      // the CPU backend
	// FullyExhausted is where a task ends when every rung failed or was
	// refused; it is never attempted.
	FullyExhausted
)

var rungNames = [...]string{"gpu_full", "gpu_strip", "gpu_strip_pair", "cpu", "fully_exhausted"}

// String is the profile's backend-class key for the rung ("gpu_full", "cpu").
func (r Rung) String() string {
	if int(r) < len(rungNames) {
		return rungNames[r]
	}
	return fmt.Sprintf("rung(%d)", uint8(r))
}

// MarshalText prints the rung's name in JSON.
func (r Rung) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Class is the key of the rung in the capability profile when WebGPU (or
// the CPU) runs it; the same string as String, named for what the caller
// means. Another GPU runtime keys the same layout by its own class
// (capability.Runtime.Class), which the orchestrator passes to FailAs.
func (r Rung) Class() string { return r.String() }

// Mode is the memory layout the rung asks the backend for.
func (r Rung) Mode() zenmetrics.Mode {
	switch r {
	case GpuStrip:
		return zenmetrics.ModeStrip
	case GpuStripPair:
		return zenmetrics.ModeStripPair
	}
	return zenmetrics.ModeFull
}

// IsGPU reports whether the rung runs on a GPU adapter.
func (r Rung) IsGPU() bool { return r <= GpuStripPair }

// Rungs lists the rungs a task of metric m may try. Strip pairs only exist
// for CVVDP, whose temporal/pyramid state makes the pair the unit of memory;
// without a GPU the ladder is the CPU alone.
func Rungs(m zenmetrics.Metric, hasGPU bool) []Rung {
	if !hasGPU {
		return []Rung{Cpu}
	}
	if m == zenmetrics.CVVDP {
		return []Rung{GpuFull, GpuStrip, GpuStripPair, Cpu}
	}
	return []Rung{GpuFull, GpuStrip, Cpu}
}

// OomRetry is what an out-of-memory failure does.
type OomRetry uint8

const (
	// Fallback (the default) moves to the next rung.
	Fallback OomRetry = iota
	// NoFallback ends the task at the first OOM: exactly one backend is
	// attempted and the result is FullyExhausted. For callers that would
	// rather know than wait for the CPU.
	NoFallback
)

func (o OomRetry) String() string {
	if o == NoFallback {
		return "no_fallback"
	}
	return "fallback"
}

// Trigger says why a rung was left.
type Trigger uint8

// Triggers.
const (
	TriggerNone Trigger = iota
	// TriggerPredicted: the chooser refused the rung before trying it
	// (predicted memory above free × 0.85, a recorded OOM cell, or a
	// lower rung predicted to finish sooner).
	TriggerPredicted
	// TriggerUnsupported: no backend can run the rung (Estimate ok=false,
	// e.g. strips not implemented yet, or no GPU worker alive).
	TriggerUnsupported
	// TriggerConstructorOOM: Prepare returned ErrOutOfMemory.
	TriggerConstructorOOM
	// TriggerRuntimeOOM: Score returned ErrOutOfMemory.
	TriggerRuntimeOOM
	// TriggerDeviceLost: the GPU was lost; the task moves on, nothing is
	// recorded (the size was not the problem).
	TriggerDeviceLost
	// TriggerFailed: any other error; the task ends with it.
	TriggerFailed
)

var triggerNames = [...]string{"", "predicted", "unsupported", "constructor_oom", "runtime_oom", "device_lost", "failed"}

func (t Trigger) String() string {
	if int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return fmt.Sprintf("trigger(%d)", uint8(t))
}

// MarshalText prints the trigger's name in JSON.
func (t Trigger) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// IsOOM reports whether the trigger is one of the two out-of-memory ones.
func (t Trigger) IsOOM() bool { return t == TriggerConstructorOOM || t == TriggerRuntimeOOM }

// Classify maps an attempt's error to a trigger; inPrepare says whether it
// came from Prepare (constructor) or Score (runtime).
func Classify(err error, inPrepare bool) Trigger {
	switch {
	case err == nil:
		return TriggerNone
	case errors.Is(err, zenmetrics.ErrOutOfMemory):
		if inPrepare {
			return TriggerConstructorOOM
		}
		return TriggerRuntimeOOM
	case errors.Is(err, zenmetrics.ErrDeviceLost):
		return TriggerDeviceLost
	}
	return TriggerFailed
}

// Step is one entry of a task's trace: a rung skipped, failed or won.
type Step struct {
	Rung    Rung    `json:"rung"`
	Backend string  `json:"backend,omitempty"`
	Trigger Trigger `json:"trigger,omitempty"` // TriggerNone on the rung that succeeded
	Reason  string  `json:"reason,omitempty"`
	// Attempted is true when the backend was actually run on this rung.
	Attempted bool  `json:"attempted"`
	Err       error `json:"-"`
}

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Rung.String())
	if s.Backend != "" {
		b.WriteString("@" + s.Backend)
	}
	if s.Trigger != TriggerNone {
		b.WriteString(" " + s.Trigger.String())
	} else if s.Attempted {
		b.WriteString(" ok")
	}
	if s.Reason != "" {
		b.WriteString(": " + s.Reason)
	}
	return b.String()
}

// Recorder persists an out-of-memory cell so that this machine never tries
// it again: the orchestrator's implementation updates its in-memory profile
// at once and writes the file under the capability lock.
type Recorder interface {
	RecordOOM(ctx context.Context, m zenmetrics.Metric, class string, pixels int64) error
}

// Ladder holds the policy shared by all tasks.
type Ladder struct {
	Retry    OomRetry
	Recorder Recorder // nil: cells are not recorded (tests of the policy alone)
}

// Verdict is the chooser's answer about one rung.
type Verdict struct {
	OK      bool
	Trigger Trigger // TriggerPredicted or TriggerUnsupported when !OK
	Reason  string
	Backend string // the backend the chooser would use, if known
}

// Plan is the ladder state of one task. It is not safe for concurrent use;
// a task is on one worker at a time.
type Plan struct {
	l        *Ladder
	metric   zenmetrics.Metric
	pixels   int64
	rungs    []Rung
	pos      int // index of the next rung to consider
	attempts int
	trace    []Step
	done     bool
	lastErr  error
}

// Begin starts the plan for a task of metric m with this many pixels.
func (l *Ladder) Begin(m zenmetrics.Metric, pixels int64, hasGPU bool) *Plan {
	return &Plan{l: l, metric: m, pixels: pixels, rungs: Rungs(m, hasGPU)}
}

// Next returns the next rung to attempt. Each rung is offered to admit
// (the chooser); refused rungs go into the trace with the chooser's reason,
// so a skipped strip rung is visible in the result rather than silent.
// FullyExhausted means nothing is left.
func (p *Plan) Next(admit func(Rung) Verdict) Rung {
	for !p.done && p.pos < len(p.rungs) {
		r := p.rungs[p.pos]
		p.pos++
		v := admit(r)
		if v.OK {
			return r
		}
		t := v.Trigger
		if t == TriggerNone {
			t = TriggerPredicted
		}
		p.trace = append(p.trace, Step{Rung: r, Backend: v.Backend, Trigger: t, Reason: v.Reason})
	}
	p.done = true
	return FullyExhausted
}

// Fail records a failed attempt on rung r and reports whether the task may
// go on to the next rung. An OOM records the (class, pixels) cell through
// the Recorder first; with NoFallback it ends the plan. Any error other
// than OOM or device loss ends the plan too: a bad input or a panic would
// fail the same way on every backend, and a second backend must not hide a
// bug in the first.
func (p *Plan) Fail(ctx context.Context, r Rung, backend string, trigger Trigger, err error) bool {
	return p.FailAs(ctx, r, r.Class(), backend, trigger, err)
}

// FailAs is Fail for an attempt whose profile class is not the rung's own:
// a rung is a memory layout, and a GPU runtime other than WebGPU (CUDA)
// runs it under its own class ("cuda_full" on GpuFull), so its
// out-of-memory cell must not rule the layout out for the other runtime.
func (p *Plan) FailAs(ctx context.Context, r Rung, class, backend string, trigger Trigger, err error) bool {
	p.attempts++
	p.lastErr = err
	st := Step{Rung: r, Backend: backend, Trigger: trigger, Attempted: true, Err: err}
	if err != nil {
		st.Reason = err.Error()
	}
	if trigger.IsOOM() && p.l.Recorder != nil {
		if rerr := p.l.Recorder.RecordOOM(ctx, p.metric, class, p.pixels); rerr != nil {
			st.Reason += " (cell not persisted: " + rerr.Error() + ")"
		}
	}
	p.trace = append(p.trace, st)
	switch {
	case trigger.IsOOM() && p.l.Retry == NoFallback:
		p.done = true
	case trigger.IsOOM(), trigger == TriggerDeviceLost:
		return true
	default:
		p.done = true
	}
	return false
}

// Refuse records that the worker found rung r unusable just before
// running it (the backend, opened late, cannot do the mode; live memory
// fell below the prediction while the task waited). Nothing ran, so it is
// not an attempt and no cell is recorded; the next Next moves on.
func (p *Plan) Refuse(r Rung, backend string, trigger Trigger, reason string) {
	if trigger == TriggerNone {
		trigger = TriggerPredicted
	}
	p.trace = append(p.trace, Step{Rung: r, Backend: backend, Trigger: trigger, Reason: reason})
}

// Succeed records the winning attempt.
func (p *Plan) Succeed(r Rung, backend string) {
	p.attempts++
	p.done = true
	p.trace = append(p.trace, Step{Rung: r, Backend: backend, Attempted: true})
}

// Attempts counts the rungs on which a backend actually ran.
func (p *Plan) Attempts() int { return p.attempts }

// Trace returns the steps so far (the caller may keep the slice).
func (p *Plan) Trace() []Step { return append([]Step(nil), p.trace...) }

// Metric and Pixels describe the task the plan is for.
func (p *Plan) Metric() zenmetrics.Metric { return p.metric }

// Pixels is the task's pixel count.
func (p *Plan) Pixels() int64 { return p.pixels }

// ErrExhausted: every rung failed or was refused.
var ErrExhausted = errors.New("ladder: fully exhausted")

// ExhaustedError is the error of a task that reached FullyExhausted. It
// matches ErrExhausted and wraps the last attempt's error, so
// errors.Is(err, zenmetrics.ErrOutOfMemory) still holds after OOMs, and
// errors.Is(err, zenmetrics.ErrUnsupported) when nothing could run it.
type ExhaustedError struct {
	Metric zenmetrics.Metric
	Pixels int64
	Trace  []Step
	Last   error
}

func (e *ExhaustedError) Error() string {
	parts := make([]string, len(e.Trace))
	for i, s := range e.Trace {
		parts[i] = s.String()
	}
	return fmt.Sprintf("ladder: no backend could score %s at %d pixels [%s]", e.Metric, e.Pixels, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// Unwrap exposes the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Last }

// Exhausted builds the error for a plan that ended on FullyExhausted. When
// no backend was attempted the wrapped error is ErrUnsupported.
func (p *Plan) Exhausted() error {
	last := p.lastErr
	if last == nil {
		last = fmt.Errorf("%w: no rung admitted %s at %d pixels", zenmetrics.ErrUnsupported, p.metric, p.pixels)
	}
	return &ExhaustedError{Metric: p.metric, Pixels: p.pixels, Trace: p.Trace(), Last: last}
}
