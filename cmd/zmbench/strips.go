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
// be forced on a large GPU; the full runs use none. -strip-runtime cuda
// runs the same comparison on CUDA device 0 (cudastrips.go), the budget
// then capping the free memory the backend plans in.

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
	Runtime   string            `json:"runtime"`
	Backend   any               `json:"backend"` // webgpu.BackendInfo, or cuda.DeviceInfo
	Desc      string            `json:"-"`
	Metric    string            `json:"metric"`
	BudgetMiB int64             `json:"vram_budget_mib"`
	Reps      int               `json:"reps"`
	Sizes     []stripSizeResult `json:"sizes"`
	Date      string            `json:"date"`
}

// stripTarget is what the strip comparison needs of a runtime: its
// backend, a strip budget to set (0: none), a memory measurement around
// one run and the strip count of a reference.
type stripTarget struct {
	b         zenmetrics.Backend
	runtime   string
	info      any
	desc      string
	setBudget func(bytes int64)
	measure   func(ctx context.Context, fn func() error) (peak, deviceDelta int64, err error)
	stripInfo func(zenmetrics.Reference) (n int, kept, ok bool)
}

// webgpuTarget opens the WebGPU backend.
func webgpuTarget(ctx context.Context) (*stripTarget, error) {
	b, err := webgpu.NewBackend(ctx, nil)
	if err != nil {
		return nil, err
	}
	bi := b.Info()
	return &stripTarget{b: b, runtime: "webgpu", info: bi, desc: fmt.Sprintf("%s (%s, %s)", bi.Adapter, bi.Backend, bi.Type),
		setBudget: b.SetVRAMBudget, measure: b.MeasureMemory, stripInfo: webgpu.StripInfo}, nil
}

func runStrips(sizeList, metric, runtime string, budgetMiB int64, reps, warmup int, jsonPath string) error {
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
	var tg *stripTarget
	var err error
	switch runtime {
	case "webgpu":
		tg, err = webgpuTarget(ctx)
	case "cuda":
		tg, err = cudaTarget()
	default:
		return fmt.Errorf("-strip-runtime %q: webgpu or cuda", runtime)
	}
	if err != nil {
		return err
	}
	defer tg.b.Close()
	rep := stripReport{Runtime: tg.runtime, Backend: tg.info, Desc: tg.desc, Metric: m.String(), BudgetMiB: budgetMiB, Reps: reps,
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
			tg.setBudget(0)
			if mode == zenmetrics.ModeStrip {
				tg.setBudget(budgetMiB << 20)
			}
			r := timeMode(ctx, tg, m, mode, ref, dist, reps, warmup)
			sr.Modes = append(sr.Modes, r)
			fmt.Fprintf(os.Stderr, "%g MP %s: %+v\n", mp, mode, r)
		}
		rep.Sizes = append(rep.Sizes, sr)
	}
	tg.setBudget(0)
	printStrips(rep)
	if jsonPath != "" {
		out, _ := json.MarshalIndent(rep, "", "  ")
		return os.WriteFile(jsonPath, append(out, '\n'), 0o644)
	}
	return nil
}

func timeMode(ctx context.Context, tg *stripTarget, m zenmetrics.Metric, mode zenmetrics.Mode, ref, dist *zenmetrics.Image, reps, warmup int) stripModeResult {
	res := stripModeResult{Mode: mode.String(), NVMLDeltaMiB: -1}
	fail := func(err error) stripModeResult {
		res.Err = err.Error()
		return res
	}
	b := tg.b
	est, ok := b.Estimate(m, ref.Width, ref.Height, mode)
	res.PredictedMiB = float64(est) / (1 << 20)
	if !ok {
		return fail(fmt.Errorf("Estimate refuses %s (%.0f MiB predicted)", mode, res.PredictedMiB))
	}
	opt := zenmetrics.Options{Mode: mode}
	// Memory first, on a trimmed pool: one one-shot run.
	peak, nv, err := tg.measure(ctx, func() error {
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
	res.Strips, res.Kept, _ = tg.stripInfo(r)
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
	fmt.Printf("## %s full vs strips on %s %s, strip budget %d MiB (0: free memory), median of %d\n\n",
		rep.Metric, rep.Runtime, rep.Desc, rep.BudgetMiB, rep.Reps)
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
