package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// -strips: full image vs strips for one metric at each size. Per mode:
// cached ms (median of -reps after -warmup) and one-shot ms, the device
// memory predicted by Estimate and measured over one one-shot run
// (Backend.MeasureMemory: peak of our buffer accounting; NVML's used-memory
// rise next to it where present), the number of strips, and the strip
// score's difference from the full score. The strip runs use the VRAM
// budget of -vram-budget-mib (0: the device's free memory), so strips can
// be forced on a large GPU; the full runs use none.

type stripModeResult struct {
	Mode         string  `json:"mode"`
	Strips       int     `json:"strips,omitempty"`
	Kept         bool    `json:"kept_reference,omitempty"`
	Value        float64 `json:"value"`
	Norm         float64 `json:"pnorm3,omitempty"`
	CachedMS     float64 `json:"cached_ms_median"`
	OneShotMS    float64 `json:"one_shot_ms_median"`
	PredictedMiB float64 `json:"predicted_mib"`
	MeasuredMiB  float64 `json:"measured_peak_mib"`
	NVMLDeltaMiB float64 `json:"nvml_used_delta_mib"` // -1: no NVML
	Err          string  `json:"error,omitempty"`
}

type stripSizeResult struct {
	Megapixels float64           `json:"megapixels"`
	Width      int               `json:"width"`
	Height     int               `json:"height"`
	Modes      []stripModeResult `json:"modes"`
}

type stripReport struct {
	Backend   webgpu.BackendInfo `json:"backend"`
	Metric    string             `json:"metric"`
	BudgetMiB int64              `json:"vram_budget_mib"`
	Reps      int                `json:"reps"`
	Sizes     []stripSizeResult  `json:"sizes"`
	Date      string             `json:"date"`
}

func runStrips(sizeList, metric string, budgetMiB int64, reps, warmup int, jsonPath string) error {
	var m zenmetrics.Metric
	switch strings.ToLower(metric) {
	case "butteraugli":
		m = zenmetrics.Butteraugli
	case "ssim2", "ssimulacra2":
		m = zenmetrics.SSIMULACRA2
	case "dssim":
		m = zenmetrics.DSSIM
	default:
		return fmt.Errorf("-strip-metric %q: butteraugli, ssim2 or dssim", metric)
	}
	ctx := context.Background()
	b, err := webgpu.NewBackend(ctx, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	rep := stripReport{Backend: b.Info(), Metric: m.String(), BudgetMiB: budgetMiB, Reps: reps,
		Date: time.Now().UTC().Format(time.RFC3339)}
	for _, f := range strings.Split(sizeList, ",") {
		mp, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || mp <= 0 {
			return fmt.Errorf("bad size %q", f)
		}
		side := int(math.Round(math.Sqrt(mp * 1024 * 1024)))
		ref, dist := metrictest.SyntheticPair(side, side, 42)
		sr := stripSizeResult{Megapixels: mp, Width: side, Height: side}
		for _, mode := range []zenmetrics.Mode{zenmetrics.ModeFull, zenmetrics.ModeStrip} {
			b.SetVRAMBudget(0)
			if mode == zenmetrics.ModeStrip {
				b.SetVRAMBudget(budgetMiB << 20)
			}
			r := timeMode(ctx, b, m, mode, ref, dist, reps, warmup)
			sr.Modes = append(sr.Modes, r)
			fmt.Fprintf(os.Stderr, "%g MP %s: %+v\n", mp, mode, r)
		}
		rep.Sizes = append(rep.Sizes, sr)
	}
	b.SetVRAMBudget(0)
	printStrips(rep)
	if jsonPath != "" {
		out, _ := json.MarshalIndent(rep, "", "  ")
		return os.WriteFile(jsonPath, append(out, '\n'), 0o644)
	}
	return nil
}

func timeMode(ctx context.Context, b *webgpu.Backend, m zenmetrics.Metric, mode zenmetrics.Mode, ref, dist *zenmetrics.Image, reps, warmup int) stripModeResult {
	res := stripModeResult{Mode: mode.String(), NVMLDeltaMiB: -1}
	fail := func(err error) stripModeResult {
		res.Err = err.Error()
		return res
	}
	est, ok := b.Estimate(m, ref.Width, ref.Height, mode)
	res.PredictedMiB = float64(est) / (1 << 20)
	if !ok {
		return fail(fmt.Errorf("Estimate refuses %s (%.0f MiB predicted)", mode, res.PredictedMiB))
	}
	opt := zenmetrics.Options{Mode: mode}
	// Memory first, on a trimmed pool: one one-shot run.
	peak, nv, err := b.MeasureMemory(ctx, func() error {
		_, err := zenmetrics.ScoreOnce(ctx, b, m, ref, dist, opt)
		return err
	})
	if err != nil {
		return fail(err)
	}
	res.MeasuredMiB = float64(peak) / (1 << 20)
	if nv >= 0 {
		res.NVMLDeltaMiB = float64(nv) / (1 << 20)
	}
	r, err := b.Prepare(ctx, m, ref, opt)
	if err != nil {
		return fail(err)
	}
	res.Strips, res.Kept, _ = webgpu.StripInfo(r)
	var cached []time.Duration
	for i := 0; i < warmup+reps; i++ {
		t0 := time.Now()
		s, err := r.Score(ctx, dist)
		if err != nil {
			r.Release()
			return fail(err)
		}
		if i >= warmup {
			cached = append(cached, time.Since(t0))
		}
		res.Value, res.Norm = s.Value, s.Extras["pnorm3"]
	}
	r.Release()
	var once []time.Duration
	for i := 0; i < warmup+reps; i++ {
		t0 := time.Now()
		if _, err := zenmetrics.ScoreOnce(ctx, b, m, ref, dist, opt); err != nil {
			return fail(err)
		}
		if i >= warmup {
			once = append(once, time.Since(t0))
		}
	}
	res.CachedMS, _ = median(cached)
	res.OneShotMS, _ = median(once)
	return res
}

func printStrips(rep stripReport) {
	bi := rep.Backend
	fmt.Printf("## %s full vs strips on %s (%s, %s), strip budget %d MiB (0: free memory), median of %d\n\n",
		rep.Metric, bi.Adapter, bi.Backend, bi.Type, rep.BudgetMiB, rep.Reps)
	fmt.Println("| size | mode | strips | ref state | value | Δ vs full | 3-norm Δ rel | cached ms | one-shot ms | predicted MiB | measured peak MiB | NVML Δ MiB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range rep.Sizes {
		var full *stripModeResult
		for i, r := range s.Modes {
			if r.Mode == zenmetrics.ModeFull.String() && r.Err == "" {
				full = &s.Modes[i]
			}
			if r.Err != "" {
				fmt.Printf("| %dx%d (%g MP) | %s | | | error: %s | | | | | %.0f | | |\n", s.Width, s.Height, s.Megapixels, r.Mode, r.Err, r.PredictedMiB)
				continue
			}
			d, dn := "", ""
			if full != nil && r.Mode != full.Mode {
				d = fmt.Sprintf("%.3g", r.Value-full.Value)
				if full.Norm != 0 {
					dn = fmt.Sprintf("%.2g", math.Abs(r.Norm-full.Norm)/full.Norm)
				}
			}
			state := ""
			if r.Strips > 0 {
				state = "recomputed"
				if r.Kept {
					state = "kept"
				}
			}
			nv := "n/a"
			if r.NVMLDeltaMiB >= 0 {
				nv = fmt.Sprintf("%.0f", r.NVMLDeltaMiB)
			}
			fmt.Printf("| %dx%d (%g MP) | %s | %d | %s | %.6f | %s | %s | %.1f | %.1f | %.0f | %.0f | %s |\n",
				s.Width, s.Height, s.Megapixels, r.Mode, r.Strips, state, r.Value, d, dn, r.CachedMS, r.OneShotMS,
				r.PredictedMiB, r.MeasuredMiB, nv)
		}
	}
}
