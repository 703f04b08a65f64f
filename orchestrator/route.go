package orchestrator

import (
	"fmt"
	"math"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
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
// leaves every rule to the pure functions of chooser.go.
func (o *Orchestrator) admit(j *job, r ladder.Rung) (ladder.Verdict, *slot, float64) {
	m := j.task.Metric
	w, h := j.ref.Width, j.ref.Height
	px := j.ref.Pixels()
	prof := o.snapshot()
	class := r.Class()
	samples := prof.Samples(m, class)
	cells := prof.OOMCells(m)
	taskNs := nsPerPxOrDefault(samples, class, px) * float64(px)

	if !r.IsGPU() {
		if o.cpu == nil {
			return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Reason: "no CPU backend"}, nil, 0
		}
		if _, ok := o.cpu.estimate(m, w, h, zenmetrics.ModeFull); !ok {
			return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Backend: o.cpu.name,
				Reason: fmt.Sprintf("%s does not implement %s", o.cpu.name, m)}, nil, 0
		}
		if blocked, at := oomBlocked(cells, samples, class, px); blocked {
			return ladder.Verdict{Trigger: ladder.TriggerPredicted, Backend: o.cpu.name,
				Reason: fmt.Sprintf("ran out of memory at %d pixels before", at)}, nil, 0
		}
		return ladder.Verdict{OK: true, Backend: o.cpu.name}, o.cpu, taskNs
	}

	// A reference uploaded to a GPU pins the task to that rung and slot:
	// rungs above it are skipped, the rung itself needs no prediction.
	if hm := j.meta; hm != nil && hm.slot.gpu && !hm.slot.lost.Load() {
		switch {
		case r < hm.rung:
			return ladder.Verdict{Trigger: ladder.TriggerPredicted, Reason: "reference was uploaded to " + hm.rung.String()}, nil, 0
		case r == hm.rung:
			return ladder.Verdict{OK: true, Backend: hm.slot.name}, hm.slot, taskNs
		}
	}
	if blocked, at := oomBlocked(cells, samples, class, px); blocked {
		return ladder.Verdict{Trigger: ladder.TriggerPredicted,
			Reason: fmt.Sprintf("%s ran out of memory at %d pixels before (profile cell)", class, at)}, nil, 0
	}
	floor := o.poolConfig().VRAMSafetyFloorMiB << 20
	var best *slot
	bestFinish := math.Inf(1)
	var refusals []string
	alive, unsupported := 0, 0
	for _, g := range o.gpus {
		if g.lost.Load() {
			continue
		}
		alive++
		est, ok := g.estimate(m, w, h, r.Mode())
		if !ok {
			unsupported++
			continue
		}
		need := predictBytes(samples, px, est)
		if ok, why := vramAdmits(need, g.freeBytes(), floor); !ok {
			refusals = append(refusals, g.name+": "+why)
			continue
		}
		backlog, workers := g.backlog()
		if f := finishNs(backlog, workers, g.initNs(prof), taskNs); f < bestFinish {
			best, bestFinish = g, f
		}
	}
	switch {
	case alive == 0:
		return ladder.Verdict{Trigger: ladder.TriggerUnsupported, Reason: "no GPU backend alive"}, nil, 0
	case best == nil && unsupported == alive:
		return ladder.Verdict{Trigger: ladder.TriggerUnsupported,
			Reason: fmt.Sprintf("GPU backend cannot run %s in %s mode", m, r.Mode())}, nil, 0
	case best == nil:
		return ladder.Verdict{Trigger: ladder.TriggerPredicted, Reason: strings.Join(refusals, "; ")}, nil, 0
	}
	if cpuFinish, ok := o.cpuFinish(m, w, h, px, prof, cells); ok && preferCPU(bestFinish, cpuFinish) {
		return ladder.Verdict{Trigger: ladder.TriggerPredicted, Backend: best.name,
			Reason: fmt.Sprintf("cpu predicted to finish sooner (%.1f ms vs %.1f ms)", cpuFinish/1e6, bestFinish/1e6)}, nil, 0
	}
	return ladder.Verdict{OK: true, Backend: best.name}, best, taskNs
}

// cpuFinish predicts when the task would finish on the CPU; ok is false
// when the CPU cannot take it (no backend, metric not implemented, OOM cell).
func (o *Orchestrator) cpuFinish(m zenmetrics.Metric, w, h int, px int64, prof *capability.Profile, cells []capability.Cell) (float64, bool) {
	if o.cpu == nil {
		return 0, false
	}
	if _, ok := o.cpu.estimate(m, w, h, zenmetrics.ModeFull); !ok {
		return 0, false
	}
	samples := prof.Samples(m, capability.ClassCPU)
	if blocked, _ := oomBlocked(cells, samples, capability.ClassCPU, px); blocked {
		return 0, false
	}
	backlog, workers := o.cpu.backlog()
	return finishNs(backlog, workers, 0, nsPerPxOrDefault(samples, capability.ClassCPU, px)*float64(px)), true
}
