package orchestrator

import (
	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// A rung is a memory layout; which profile cells describe it depends on
// the slot that runs it: the CPU's class, or the slot's GPU runtime's
// class in the rung's layout (WebGPU "gpu_full", CUDA "cuda_full"). This
// file is the one place that maps (slot, rung) to a class, so the chooser,
// the worker's checks, the speed estimates and the OOM cells all agree.

// seedRuntime is whose cells a GPU runtime without cells of its own in a
// profile borrows: WebGPU's. Before CUDA had classes its slots ran on the
// gpu_* numbers, so a profile written then routes as it did until a bench
// measures the CUDA cells.
const seedRuntime = capability.RuntimeWebGPU

// gpuRuntime is the runtime of a GPU slot; a slot that names none is
// WebGPU (the runtime every GPU slot had before CUDA).
func (b *backendSlot) gpuRuntime() capability.Runtime {
	if b.runtime == "" {
		return capability.RuntimeWebGPU
	}
	return b.runtime
}

// class is the profile class of rung r on this slot.
func (b *backendSlot) class(r ladder.Rung) string {
	if !r.IsGPU() || !b.gpu {
		return r.Class()
	}
	return b.gpuRuntime().Class(r.Mode())
}

// cellView is what the profile says about one slot on one rung for one
// metric.
type cellView struct {
	// class is the slot's own class: the key of its speed estimate and
	// where an out-of-memory cell of its attempts is recorded.
	class string
	// source is the class whose samples (and defaults) are used: class,
	// or the seed runtime's class in the same layout when the profile has
	// no samples of class.
	source  string
	samples []capability.Sample
	// cells are the OOM cells that apply, all labelled class.
	cells []capability.Cell
}

// view reads the slot's cells of metric m on rung r from p (nil: none).
// Without samples of its own class, a GPU slot borrows the seed runtime's
// samples and its OOM cells too (they were shared before runtimes had
// classes, and may have been the CUDA slot's own); once its class has
// samples it uses only its own, so one runtime's failures never rule a
// size out for the other.
func (b *backendSlot) view(p *capability.Profile, m zenmetrics.Metric, r ladder.Rung) cellView {
	class := b.class(r)
	v := cellView{class: class, source: class, samples: p.Samples(m, class)}
	cells := p.OOMCells(m)
	add := func(from string) {
		for _, c := range cells {
			if c.Backend == from {
				c.Backend = class
				v.cells = append(v.cells, c)
			}
		}
	}
	add(class)
	if len(v.samples) > 0 || !r.IsGPU() || !b.gpu {
		return v
	}
	seed := seedRuntime.Class(r.Mode())
	if seed == class {
		return v
	}
	v.source, v.samples = seed, p.Samples(m, seed)
	add(seed)
	return v
}

// nsPerPx is the profile's ns/px at this size: measured (interpolated),
// else the default of the source class.
func (v cellView) nsPerPx(px int64) float64 { return nsPerPxOrDefault(v.samples, v.source, px) }

// blocked says whether an OOM cell rules this size out (oomBlocked).
func (v cellView) blocked(px int64) (bool, int64) { return oomBlocked(v.cells, v.samples, v.class, px) }

// key is the speed estimate's key for a task of m at px pixels.
func (v cellView) key(m zenmetrics.Metric, px int64) emaKey { return emaKey{m, v.class, sizeClass(px)} }
