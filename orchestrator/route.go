package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// route asks the ladder for the job's next rung, with admit as the
// chooser, and queues the job on the chosen slot; a job no rung admits
// ends as FullyExhausted.
func (o *Orchestrator) route(j *job) {
	var chosen *slot
	var pred float64
	r := j.plan.Next(func(r ladder.Rung) ladder.Verdict {
		v, s, p := o.admit(j, r)
		if v.OK {
			chosen, pred = s, p
		}
		return v
	})
	if r == ladder.FullyExhausted {
		j.rung = ladder.FullyExhausted
		o.finish(j, Result{Err: j.plan.Exhausted()})
		return
	}
	j.rung, j.predNs = r, pred
	chosen.enqueue(j)
}

// snapshot is the current profile (nil: none). Profiles are replaced, never
// changed in place, so the caller may read it without a lock.
func (o *Orchestrator) snapshot() *capability.Profile {
	o.profMu.RLock()
	defer o.profMu.RUnlock()
	return o.profile
}

// admit is the chooser's verdict on rung r for job j, with the slot to use
// and the predicted ns of the task there. It gathers the live inputs and
// leaves every rule to the pure functions of chooser.go. Each slot is
// judged by its own class's cells (classes.go): on a GPU rung a CUDA slot
// by cuda_* cells, a WebGPU slot by gpu_* ones, so the faster runtime for
// this metric and size wins and one runtime's OOM cell leaves the other
// free to try.
func (o *Orchestrator) admit(j *job, r ladder.Rung) (ladder.Verdict, *slot, float64) {
	m := j.task.Metric
	w, h := j.ref.Width, j.ref.Height
	px := j.ref.Pixels()
	prof := o.snapshot()

	if !r.IsGPU() {
		if o.cpu == nil {
			return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Reason: "no CPU backend"}, nil, 0
		}
		if _, ok := o.cpu.estimate(m, w, h, zenmetrics.ModeFull); !ok {
			// Estimate declines both a metric the backend lacks and a size
			// below the metric's minimum (IW-SSIM's 161 px, 8 px for the
			// others): say which, so a too-small image is not reported as a
			// missing metric.
			reason := fmt.Sprintf("%s does not implement %s", o.cpu.name, m)
			if err := cpu.CheckSize(m, w, h); err != nil {
				reason = err.Error()
			}
			return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Backend: o.cpu.name, Reason: reason}, nil, 0
		}
		v := o.cpu.view(prof, m, r)
		if blocked, at := v.blocked(px); blocked {
			return ladder.Verdict{Trigger: ladder.TriggerPredicted, Backend: o.cpu.name,
				Reason: fmt.Sprintf("ran out of memory at %d pixels before", at)}, nil, 0
		}
		ns := o.cpu.nsPerPx(v.key(m, px), v.nsPerPx(px), o.cfg.Balance == BalanceAdaptive)
		return ladder.Verdict{OK: true, Backend: o.cpu.name}, o.cpu, ns * float64(px)
	}

	// A reference uploaded to a GPU pins the task to that rung and slot:
	// rungs above it are skipped, the rung itself needs no prediction.
	if hm := j.meta; hm != nil && hm.slot.gpu && !hm.slot.lost.Load() {
		switch {
		case r < hm.rung:
			return ladder.Verdict{Trigger: ladder.TriggerPredicted, Reason: "reference was uploaded to " + hm.rung.String()}, nil, 0
		case r == hm.rung:
			return ladder.Verdict{OK: true, Backend: hm.slot.name}, hm.slot, hm.slot.view(prof, m, r).nsPerPx(px) * float64(px)
		}
	}
	floor := o.poolConfig().VRAMSafetyFloorMiB << 20
	adaptive := o.cfg.Balance == BalanceAdaptive
	var cands []candidate
	var refusals, oomed []string
	alive, unsupported := 0, 0
	for _, g := range o.gpus {
		if g.lost.Load() && !o.cfg.mut.noLostRule {
			continue
		}
		alive++
		v := g.view(prof, m, r)
		if blocked, at := v.blocked(px); blocked {
			oomed = append(oomed, fmt.Sprintf("%s ran out of memory at %d pixels before (profile cell)", v.class, at))
			continue
		}
		est, ok := g.estimate(m, w, h, r.Mode())
		if !ok {
			unsupported++
			continue
		}
		need := predictBytes(v.samples, px, est)
		if ok, why := vramAdmits(need, g.freeBytes(), floor); !ok {
			refusals = append(refusals, g.name+": "+why)
			continue
		}
		backlog, workers := g.backlog()
		tns := g.nsPerPx(v.key(m, px), v.nsPerPx(px), adaptive) * float64(px)
		cands = append(cands, candidate{s: g, finish: finishNs(backlog, workers, g.initNs(prof), tns),
			task: tns, load: float64(g.depthNow()) / float64(workers), cold: g.backendNow() == nil})
	}
	switch {
	case alive == 0:
		return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Reason: "no GPU backend alive"}, nil, 0
	case len(cands) == 0 && unsupported == alive:
		return ladder.Verdict{Trigger: ladder.TriggerUnsupported,
			Reason: fmt.Sprintf("GPU backend cannot run %s in %s mode", m, r.Mode())}, nil, 0
	case len(cands) == 0:
		// Cells first: slots of one runtime share a class, so its cell
		// is said once.
		return ladder.Verdict{Trigger: ladder.TriggerPredicted,
			Reason: strings.Join(append(slices.Compact(oomed), refusals...), "; ")}, nil, 0
	}
	best := pick(o.cfg.Balance, cands, &o.rr)
	if cpuFinish, ok := o.cpuFinish(m, w, h, px, prof); ok && preferCPU(best.finish, cpuFinish) {
		// Two reasons to spill to the CPU: the chosen device is cold
		// (its initialisation outweighs its gain for this task), or every
		// GPU queue is past its sweet spot (backpressure: more queued GPU
		// work only adds latency while CPU workers idle).
		why := ""
		switch {
		case best.cold:
			why = "cpu predicted to finish sooner than a cold " + best.s.name
		case !o.cfg.mut.noBackpressure && o.allBackedUp(cands):
			why = "backpressure: every GPU queue past its sweet spot and cpu predicted to finish sooner"
		}
		if why != "" {
			return ladder.Verdict{Trigger: ladder.TriggerPredicted, Backend: best.s.name,
				Reason: fmt.Sprintf("%s (%.1f ms vs %.1f ms)", why, cpuFinish/1e6, best.finish/1e6)}, nil, 0
		}
	}
	return ladder.Verdict{OK: true, Backend: best.s.name}, best.s, best.task
}

// candidate is a GPU slot that can take the task, with its predictions.
type candidate struct {
	s      *slot
	finish float64 // predicted ns until the task would be done there
	task   float64 // predicted ns of the task itself there
	load   float64 // tasks queued or running per worker
	cold   bool    // not opened yet
}

// pick applies the balance strategy to the candidates (in discovery
// order; ties go to the first). rr is the round-robin turn counter.
func pick(b Balance, cands []candidate, rr interface{ Add(uint64) uint64 }) candidate {
	best := cands[0]
	switch b {
	case BalanceRoundRobin:
		return cands[(rr.Add(1)-1)%uint64(len(cands))]
	case BalanceLeastLoaded:
		for _, c := range cands[1:] {
			if c.load < best.load || (c.load == best.load && c.finish < best.finish) {
				best = c
			}
		}
	default: // adaptive, weighted: the predicted finish, from different speeds
		for _, c := range cands[1:] {
			if c.finish < best.finish {
				best = c
			}
		}
	}
	return best
}

// allBackedUp says whether every candidate GPU slot's queue is deeper
// than its sweet spot.
func (o *Orchestrator) allBackedUp(cands []candidate) bool {
	for _, c := range cands {
		if c.s.depthNow() <= o.sweetSpot(c.s) {
			return false
		}
	}
	return true
}

// cpuFinish predicts when the task would finish on the CPU; ok is false
// when the CPU cannot take it (no backend, metric not implemented, OOM cell).
func (o *Orchestrator) cpuFinish(m zenmetrics.Metric, w, h int, px int64, prof *capability.Profile) (float64, bool) {
	if o.cpu == nil {
		return 0, false
	}
	if _, ok := o.cpu.estimate(m, w, h, zenmetrics.ModeFull); !ok {
		return 0, false
	}
	v := o.cpu.view(prof, m, ladder.Cpu)
	if blocked, _ := v.blocked(px); blocked {
		return 0, false
	}
	backlog, workers := o.cpu.backlog()
	ns := o.cpu.nsPerPx(v.key(m, px), v.nsPerPx(px), o.cfg.Balance == BalanceAdaptive)
	return finishNs(backlog, workers, 0, ns*float64(px)), true
}
