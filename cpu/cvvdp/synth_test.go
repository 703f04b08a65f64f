package cvvdp

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/cvvdpsynth"
)

// TestSynthGoldens scores every fixture of pycvvdp_synth_goldens.json
// (internal/cvvdpsynth builds the pairs; the 12 MP one only without
// -short: it takes about 0.7 GB) within 1e-4 JOD, the aim; these
// goldens come from pycvvdp on CUDA, whose float32 sums are ordered
// differently again, which is still rounding (~1e-6).
func TestSynthGoldens(t *testing.T) {
	dir := sharedDir(t, "refvectors", "cvvdp")
	g, err := cvvdpsynth.Load(filepath.Join(dir, "pycvvdp_synth_goldens.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := LookupDisplay(g.Display)
	if err != nil || g.Version != "0.5.4" {
		t.Fatalf("goldens for %s %s: %v", g.Version, g.Display, err)
	}
	if math.Abs(d.PixelsPerDegree()-g.PPD) > 1e-12*g.PPD {
		t.Errorf("ppd %.17g, goldens %.17g", d.PixelsPerDegree(), g.PPD)
	}
	const tol = 1e-4
	var maxd float64
	for name, f := range g.Fixtures {
		h, w := f.Shape[0], f.Shape[1]
		if testing.Short() && w*h > 4<<20 {
			t.Logf("%s: %dx%d left out under -short", name, w, h)
			continue
		}
		ref, dist, ok := f.Build()
		if !ok {
			t.Errorf("%s: unknown construction %q", name, f.Construction)
			continue
		}
		got := predict(t, dist, ref, Config{})
		dd := math.Abs(got - f.JOD)
		maxd = max(maxd, dd)
		t.Logf("%s (%dx%d): got %.7f, pycvvdp %.7f, |Δ| %.3g", name, w, h, got, f.JOD, dd)
		if !(dd <= tol) {
			t.Errorf("%s: got %.7f, pycvvdp %.7f (|Δ| %.3g > %g)", name, got, f.JOD, dd, tol)
		}
	}
	t.Logf("synth goldens: max |Δ| %.3g", maxd)
}
