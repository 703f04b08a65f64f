package cvvdp

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/cvvdpsynth"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestSynthGoldens holds the GPU to the synthetic goldens of
// refvectors/cvvdp/pycvvdp_synth_goldens.json (pycvvdp 0.5.4 on CUDA,
// standard_4k; the pairs built by internal/cvvdpsynth, as cpu/cvvdp's
// test does), within tol, each in the first mode the device takes. Those
// of 1 MP and more are also scored in strip pairs of 256-row windows,
// which must give the same bits. The 12 MP fixture (30 s on lavapipe)
// only with ZENMETRICS_CVVDP_BIG=1.
func TestSynthGoldens(t *testing.T) {
	g, err := cvvdpsynth.Load(filepath.Join(shared.Dir(t, "refvectors", "cvvdp"), "pycvvdp_synth_goldens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != "0.5.4" || g.Display != "standard_4k" {
		t.Fatalf("goldens for pycvvdp %s, %s", g.Version, g.Display)
	}
	b := backend(t)
	ctx := context.Background()
	par := metrictest.Parity{Name: "cvvdp synth goldens vs pycvvdp"}
	for name, f := range g.Fixtures {
		h, w := f.Shape[0], f.Shape[1]
		if w*h > 4<<20 && (testing.Short() || os.Getenv("ZENMETRICS_CVVDP_BIG") != "1") {
			t.Logf("%s: %dx%d left out (ZENMETRICS_CVVDP_BIG=1 without -short scores it)", name, w, h)
			continue
		}
		ref, dist, ok := f.Build()
		if !ok {
			t.Errorf("%s: unknown construction %q", name, f.Construction)
			continue
		}
		// The first mode the device takes, as the ladder tries them (a
		// 12 MP image's three-channel planes exceed lavapipe's 128 MiB
		// storage-binding limit in full and in strips).
		mode := zenmetrics.ModeFull
		for _, m := range []zenmetrics.Mode{zenmetrics.ModeFull, zenmetrics.ModeStrip, zenmetrics.ModeStripPair} {
			if _, ok := b.Estimate(zenmetrics.CVVDP, w, h, m); ok {
				mode = m
				break
			}
		}
		got, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.CVVDP, ref, dist, zenmetrics.Options{Mode: mode})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := math.Abs(got.Value - f.JOD)
		par.Add(name, got.Value, f.JOD)
		t.Logf("%s (%dx%d, %v): %.7f, pycvvdp %.7f, |Δ| %.3g", name, w, h, mode, got.Value, f.JOD, d)
		if !(d <= tol) {
			t.Errorf("%s: |Δ| %.3g > %g", name, d, tol)
		}
		if w*h >= 1<<20 {
			pair, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.CVVDP, ref, dist, zenmetrics.Options{Mode: zenmetrics.ModeStripPair, StripHeight: 256})
			if err != nil {
				t.Fatalf("%s strip pairs: %v", name, err)
			}
			if math.Float64bits(pair.Value) != math.Float64bits(got.Value) {
				t.Errorf("%s: strip pairs %.9f, whole image %.9f", name, pair.Value, got.Value)
			}
		}
	}
	par.Log(t)
}
