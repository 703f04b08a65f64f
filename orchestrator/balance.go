package orchestrator

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// Balance is how a task is shared among the GPU slots that can run it
// (Config.Balance, zmscore --balance). Whatever the strategy, lost devices
// get nothing, the memory check and the ladder still apply, and the CPU
// takes a task only by the cold-device rule or by backpressure.
type Balance uint8

const (
	// BalanceAdaptive (the default) sends each task to the slot predicted
	// to finish it first, from an exponential moving average of the ns/px
	// *measured* on that slot for that metric, rung class and size class,
	// seeded from the capability profile. A device that slows down
	// (thermal throttling, another process) loses share after a few tasks.
	BalanceAdaptive Balance = iota
	// BalanceRoundRobin deals tasks to the slots in turn.
	BalanceRoundRobin
	// BalanceLeastLoaded sends each task to the slot with the fewest tasks
	// queued or running per worker.
	BalanceLeastLoaded
	// BalanceWeighted is BalanceAdaptive with the profiled costs only,
	// never updated: predictable shares, blind to throttling.
	BalanceWeighted
)

var balanceNames = [...]string{"adaptive", "round-robin", "least-loaded", "weighted"}

func (b Balance) String() string {
	if int(b) < len(balanceNames) {
		return balanceNames[b]
	}
	return fmt.Sprintf("Balance(%d)", b)
}

// ParseBalance reads a strategy name ("" is the default, adaptive).
func ParseBalance(s string) (Balance, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "adaptive", "ema":
		return BalanceAdaptive, nil
	case "round-robin", "roundrobin", "rr":
		return BalanceRoundRobin, nil
	case "least-loaded", "leastloaded", "queue":
		return BalanceLeastLoaded, nil
	case "weighted", "profile":
		return BalanceWeighted, nil
	}
	return 0, fmt.Errorf("%w: unknown balance %q (adaptive, round-robin, least-loaded, weighted)", zenmetrics.ErrBadInput, s)
}

// emaAlpha is the weight of the newest measurement. 0.4 moves the
// estimate 78 % of the way to a new speed in three tasks (1-0.6³), which
// is "loses share within a few tasks", while one odd task (a page fault
// storm, a GC pause) moves it less than half way.
const emaAlpha = 0.4

// emaKey is what a measured speed is kept per: metric, rung class (full
// image or strips) and size class. Size classes are factors of 4 in
// pixels (bits.Len/2): ns/px varies with size (caches, fixed costs), so a
// 256² task must not teach the estimate for a 4096² one much.
type emaKey struct {
	metric zenmetrics.Metric
	class  string
	size   int
}

func sizeClass(px int64) int { return bits.Len64(uint64(max(px, 1))) / 2 }

// slotStats is a slot's live statistics and speed estimates.
type slotStats struct {
	mu        sync.Mutex
	ema       map[emaKey]float64 // measured ns/px
	emaAll    float64            // over every task, for Stats' throughput
	tasks     int64              // attempts that scored
	failures  int64              // attempts that failed (any error)
	ooms      int64
	fallbacks int64 // tasks that left this slot for another rung or slot
	busy      time.Duration
	depth     int // tasks queued or running here
	maxDepth  int
	series    [seriesLen]int // queue depth at the last completions
	seriesN   int
}

// seriesLen is how many recent queue-depth readings Stats keeps.
const seriesLen = 16

// nsPerPx is the slot's speed estimate: the EMA when this key was measured,
// else the profile's seed scaled by the slot's nsScale.
func (s *slot) nsPerPx(k emaKey, seed float64, adaptive bool) float64 {
	if adaptive {
		s.st.mu.Lock()
		v, ok := s.st.ema[k]
		s.st.mu.Unlock()
		if ok {
			return v
		}
	}
	scale := s.nsScale
	if scale <= 0 {
		scale = 1
	}
	return seed * scale
}

// observe records a finished attempt: ok or failed (oom says whether
// it ran out of memory), its wall time and pixels, and updates the
// speed estimate of its key, seeded with seed (the profile's ns/px).
func (s *slot) observe(k emaKey, seed float64, px int64, d time.Duration, ok, oom bool, noEMA bool) {
	st := &s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.busy += d
	st.series[st.seriesN%seriesLen] = st.depth
	st.seriesN++
	if !ok {
		st.failures++
		if oom {
			st.ooms++
		}
		return
	}
	st.tasks++
	if px <= 0 || d <= 0 {
		return
	}
	meas := float64(d) / float64(px)
	if st.emaAll == 0 {
		st.emaAll = meas
	} else {
		st.emaAll += emaAlpha * (meas - st.emaAll)
	}
	if noEMA {
		return // mutation check: the rule under test is switched off
	}
	if st.ema == nil {
		st.ema = map[emaKey]float64{}
	}
	cur, seen := st.ema[k]
	if !seen {
		scale := s.nsScale
		if scale <= 0 {
			scale = 1
		}
		cur = seed * scale
	}
	st.ema[k] = cur + emaAlpha*(meas-cur)
}

func (s *slot) depthAdd(n int) {
	s.st.mu.Lock()
	s.st.depth += n
	s.st.maxDepth = max(s.st.maxDepth, s.st.depth)
	s.st.mu.Unlock()
}

func (s *slot) depthNow() int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.depth
}

func (s *slot) fellBack() {
	s.st.mu.Lock()
	s.st.fallbacks++
	s.st.mu.Unlock()
}

// sweetSpot is the queue depth beyond which more queued work no longer
// makes a GPU slot any busier: every worker has a task and one more waits
// so the next starts without a gap. Deeper queues only add latency, which
// is when spilling to idle CPU workers pays (backpressure).
func (o *Orchestrator) sweetSpot(s *slot) int {
	if o.cfg.GPUQueueSweetSpot > 0 {
		return o.cfg.GPUQueueSweetSpot
	}
	_, workers := s.backlog()
	return 2 * workers
}

// mutations switch rules off, for the mutation checks of
// balance_test.go only; production code never sets them.
type mutations struct {
	noEMA          bool // observe does not update the EMA
	noLostRule     bool // lost slots keep receiving work, queues not drained
	noBackpressure bool // deep GPU queues never spill to the CPU
	noExactlyOnce  bool // finish delivers a second result
}
