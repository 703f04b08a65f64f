package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// maxProfileBytes bounds a profile file read for --compare-routing: a real
// one is a few KiB.
const maxProfileBytes = 16 << 20

// compareRouting prints, for every metric and size, the class p makes the
// chooser prefer next to the one the profile in path prefers, and a
// summary line: how many agree, and the worst regret where they differ.
// Each disagreement is judged against the reference's own noise (its
// cells' timed runs, ns_per_px_spread_at): "coin flip" where the two
// classes' runs overlap, so that no bench could have told which is
// faster, "real" where they do not, "?" where a profile kept no spreads.
func compareRouting(w io.Writer, p *capability.Profile, path string) error {
	f, st, err := safeio.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	data, err := safeio.ReadAll(f, st.Size(), maxProfileBytes)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ref, err := capability.Unmarshal(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if ref.MachineHash != p.MachineHash {
		fmt.Fprintf(w, "note: %s was measured on other hardware (machine hash %s, this machine %s)\n", path, ref.MachineHash, p.MachineHash)
	}
	rows := orchestrator.CompareRouting(p, ref, zenmetrics.AllMetrics(), orchestrator.RoutingPixels())
	fmt.Fprintf(w, "\nrouting: this profile vs %s (fastest class for one task; ns/px this / that)\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tside\tpick\tthat pick\tregret\tnoise\tGPU pick\tthat GPU pick\tns/px ±spread")
	for _, r := range rows {
		var ns []string
		for c, v := range r.NsPerPx {
			sp := r.Spread[c]
			ns = append(ns, fmt.Sprintf("%s %.3g%s/%.3g%s", c, v[0], plusMinus(sp[0]), v[1], plusMinus(sp[1])))
		}
		slices.Sort(ns)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, isqrt(r.Pixels), r.Chosen, r.Best,
			pct(r.Regret), verdict(r), dash(r.GPUChosen), dash(r.GPUBest), strings.Join(ns, ", "))
	}
	tw.Flush()
	s := orchestrator.SummarizeRouting(rows)
	fmt.Fprintf(w, "routing agrees on %d of %d cells (GPU runtime: %d of %d)", s.Agree, s.Rows, s.GPUAgree, s.GPURows)
	if s.Worst != nil {
		fmt.Fprintf(w, "; worst regret %s (%s %d², %s instead of %s)", pct(s.WorstRegret), s.Worst.Metric, isqrt(s.Worst.Pixels), s.Worst.Chosen, s.Worst.Best)
	}
	if s.WorstGPU != nil {
		fmt.Fprintf(w, "; worst GPU regret %s (%s %d²)", pct(s.WorstGPURegret), s.WorstGPU.Metric, isqrt(s.WorstGPU.Pixels))
	}
	fmt.Fprintln(w)
	if d := s.Rows - s.Agree; d > 0 {
		fmt.Fprintf(w, "of the %d disagreements, %d are coin flips (within the reference's noise), %d real, %d of unknown noise",
			d, s.Within, s.Real, d-s.Within-s.Real)
		if s.WorstReal != nil {
			fmt.Fprintf(w, "; worst real regret %s (%s %d², %s instead of %s)", pct(s.WorstRealRegret), s.WorstReal.Metric,
				isqrt(s.WorstReal.Pixels), s.WorstReal.Chosen, s.WorstReal.Best)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// verdict is the noise column: "-" where the picks agree, else the
// noise the reference allows and whether the regret is within it.
func verdict(r orchestrator.RouteCompare) string {
	switch {
	case r.Chosen == r.Best:
		return "-"
	case !r.NoiseKnown:
		return "?"
	case r.WithinNoise():
		return pct(r.Noise) + " coin flip"
	}
	return pct(r.Noise) + " real"
}

// plusMinus is a spread as "±4.2%" or "±31%", "" when unknown.
func plusMinus(s float64) string {
	switch {
	case s <= 0:
		return ""
	case s < 0.1:
		return fmt.Sprintf("±%.1f%%", 100*s)
	}
	return fmt.Sprintf("±%.0f%%", 100*s)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
