package capability

import (
	"context"
	"slices"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// RunoffRuns is how many more runs each of two GPU targets gets in a
// runoff (benchPlan.runoff).
const RunoffRuns = 6

// cellRef is a measured cell of the (size, metric) a lane is benching.
type cellRef struct {
	ti  int
	res BenchResult
}

// runoff settles close calls. Among the GPU cells just measured for one
// size and metric, per mode, when the two fastest differ by no more than
// the larger of their spreads the bench cannot tell them apart, yet the
// chooser will pick one for every image of that size. Such a pair is
// timed again, alternately (A B A B ...), RunoffRuns times each, so that
// both see the same clock, heat and host load; the runs are added to
// both cells and they are booked again. On the H200 a quick bench's
// WebGPU SSIMULACRA2 1024² cell measured 1.24 ns/px ±15 % against CUDA's
// 1.27 ±1.1 % and routed 1 MP images to WebGPU, which a thorough bench
// timed at 1.68 against 1.17 (a 44 % regret, BENCHMARKS.md session 8).
// It costs 2 × RunoffRuns runs of the pair, only when they are close,
// and is skipped when it would cross limit. false: ctx ended.
func (b *benchPlan) runoff(ctx context.Context, ls *laneState, si, mi int, done []cellRef, limit time.Duration) bool {
	modes := []zenmetrics.Mode{}
	for _, c := range done {
		if mode := b.cfg.Targets[c.ti].Mode; b.cfg.Targets[c.ti].onGPU() && !slices.Contains(modes, mode) {
			modes = append(modes, mode)
		}
	}
	for _, mode := range modes {
		var idx []int
		for i, c := range done {
			if t := b.cfg.Targets[c.ti]; t.onGPU() && t.Mode == mode {
				idx = append(idx, i)
			}
		}
		if len(idx) < 2 {
			continue
		}
		slices.SortStableFunc(idx, func(i, j int) int {
			switch a, c := done[i].res.NsPerPx, done[j].res.NsPerPx; {
			case a < c:
				return -1
			case a > c:
				return 1
			}
			return 0
		})
		pair := [2]*cellRef{&done[idx[0]], &done[idx[1]]}
		lo, hi := pair[0].res.NsPerPx, pair[1].res.NsPerPx
		if lo <= 0 || (hi-lo)/lo > max(pair[0].res.Spread, pair[1].res.Spread) {
			continue // a clear winner
		}
		per := median(pair[0].res.Runs) + median(pair[1].res.Runs)
		if b.clock().Sub(b.start)+time.Duration(RunoffRuns)*per > limit {
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		ref, dist := b.pair(si)
		var extra [2][]time.Duration
		failed := false
		for range RunoffRuns {
			for k, c := range pair {
				t := b.cfg.Targets[c.ti]
				t0 := b.clock()
				err := func() (err error) {
					defer zenmetrics.Recover(&err)
					_, err = zenmetrics.ScoreOnce(ctx, t.Backend, c.res.Metric, ref, dist, zenmetrics.Options{Mode: t.Mode})
					return err
				}()
				t1 := b.clock()
				ls.stretch.note(t0, t1, b.settle.IdleGap, true)
				if err != nil {
					b.log.Warn("bench runoff failed; the cells keep their own runs", "metric", c.res.Metric, "backend", t.Class, "err", err)
					failed = true
					break
				}
				extra[k] = append(extra[k], t1.Sub(t0))
			}
			if failed {
				break
			}
		}
		if failed {
			if ctx.Err() != nil {
				return false
			}
			continue
		}
		for k, c := range pair {
			c.res.Runs = append(slices.Clone(c.res.Runs), extra[k]...)
			c.res.Runoff = len(extra[k])
			b.measuredCell(ls, si, c.ti, &c.res)
			b.record(si, mi, c.ti, c.res)
			b.log.Debug("bench runoff", "metric", c.res.Metric, "backend", b.cfg.Targets[c.ti].Class, "side", c.res.Side,
				"ns_per_px", c.res.NsPerPx, "runs", len(c.res.Runs), "spread", c.res.Spread)
		}
	}
	return true
}
