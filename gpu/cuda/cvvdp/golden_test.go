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

// TestSynthGoldens holds the CUDA port to the synthetic goldens of
// refvectors/cvvdp/pycvvdp_synth_goldens.json (pycvvdp 0.5.4 on CUDA,
// standard_4k; the pairs built by internal/cvvdpsynth, as cpu/cvvdp's and
// gpu/webgpu/cvvdp's tests do), within tolGolden. The 12 MP fixture only
// with ZENMETRICS_CVVDP_BIG=1, as there.
func TestSynthGoldens(t *testing.T) {
	b := backend(t)
	g, err := cvvdpsynth.Load(filepath.Join(shared.Dir(t, "refvectors", "cvvdp"), "pycvvdp_synth_goldens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != "0.5.4" || g.Display != "standard_4k" {
		t.Fatalf("goldens for pycvvdp %s, %s", g.Version, g.Display)
	}
	par := metrictest.Parity{Name: "cvvdp synth goldens vs pycvvdp (cuda)"}
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
		got, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.CVVDP, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := math.Abs(got.Value - f.JOD)
		par.Add(name, got.Value, f.JOD)
		t.Logf("%s (%dx%d): %.7f, pycvvdp %.7f, |Δ| %.3g", name, w, h, got.Value, f.JOD, d)
		if !(d <= tolGolden) {
			t.Errorf("%s: |Δ| %.3g > %g", name, d, tolGolden)
		}
	}
	par.Log(t)
}
