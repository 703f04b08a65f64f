package all_test

import (
	"context"
	"errors"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	shareddata "github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestBackendDispatch goes through the zenmetrics.Backend contract (what
// the orchestrator and zmscore use) for every metric the GPU implements,
// and checks it against the CPU backend through the same contract.
func TestBackendDispatch(t *testing.T) {
	b := webgpu.NewBackendOn(gputest.Device(t))
	c := cpu.New(cpu.Config{})
	ref, err := imageio.DecodeFile(shareddata.Testdata(t, "tiny", "coffee_crop256__ref.png"))
	if err != nil {
		t.Fatal(err)
	}
	dist, err := imageio.DecodeFile(shareddata.Testdata(t, "tiny", "coffee_crop256__jpeg_q20.png"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Tolerances: both backends reproduce the reference tools; the
	// measured GPU-CPU gap is ~1e-6 (ssim2) and ~1e-6 relative
	// (butteraugli), far inside the parity targets of 0.02 absolute and
	// 1e-3 relative.
	for _, tc := range []struct {
		m   zenmetrics.Metric
		tol func(cpu float64) float64
	}{
		{zenmetrics.SSIMULACRA2, func(float64) float64 { return 1e-3 }},
		{zenmetrics.Butteraugli, func(v float64) float64 { return 1e-4 * math.Abs(v) }},
		// CVVDP: the aim of 1e-4 JOD (gpu/webgpu/cvvdp's tol
		// says why; measured 0 to 2e-6).
		{zenmetrics.CVVDP, func(float64) float64 { return 1e-4 }},
	} {
		bytes, ok := b.Estimate(tc.m, ref.Width, ref.Height, zenmetrics.ModeFull)
		if !ok || bytes <= 0 {
			t.Errorf("%v: Estimate full = %d, %v", tc.m, bytes, ok)
		}
		_, stripOK := b.Estimate(tc.m, ref.Width, ref.Height, zenmetrics.ModeStrip)
		r, err := b.Prepare(ctx, tc.m, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip})
		if !stripOK && !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("%v: Estimate refuses strips but Prepare strip: err = %v, want ErrUnsupported", tc.m, err)
		}
		if err == nil {
			r.Release() // the device is shared: later tests plan on its free memory
		}
		// Only CVVDP has strip pairs (the ladder's extra rung).
		_, pairOK := b.Estimate(tc.m, ref.Width, ref.Height, zenmetrics.ModeStripPair)
		if pairOK != (tc.m == zenmetrics.CVVDP) {
			t.Errorf("%v: Estimate strip pairs = %v", tc.m, pairOK)
		}
		want, err := zenmetrics.ScoreOnce(ctx, c, tc.m, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatalf("%v on CPU: %v", tc.m, err)
		}
		modes := []zenmetrics.Options{{}}
		if stripOK {
			// 256 rows in 64-row bands: four strips.
			modes = append(modes, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: 64})
		}
		if pairOK {
			modes = append(modes, zenmetrics.Options{Mode: zenmetrics.ModeStripPair, StripHeight: 64})
		}
		for _, opt := range modes {
			g, err := zenmetrics.ScoreOnce(ctx, b, tc.m, ref, dist, opt)
			if err != nil {
				t.Fatalf("%v %v on GPU: %v", tc.m, opt.Mode, err)
			}
			if d := math.Abs(g.Value - want.Value); d > tc.tol(want.Value) {
				t.Errorf("%v %v: GPU %.8f vs CPU %.8f (|Δ| %.3g)", tc.m, opt.Mode, g.Value, want.Value, d)
			}
			for k, v := range want.Extras {
				if d := math.Abs(g.Extras[k] - v); d > tc.tol(v) {
					t.Errorf("%v %v extras[%s]: GPU %.8f vs CPU %.8f", tc.m, opt.Mode, k, g.Extras[k], v)
				}
			}
		}
	}
	for _, m := range []zenmetrics.Metric{zenmetrics.Butteraugli, zenmetrics.SSIMULACRA2} {
		if _, ok := b.Estimate(m, ref.Width, ref.Height, zenmetrics.ModeStrip); !ok {
			t.Errorf("%v: Estimate refuses strips", m)
		}
	}
	// Metrics no package has registered (and a metric that does not
	// exist) are refused.
	registered := map[zenmetrics.Metric]bool{}
	for _, m := range webgpu.Metrics() {
		registered[m] = true
	}
	for _, m := range append(zenmetrics.AllMetrics(), zenmetrics.Metric(200)) {
		if registered[m] {
			continue
		}
		if _, err := b.Prepare(ctx, m, ref, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("%v: err = %v, want ErrUnsupported", m, err)
		}
		if _, ok := b.Estimate(m, ref.Width, ref.Height, zenmetrics.ModeFull); ok {
			t.Errorf("%v: Estimate claims an unregistered metric", m)
		}
	}
}
