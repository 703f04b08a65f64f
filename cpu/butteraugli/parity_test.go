package butteraugli

import (
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// tolerance of the parity checks: relative 1e-3, the upstream
// butteraugli test tolerance.
const parityTol = 1e-3

// scoreTable scores every pair of a scores.tsv (paths relative to dir),
// preparing each reference once, and checks butteraugli_max and
// butteraugli_3norm.
func scoreTable(t *testing.T, dir, tsv string) {
	tab, err := shared.ReadTSV(filepath.Join(dir, tsv))
	if err != nil {
		t.Fatal(err)
	}
	var wMax, wNorm worst
	var ref *Reference
	refPath := ""
	defer func() {
		if ref != nil {
			ref.Release()
		}
	}()
	for i := range tab.Rows {
		rp, dp := tab.Get(i, "ref"), tab.Get(i, "dist")
		wantMax, err1 := tab.Float(i, "butteraugli_max")
		wantNorm, err2 := tab.Float(i, "butteraugli_3norm")
		if err1 != nil || err2 != nil {
			t.Fatalf("row %d: bad expected values: %v %v", i, err1, err2)
		}
		if rp != refPath {
			if ref != nil {
				ref.Release()
			}
			ref, err = Prepare(loadPNG(t, filepath.Join(dir, rp)), Config{})
			if err != nil {
				t.Fatalf("%s: %v", rp, err)
			}
			refPath = rp
		}
		res, err := ref.Score(loadPNG(t, filepath.Join(dir, dp)))
		if err != nil {
			t.Fatalf("%s: %v", dp, err)
		}
		e1 := wMax.add(dp, wantMax, res.Max)
		e2 := wNorm.add(dp, wantNorm, res.PNorm3)
		if e1 > parityTol || e2 > parityTol {
			t.Errorf("%s vs %s: max %.10f want %.10f (rel %.2g); 3-norm %.6f want %.6f (rel %.2g)",
				dp, rp, res.Max, wantMax, e1, res.PNorm3, wantNorm, e2)
		}
	}
	t.Logf("max:    %v", &wMax)
	t.Logf("3-norm: %v", &wNorm)
}

// TestParityTiny checks the 9 pairs of the repository's testdata/tiny
// against libjxl v0.12.0 butteraugli_main.
func TestParityTiny(t *testing.T) {
	scoreTable(t, shared.Testdata(t, "tiny"), "scores.tsv")
}

// TestParityCorpus checks the 77 real pairs of the shared corpus (skipped
// when the shared material is absent).
func TestParityCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus parity takes a while; skipped with -short")
	}
	scoreTable(t, shared.Dir(t, "corpus"), "scores.tsv")
}
