package webgpu

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Polling hand-offs to and from the device thread, for small scores.
//
// Every Do is two hand-offs: the request wakes the device thread (a
// goroutine locked to its OS thread, parked when idle) and the result
// wakes the caller. On the lent H200 (a virtual machine whose idle vCPUs
// halt) each wake-up cost tens of µs: a cached 1 MP SSIMULACRA2 score's
// submit took 56–81 µs longer than its device-thread work, and a score
// makes three or four such calls on its critical path, against ~0.6 ms
// for the whole score. A context from WithPoll makes Do's caller poll for
// its result for the window before it parks, and makes the device thread
// poll for its next request for the window after running that call, so
// the next hand-off of the same score meets a thread that is awake.
//
// Both loops keep a core busy while they last, which is why polling is
// per call and not per device: on the H200 a 300 µs window for every
// call took 1 MP from 0.58–0.73 to 0.51–0.66 ms and 4 MP from 1.38–1.45
// to 1.31–1.34 ms, but 16 MP from 4.05–4.10 to 4.21–4.36 ms, because its
// banded uploads fill on every core while earlier bands are submitted.
// Callers ask for it on scores whose host work is short.

// pollKey is the context key of a poll window.
type pollKey struct{}

// pollEnv is ZENMETRICS_WEBGPU_POLL, read once: "0" turns polling off
// for every caller, a number of µs replaces every caller's window (A/B
// measurements), "" leaves callers their own.
var pollEnv = os.Getenv("ZENMETRICS_WEBGPU_POLL")

// pollMinProcs is the fewest Ps (GOMAXPROCS) with which polling is used:
// a poller holds one, and the device thread and a caller polling at once
// hold two that the caller's fill goroutines would otherwise have.
const pollMinProcs = 4

// WithPoll returns ctx with a poll window for the Do calls made with it
// (see above); window ≤ 0 or fewer than pollMinProcs Ps leave ctx as it
// is.
func WithPoll(ctx context.Context, window time.Duration) context.Context {
	window = pollWindowFor(window, pollEnv)
	if window <= 0 || runtime.GOMAXPROCS(0) < pollMinProcs {
		return ctx
	}
	return context.WithValue(ctx, pollKey{}, window)
}

// pollWindowFor is window as ZENMETRICS_WEBGPU_POLL (env) leaves it.
func pollWindowFor(window time.Duration, env string) time.Duration {
	if env == "" {
		return window
	}
	if n, err := strconv.Atoi(env); err == nil && n >= 0 {
		return time.Duration(n) * time.Microsecond
	}
	return window
}

// pollWindow is ctx's poll window (0: none).
func pollWindow(ctx context.Context) time.Duration {
	w, _ := ctx.Value(pollKey{}).(time.Duration)
	return w
}

// pollRecv receives from ch for up to window without parking; ok is
// false when nothing came. The clock is read every 64 tries.
func pollRecv[T any](ch <-chan T, window time.Duration) (v T, ok bool) {
	t0 := time.Now()
	for i := 1; ; i++ {
		select {
		case v = <-ch:
			return v, true
		default:
		}
		if i&63 == 0 && time.Since(t0) > window {
			return v, false
		}
	}
}
