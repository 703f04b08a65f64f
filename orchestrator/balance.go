package orchestrator

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/ladder"
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

// emaKey is what a measured speed is kept per: metric, the slot's class
// on the rung (its runtime and layout: gpu_full, cuda_full, gpu_strip,
// ...) and size class. Size classes are factors of 4 in
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
	// The measured sweet spot's inputs: time spent at each depth and
	// tasks completed at each depth (depth clamped to depthTrack-1).
	depthSince time.Time
	depthTime  [depthTrack]time.Duration
	doneAt     [depthTrack]int64
}

// depthTrack bounds the depths the sweet-spot measurement tells apart.
const depthTrack = 33

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

// observe records a finished attempt on rung r: ok or failed (oom says
// whether it ran out of memory), its wall time and pixels, and updates
// the speed estimate of its key, seeded with seed (the profile's ns/px).
func (s *slot) observe(r ladder.Rung, k emaKey, seed float64, px int64, d time.Duration, ok, oom bool, noEMA bool) {
	if v, updated := s.observeLocked(k, seed, px, d, ok, oom, noEMA); updated && s.gpu && s.o != nil && seed > 0 {
		// Outside this slot's lock: relax takes the other slots' locks
		// one at a time, so two slots relaxing each other cannot deadlock.
		s.o.relax(s, r, k, px, v/seed)
	}
}

func (s *slot) observeLocked(k emaKey, seed float64, px int64, d time.Duration, ok, oom bool, noEMA bool) (float64, bool) {
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
		return 0, false
	}
	st.tasks++
	st.doneAt[min(st.depth, depthTrack-1)]++
	if px <= 0 || d <= 0 {
		return 0, false
	}
	meas := float64(d) / float64(px)
	if st.emaAll == 0 {
		st.emaAll = meas
	} else {
		st.emaAll += emaAlpha * (meas - st.emaAll)
	}
	if noEMA {
		return 0, false // mutation check: the rule under test is switched off
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
	return st.ema[k], true
}

// relaxRate is how far a stale, slower estimate moves toward a peer's
// fresh one per task the peer completes. Without it a device that was
// slow once (throttled, shared) and recovered would never be chosen under
// light load, so never re-measured. At 3 % a 30× slower estimate comes
// within reach of the peer's after ~110 tasks (ln 30 / 0.03): a device
// still slow then costs one task in ~110; a recovered one is back after
// its first task.
const relaxRate = 0.03

// relax moves the other GPU slots' estimates for the same metric, rung
// and size class a little toward what s's fresh one says about them:
// ratio is s's estimate over its profile ns/px, and a peer's target is
// its own profile ns/px times that ratio. Slots of one runtime share a
// class and so a profile ns/px, and the target is s's estimate itself.
// Across runtimes the profile's gap stays: a CUDA slot whose estimate
// was inflated once (WebGPU work on the same GPU ran beside it) drifts
// back toward its profiled lead over WebGPU, and is tried again, rather
// than toward WebGPU's own speed, which would pull the slower runtime
// into work it loses by design.
func (o *Orchestrator) relax(s *slot, r ladder.Rung, k emaKey, px int64, ratio float64) {
	prof := o.snapshot()
	for _, g := range o.gpus {
		if g == s {
			continue
		}
		v := g.view(prof, k.metric, r)
		gk := emaKey{k.metric, v.class, k.size}
		target := ratio * v.nsPerPx(px)
		g.st.mu.Lock()
		if cur, ok := g.st.ema[gk]; ok && cur > target {
			g.st.ema[gk] = cur - relaxRate*(cur-target)
		}
		g.st.mu.Unlock()
	}
}

func (s *slot) depthAdd(n int) {
	now := time.Now()
	s.st.mu.Lock()
	if !s.st.depthSince.IsZero() {
		s.st.depthTime[min(max(s.st.depth, 0), depthTrack-1)] += now.Sub(s.st.depthSince)
	}
	s.st.depthSince = now
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
// makes a GPU slot any busier. Deeper queues only add latency, which is
// when spilling to idle CPU workers pays (backpressure). It is measured
// (measuredSweetSpot) once the slot has completed enough tasks; before
// that, twice its workers: every worker has a task and as many wait, so
// the next starts without a gap.
func (o *Orchestrator) sweetSpot(s *slot) int {
	if o.cfg.GPUQueueSweetSpot > 0 {
		return o.cfg.GPUQueueSweetSpot
	}
	_, workers := s.backlog()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return measuredSweetSpot(s.st.depthTime[:], s.st.doneAt[:], 2*workers)
}

// Sweet-spot measurement: at least sweetMinTasks completions in all, and
// sweetMinTail at or above a depth for its throughput to count.
// sweetShare is how close to the best throughput counts as saturated:
// 10 % absorbs the scatter of task sizes within a batch.
const (
	sweetMinTasks = 32
	sweetMinTail  = 8
	sweetShare    = 0.9
)

// measuredSweetSpot is the smallest depth d ≥ 1 at which the slot's
// throughput while at depth ≥ d (tasks completed ÷ time spent there)
// reaches sweetShare of the best such throughput: the depth where the
// device is saturated. timeAt[k] is the time spent at depth k, doneAt[k]
// the tasks completed at depth k (the last index holds every deeper
// one). fallback when there is too little data.
func measuredSweetSpot(timeAt []time.Duration, doneAt []int64, fallback int) int {
	var total int64
	for _, n := range doneAt {
		total += n
	}
	if total < sweetMinTasks || len(timeAt) != len(doneAt) {
		return fallback
	}
	tp := make([]float64, len(doneAt)) // throughput at depth ≥ d
	var done int64
	var spent time.Duration
	best := 0.0
	for d := len(doneAt) - 1; d >= 1; d-- {
		done += doneAt[d]
		spent += timeAt[d]
		if done >= sweetMinTail && spent > 0 {
			tp[d] = float64(done) / spent.Seconds()
			best = max(best, tp[d])
		}
	}
	if best == 0 {
		return fallback
	}
	for d := 1; d < len(tp); d++ {
		// Only a depth the slot actually spent time at counts: with no
		// data at shallow depths there is no evidence they saturate it.
		if timeAt[d] > 0 && tp[d] >= sweetShare*best {
			return d
		}
	}
	return fallback
}

// mutations switch rules off, for the mutation checks of
// balance_test.go only; production code never sets them.
type mutations struct {
	noEMA          bool // observe does not update the EMA
	noLostRule     bool // lost slots keep receiving work, queues not drained
	noBackpressure bool // deep GPU queues never spill to the CPU
	noExactlyOnce  bool // finish delivers a second result
}
