package orchestrator

import (
	"cmp"
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
	// Noise is, where Chosen is not Best, the regret the reference's own
	// noise allows: (ns·spread of Chosen + ns·spread of Best) / ns of
	// Best. Regret ≤ Noise means the two cells' timed runs overlap in the
	// reference (the fastest run of Chosen was no slower than the slowest
	// of Best): the reference cannot tell the two apart, so the
	// disagreement is a coin flip, not a routing error. NoiseKnown is
	// false where either spread is unknown (a profile written before
	// spreads were kept, a one-run cell). GPUNoise and GPUNoiseKnown are
	// the same for GPUChosen and GPUBest.
	Noise, GPUNoise           float64
	NoiseKnown, GPUNoiseKnown bool
	// NsPerPx is the prediction per class: [0] the compared profile's,
	// [1] the reference's; Spread is the spread of the samples each
	// prediction draws on (predictSpread), 0 where unknown.
	NsPerPx, Spread map[string][2]float64
}

// WithinNoise says Chosen and Best differ but the reference's noise
// covers the regret (a coin flip).
func (r *RouteCompare) WithinNoise() bool {
	return r.Chosen != r.Best && r.NoiseKnown && r.Regret <= r.Noise
}

// GPUWithinNoise is WithinNoise for the GPU runtimes.
func (r *RouteCompare) GPUWithinNoise() bool {
	return r.GPUChosen != r.GPUBest && r.GPUNoiseKnown && r.GPURegret <= r.GPUNoise
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
			rc := RouteCompare{Metric: m, Pixels: px, NsPerPx: map[string][2]float64{}, Spread: map[string][2]float64{}}
			for _, c := range classes {
				a, _ := predictNsPerPx(measured(p, m, c), px)
				b, _ := predictNsPerPx(measured(ref, m, c), px)
				rc.NsPerPx[c] = [2]float64{a, b}
				rc.Spread[c] = [2]float64{predictSpread(measured(p, m, c), px), predictSpread(measured(ref, m, c), px)}
			}
			rc.Chosen, rc.Best, rc.Regret = pickBoth(rc.NsPerPx, classes)
			rc.Noise, rc.NoiseKnown = rc.noise(rc.Chosen, rc.Best)
			var gpus []string
			for _, c := range classes {
				if c != capability.ClassCPU {
					gpus = append(gpus, c)
				}
			}
			if len(gpus) > 1 {
				rc.GPUChosen, rc.GPUBest, rc.GPURegret = pickBoth(rc.NsPerPx, gpus)
				rc.GPUNoise, rc.GPUNoiseKnown = rc.noise(rc.GPUChosen, rc.GPUBest)
			}
			out = append(out, rc)
		}
	}
	return out
}

// noise is the regret the reference's spreads allow between chosen and
// best (RouteCompare.Noise); 0, false where they agree or a spread is
// unknown.
func (r *RouteCompare) noise(chosen, best string) (float64, bool) {
	c, b := r.NsPerPx[chosen][1], r.NsPerPx[best][1]
	sc, sb := r.Spread[chosen][1], r.Spread[best][1]
	if chosen == best || b <= 0 || sc <= 0 || sb <= 0 {
		return 0, false
	}
	return (c*sc + b*sb) / b, true
}

// predictSpread is the spread of the samples predictNsPerPx draws on at
// pixels: the nearest sample's at or beyond either end, the larger of the
// two around it between them (a prediction is no surer than the less
// sure of its two points). 0 when one of them has no spread.
func predictSpread(samples []capability.Sample, pixels int64) float64 {
	pts := slices.Clone(samples)
	slices.SortFunc(pts, func(a, b capability.Sample) int { return cmp.Compare(a.Pixels, b.Pixels) })
	if len(pts) == 0 {
		return 0
	}
	var use []capability.Sample
	switch i, found := slices.BinarySearchFunc(pts, pixels, func(s capability.Sample, px int64) int { return cmp.Compare(s.Pixels, px) }); {
	case found:
		use = pts[i : i+1]
	case i == 0:
		use = pts[:1]
	case i == len(pts):
		use = pts[len(pts)-1:]
	default:
		use = pts[i-1 : i+1]
	}
	var out float64
	for _, s := range use {
		if s.Spread <= 0 {
			return 0
		}
		out = max(out, s.Spread)
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
// fastest class and on the GPU runtime, the worst regrets, and of the
// disagreements how many are coin flips (WithinNoise), how many real
// (NoiseKnown and beyond it) and the worst of the real ones; the rest have
// no known noise (Unknown = disagreements − Within − Real).
type RouteSummary struct {
	Rows, Agree, GPURows, GPUAgree      int
	WorstRegret, WorstGPURegret         float64
	Worst, WorstGPU                     *RouteCompare
	Within, Real, GPUWithin, GPUReal    int
	WorstRealRegret, WorstGPURealRegret float64
	WorstReal, WorstGPUReal             *RouteCompare
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
		switch {
		case r.WithinNoise():
			s.Within++
		case r.Chosen != r.Best && r.NoiseKnown:
			s.Real++
			if s.WorstReal == nil || r.Regret > s.WorstRealRegret {
				s.WorstRealRegret, s.WorstReal = r.Regret, r
			}
		}
		if r.GPUChosen != "" {
			s.GPURows++
			if r.GPUChosen == r.GPUBest {
				s.GPUAgree++
			}
			if r.GPUChosen != r.GPUBest && (s.WorstGPU == nil || r.GPURegret > s.WorstGPURegret) {
				s.WorstGPURegret, s.WorstGPU = r.GPURegret, r
			}
			switch {
			case r.GPUWithinNoise():
				s.GPUWithin++
			case r.GPUChosen != r.GPUBest && r.GPUNoiseKnown:
				s.GPUReal++
				if s.WorstGPUReal == nil || r.GPURegret > s.WorstGPURealRegret {
					s.WorstGPURealRegret, s.WorstGPUReal = r.GPURegret, r
				}
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
