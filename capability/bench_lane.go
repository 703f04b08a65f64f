package capability

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// DominatedFactor: a GPU target of a shared lane whose cells of a metric
// took more than this many times the fastest other target of the lane
// (same metric and mode) at the two sizes before is not benched at larger
// sizes; its cells say "dominated" and the chooser extrapolates its last
// one, which no other target is near. On the H200 WebGPU IW-SSIM ran
// 10–26× CUDA's time at every size and cost 2 s of the 10 s GPU phase at
// 2048² alone. Runtimes that trade places with size stay within 2× of
// each other (SSIMULACRA2 at 512²: WebGPU 1.85× CUDA; at 4096² the
// faster), so 4 leaves them both benched, and two sizes in a row keep
// one noisy cell from deciding.
const DominatedFactor = 4

// runLane benches one lane's targets, skipping cells whose predicted end
// would cross limit (counted from the bench's start). It goes size by
// size twice: the full-image targets first, then the others (strips). The
// chooser's main decision, CUDA against WebGPU on whole images, needs the
// full cells at every size, while strips are a fallback for images the
// full path cannot hold; benched size by size together, the strip cells
// of 2048² used the time the 4096² full cells needed, and those were
// extrapolated from 2048² where the runtimes had not yet traded places
// (issue #23). A GPU lane first compiles every (metric, target) at the
// smallest size (primeGPU), then settles the clock before each cell
// (settleGPU).
func (b *benchPlan) runLane(ctx context.Context, lane []int, limit time.Duration) {
	if slices.ContainsFunc(lane, func(i int) bool { return b.cfg.Targets[i].onGPU() }) {
		t0 := b.clock()
		b.primeGPU(ctx, lane, limit)
		// Compiling is not measuring: up to the allowance, the lane's
		// limit (and the CPU phase's after it) moves by the priming.
		a := min(b.clock().Sub(t0), b.allowance)
		limit += a
		b.mu.Lock()
		b.extra = max(b.extra, a)
		b.mu.Unlock()
	}
	var full, rest []int
	for _, ti := range lane {
		if b.cfg.Targets[ti].Mode == zenmetrics.ModeFull {
			full = append(full, ti)
		} else {
			rest = append(rest, ti)
		}
	}
	ls := &laneState{lastNs: map[laneKey]float64{}, stopped: map[laneKey]string{}, ns: map[sizeKey]float64{}, best: map[bestKey]float64{}}
	for _, pass := range [][]int{full, rest} {
		if len(pass) > 0 && !b.runPass(ctx, pass, limit, ls) {
			return
		}
	}
}

// laneKey is a (metric, target) of a lane.
type laneKey struct {
	m zenmetrics.Metric
	t int
}

// bestKey is a (metric, size, mode) of a lane.
type bestKey struct {
	m    zenmetrics.Metric
	si   int
	mode zenmetrics.Mode
}

// sizeKey is a (metric, target, size) of a lane.
type sizeKey struct {
	m  zenmetrics.Metric
	t  int
	si int
}

// laneState is what a lane's passes share.
type laneState struct {
	lastNs  map[laneKey]float64 // last ns/px, to predict the next size
	stopped map[laneKey]string  // why a target stopped for a metric
	ns      map[sizeKey]float64 // every GPU cell's ns/px
	best    map[bestKey]float64 // fastest GPU ns/px measured at a cell
	stretch gpuStretch          // the lane's GPU busy stretch
}

// dominated says whether GPU target ti's ns/px of m at the two sizes
// before si were each over DominatedFactor times the fastest target's
// there; it returns the ratio at si-1.
func (b *benchPlan) dominated(ls *laneState, ti int, m zenmetrics.Metric, si int) (float64, bool) {
	t := b.cfg.Targets[ti]
	if !t.onGPU() || si < 2 {
		return 0, false
	}
	var r float64
	for s := si - 2; s < si; s++ {
		ns, seen := ls.ns[sizeKey{m, ti, s}]
		best := ls.best[bestKey{m, s, t.Mode}]
		if !seen || best <= 0 || ns <= DominatedFactor*best {
			return 0, false
		}
		r = ns / best
	}
	return r, true
}

// runPass benches the targets of pass size by size; false: the lane was
// cancelled.
func (b *benchPlan) runPass(ctx context.Context, pass []int, limit time.Duration, ls *laneState) bool {
	type key = laneKey
	lastNs, stopped := ls.lastNs, ls.stopped
	for si, side := range b.sides {
		px := int64(side) * int64(side)
		for mi, m := range b.metrics {
			var done []cellRef // this (size, metric)'s measured cells
			for _, ti := range pass {
				t := b.cfg.Targets[ti]
				if t.Metrics != nil && !slices.Contains(t.Metrics, m) {
					continue
				}
				res := BenchResult{Metric: m, Class: t.Class, Backend: t.Backend.Name(), Side: side, Pixels: px, Path: t.Path}
				k := key{m, ti}
				bytes, ok := t.Backend.Estimate(m, side, side, t.Mode)
				switch {
				case ctx.Err() != nil:
					res.Skipped = "cancelled"
				case !ok:
					res.Skipped = "unsupported"
				case t.MaxPixels > 0 && px > t.MaxPixels:
					res.Skipped = "above this backend's bench size"
				case stopped[k] != "":
					res.Skipped = stopped[k]
				}
				if r, dom := b.dominated(ls, ti, m, si); dom && res.Skipped == "" {
					res.Skipped = fmt.Sprintf("dominated (%.1f× the fastest GPU target at %d²)", r, b.sides[si-1])
					stopped[k] = res.Skipped
				}
				ns, seen := lastNs[k]
				warm := 0
				if !seen || ns*float64(px) < float64(b.budget)/4 {
					warm = b.warm
				}
				if res.Skipped == "" {
					elapsed := b.clock().Sub(b.start)
					if seen {
						// Larger images cost a bit more per pixel (caches).
						run := ns * 1.2 * float64(px)
						predicted := time.Duration(run * float64(warm+1))
						if t.onGPU() && b.settle.Cap >= 0 {
							// A warm GPU settles in two slices.
							predicted += 2 * max(time.Duration(run), b.settle.Slice)
						}
						if elapsed+predicted > limit {
							res.Skipped = fmt.Sprintf("time limit (%v predicted, %v left)", predicted.Round(time.Millisecond), (limit - elapsed).Round(time.Millisecond))
						}
					} else if elapsed > limit {
						res.Skipped = "time limit"
					}
				}
				if res.Skipped != "" {
					b.record(si, mi, ti, res)
					continue
				}
				ref, dist := b.pair(si)
				if t.RecordVRAM && bytes > 0 {
					res.VRAMMiB = float64(bytes) / (1 << 20)
					res.VRAMPredictedMiB = res.VRAMMiB
				}
				conc := concurrency(t, bytes)
				if conc > 1 {
					res.Concurrent = conc
				}
				var g *gpuStretch
				if t.onGPU() {
					g = &ls.stretch
				}
				res.Runs, res.Err = b.timeCell(ctx, t, m, ref, dist, warm, conc, g, limit, &res)
				if res.Err != nil {
					if ctxErr := ctx.Err(); ctxErr != nil {
						b.mu.Lock()
						b.cancelled = ctxErr
						b.mu.Unlock()
						res.Error = res.Err.Error()
						b.record(si, mi, ti, res)
						return false
					}
					res.Error = res.Err.Error()
					stopped[k] = "failed at a smaller size"
					if errors.Is(res.Err, zenmetrics.ErrOutOfMemory) {
						b.mu.Lock()
						b.p.RecordOOM(m, Cell{Backend: t.Class, Pixels: px})
						b.mu.Unlock()
						stopped[k] = "out of memory at a smaller size"
					}
					b.log.Warn("bench cell failed", "metric", m, "backend", t.Class, "side", side, "err", res.Err)
				} else {
					b.measuredCell(ls, si, ti, &res)
					done = append(done, cellRef{ti, res})
					b.log.Debug("bench cell", "metric", m, "backend", t.Class, "side", side, "ns_per_px", res.NsPerPx,
						"runs", len(res.Runs), "spread", res.Spread, "settle_runs", res.SettleRuns, "unsettled", res.Unsettled,
						"concurrent", conc)
				}
				b.record(si, mi, ti, res)
			}
			if !b.runoff(ctx, ls, si, mi, done, limit) {
				return false
			}
		}
	}
	return true
}

// measuredCell fills in res's figures from its runs and books them: the
// lane's predictions and dominance, the profile's sample.
func (b *benchPlan) measuredCell(ls *laneState, si, ti int, res *BenchResult) {
	t := b.cfg.Targets[ti]
	m, px := res.Metric, res.Pixels
	p50 := median(res.Runs)
	res.NsPerPx = float64(p50.Nanoseconds()) / float64(px)
	res.MPPerS = 1e3 / res.NsPerPx
	res.Spread = spread(res.Runs)
	ls.lastNs[laneKey{m, ti}] = res.NsPerPx
	if t.onGPU() {
		ls.ns[sizeKey{m, ti, si}] = res.NsPerPx
		best := math.Inf(1)
		for tj := range b.cfg.Targets {
			if ns, ok := ls.ns[sizeKey{m, tj, si}]; ok && b.cfg.Targets[tj].Mode == t.Mode {
				best = min(best, ns)
			}
		}
		ls.best[bestKey{m, si, t.Mode}] = best
	}
	b.mu.Lock()
	b.p.SetSample(m, t.Class, Sample{Pixels: px, NsPerPx: res.NsPerPx, VRAMMiB: res.VRAMMiB, Spread: res.Spread})
	clearOOM(b.p, m, Cell{Backend: t.Class, Pixels: px})
	b.measured[m] = true
	b.mu.Unlock()
}

// primeGPU runs one untimed task of every (metric, target) of a GPU lane
// at the smallest size before any cell: the first task of a metric
// compiles its kernels, a pause of a CPU's work during which the GPU
// idles and drops its clock. Done cell by cell, each metric's first cell
// would wait out a new ramp; done here, the GPU ramps once, at the first
// cell. The tasks run side by side: on a machine whose kernel cache is
// cold, CUDA compiles every metric's module (NVRTC, one process-wide
// program per module, safe to run at once) and that took 7.5 s of the
// 15 s bench one after another on the H200, leaving the first bench's
// GPU phase no time for sizes over 1024². Failures are left to the
// cells, which meet them again and record them.
func (b *benchPlan) primeGPU(ctx context.Context, lane []int, limit time.Duration) {
	if len(b.sides) == 0 {
		return
	}
	side := b.sides[0]
	px := int64(side) * int64(side)
	ref, dist := b.pair(0)
	var wg sync.WaitGroup
	for _, m := range b.metrics {
		for _, ti := range lane {
			t := b.cfg.Targets[ti]
			if ctx.Err() != nil || b.clock().Sub(b.start) > limit {
				break
			}
			if !t.onGPU() || (t.Metrics != nil && !slices.Contains(t.Metrics, m)) || (t.MaxPixels > 0 && px > t.MaxPixels) {
				continue
			}
			if _, ok := t.Backend.Estimate(m, side, side, t.Mode); !ok {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = recover() }()
				_, _ = zenmetrics.ScoreOnce(ctx, t.Backend, m, ref, dist, zenmetrics.Options{Mode: t.Mode})
			}()
		}
	}
	wg.Wait()
}

// runsFor is the most timed runs of t's cells: BenchConfig.Runs, or the
// default of its kind.
func (b *benchPlan) runsFor(t BenchTarget) int {
	switch {
	case b.runs > 0:
		return b.runs
	case t.onGPU():
		return DefaultGPURuns
	}
	return DefaultRuns
}

// timeCell does a cell's warm-ups (a MemoryMeter measures the device
// memory on the last one, or on an extra run when there is none), then,
// for a GPU target (g non-nil), settles the GPU's clock (settleGPU), then
// up to runsFor(t) timed rounds of conc tasks side by side, stopping once
// the rounds add up to b.budget. It returns the time of every task.
//
// The p50 of these runs is the cell's time. After settling, what is left
// is one-sided noise (a run is slowed by something else, never sped up)
// and an odd outlier; the median ignores up to two slow runs of five and
// still follows the cell where the minimum would follow a lucky run.
func (b *benchPlan) timeCell(ctx context.Context, t BenchTarget, m zenmetrics.Metric, ref, dist *zenmetrics.Image, warm, conc int, g *gpuStretch, limit time.Duration, res *BenchResult) ([]time.Duration, error) {
	opt := zenmetrics.Options{Mode: t.Mode}
	once := func() (err error) {
		defer zenmetrics.Recover(&err)
		_, err = zenmetrics.ScoreOnce(ctx, t.Backend, m, ref, dist, opt)
		return err
	}
	// note records a run from t0 in the GPU's stretch; timed says it
	// counts as GPU work whatever its length.
	note := func(t0 time.Time, timed bool) {
		if g != nil {
			t1 := b.clock()
			g.note(t0, t1, b.settle.IdleGap, timed || t1.Sub(t0) <= b.settle.IdleGap)
		}
	}
	single := func() error {
		t0 := b.clock()
		err := once()
		note(t0, false)
		return err
	}
	// round runs conc tasks side by side.
	round := func(out []time.Duration, timed bool) ([]time.Duration, error) {
		t0 := b.clock()
		var err error
		if conc <= 1 {
			err = once()
			out = append(out, b.clock().Sub(t0))
		} else {
			ds := make([]time.Duration, conc)
			errs := make([]error, conc)
			var wg sync.WaitGroup
			for i := range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t0 := b.clock()
					errs[i] = once()
					ds[i] = b.clock().Sub(t0)
				}()
			}
			wg.Wait()
			out, err = append(out, ds...), errors.Join(errs...)
		}
		note(t0, timed)
		return out, err
	}
	mm, meter := t.Backend.(MemoryMeter)
	meter = meter && t.RecordVRAM
	measure := func(fn func() error) error {
		peak, dev, err := mm.MeasureMemory(ctx, fn)
		if err != nil {
			return err
		}
		res.VRAMMiB = float64(peak) / (1 << 20)
		res.VRAMMeasured = true
		res.VRAMDeviceMiB = -1
		if dev >= 0 {
			res.VRAMDeviceMiB = float64(dev) / (1 << 20)
		}
		return nil
	}
	for i := range warm {
		var err error
		if meter && i == warm-1 {
			err = measure(single)
		} else {
			_, err = round(nil, false)
		}
		if err != nil {
			return nil, err
		}
	}
	if meter && warm == 0 {
		if err := measure(single); err != nil {
			return nil, err
		}
	}
	if g != nil {
		n, settled, err := b.settleGPU(ctx, g, limit, func() (time.Duration, error) {
			ds, err := round(nil, true)
			return median(ds), err
		})
		res.SettleRuns, res.Unsettled = n, !settled
		if err != nil {
			return nil, err
		}
	}
	var out []time.Duration
	var spent time.Duration
	for r := 0; r < b.runsFor(t) && (r == 0 || spent < b.budget); r++ {
		t0 := b.clock()
		var err error
		if out, err = round(out, true); err != nil {
			return nil, err
		}
		spent += b.clock().Sub(t0)
	}
	return out, nil
}

// spread is the half range of ds over their median, at least 0.001 (the
// profile keeps three decimals, and 0 there means "not measured"); 0 for
// fewer than two runs, which show no spread.
func spread(ds []time.Duration) float64 {
	if len(ds) < 2 {
		return 0
	}
	p50 := median(ds)
	if p50 <= 0 {
		return 0
	}
	lo, hi := slices.Min(ds), slices.Max(ds)
	return max(0.001, float64(hi-lo)/2/float64(p50))
}
