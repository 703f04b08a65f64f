package orchestrator

import (
	"slices"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
)

// RouteCompare is one (metric, size) of CompareRouting: the whole-image
// class a profile's predictions make the chooser prefer, the class a
// reference profile (a slower, more thorough bench) prefers, and what
// following the first costs by the reference's own numbers.
type RouteCompare struct {
	Metric zenmetrics.Metric
	Pixels int64
	// Chosen and Best are the fastest class for one task by the compared
	// profile and by the reference; GPUChosen and GPUBest the faster GPU
	// runtime (gpu_full, cuda_full) by each, "" with fewer than two.
	Chosen, Best       string
	GPUChosen, GPUBest string
	// Regret is the reference's ns/px of Chosen over that of Best, minus
	// one (0 when they agree); GPURegret the same for the GPU runtimes.
	Regret, GPURegret float64
	// NsPerPx is the prediction per class: [0] the compared profile's,
	// [1] the reference's.
	NsPerPx map[string][2]float64
}

// routeClasses are the whole-image classes the chooser weighs against each
// other for a task that fits (the strip classes are a fallback's).
var routeClasses = []string{capability.ClassCUDAFull, capability.ClassGPUFull, capability.ClassCPU}

// CompareRouting checks the routing p leads to against ref, for each
// metric and pixel count: the classes both profiles measured are ranked by
// the chooser's own prediction (predictNsPerPx: log-linear between the
// measured sizes, ×1.2 past the largest), and where p's fastest class is
// not ref's, the regret is how much slower ref measured p's pick. The
// chooser's other inputs (queues, cold devices, free memory) are live
// state, not profile, and are the same whichever profile is loaded, so a
// profile whose picks agree with a thorough one's routes as well as it.
func CompareRouting(p, ref *capability.Profile, metrics []zenmetrics.Metric, pixels []int64) []RouteCompare {
	var out []RouteCompare
	for _, m := range metrics {
		var classes []string
		for _, c := range routeClasses {
			if len(measured(p, m, c)) > 0 && len(measured(ref, m, c)) > 0 {
				classes = append(classes, c)
			}
		}
		if len(classes) == 0 {
			continue
		}
		for _, px := range pixels {
			rc := RouteCompare{Metric: m, Pixels: px, NsPerPx: map[string][2]float64{}}
			for _, c := range classes {
				a, _ := predictNsPerPx(measured(p, m, c), px)
				b, _ := predictNsPerPx(measured(ref, m, c), px)
				rc.NsPerPx[c] = [2]float64{a, b}
			}
			rc.Chosen, rc.Best, rc.Regret = pickBoth(rc.NsPerPx, classes)
			var gpus []string
			for _, c := range classes {
				if c != capability.ClassCPU {
					gpus = append(gpus, c)
				}
			}
			if len(gpus) > 1 {
				rc.GPUChosen, rc.GPUBest, rc.GPURegret = pickBoth(rc.NsPerPx, gpus)
			}
			out = append(out, rc)
		}
	}
	return out
}

// measured is p's timed samples of class c for metric m.
func measured(p *capability.Profile, m zenmetrics.Metric, c string) []capability.Sample {
	var out []capability.Sample
	for _, s := range p.Samples(m, c) {
		if s.NsPerPx > 0 && s.Pixels > 0 {
			out = append(out, s)
		}
	}
	return out
}

// pickBoth returns the fastest of classes by the compared prediction
// ([0]) and by the reference's ([1]), ties to the first listed, and the
// regret of the first by the reference's numbers.
func pickBoth(ns map[string][2]float64, classes []string) (chosen, best string, regret float64) {
	argmin := func(k int) string {
		b := classes[0]
		for _, c := range classes[1:] {
			if ns[c][k] < ns[b][k] {
				b = c
			}
		}
		return b
	}
	chosen, best = argmin(0), argmin(1)
	if chosen != best && ns[best][1] > 0 {
		regret = ns[chosen][1]/ns[best][1] - 1
	}
	return chosen, best, regret
}

// RouteSummary condenses CompareRouting's rows: how many agree on the
// fastest class and on the GPU runtime, and the worst regrets.
type RouteSummary struct {
	Rows, Agree, GPURows, GPUAgree int
	WorstRegret, WorstGPURegret    float64
	Worst, WorstGPU                *RouteCompare
}

// SummarizeRouting counts CompareRouting's agreements.
func SummarizeRouting(rows []RouteCompare) RouteSummary {
	var s RouteSummary
	for i := range rows {
		r := &rows[i]
		s.Rows++
		if r.Chosen == r.Best {
			s.Agree++
		}
		if r.Chosen != r.Best && (s.Worst == nil || r.Regret > s.WorstRegret) {
			s.WorstRegret, s.Worst = r.Regret, r
		}
		if r.GPUChosen != "" {
			s.GPURows++
			if r.GPUChosen == r.GPUBest {
				s.GPUAgree++
			}
			if r.GPUChosen != r.GPUBest && (s.WorstGPU == nil || r.GPURegret > s.WorstGPURegret) {
				s.WorstGPURegret, s.WorstGPU = r.GPURegret, r
			}
		}
	}
	return s
}

// RoutingSides are the square sides CompareRouting is asked about by
// zmwarm: every power of two from 256 to 8192, so that sizes between and
// beyond the benched ones (the chooser's interpolation and extrapolation)
// are checked too.
func RoutingSides() []int {
	var out []int
	for s := 256; s <= 8192; s *= 2 {
		out = append(out, s)
	}
	return out
}

// sidesToPixels squares each side.
func sidesToPixels(sides []int) []int64 {
	out := make([]int64, 0, len(sides))
	for _, s := range sides {
		out = append(out, int64(s)*int64(s))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RoutingPixels is RoutingSides squared.
func RoutingPixels() []int64 { return sidesToPixels(RoutingSides()) }
