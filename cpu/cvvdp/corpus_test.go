package cvvdp

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// corpusParity scores every row of dir/table's cvvdp_jod column (pycvvdp
// 0.5.4, standard_4k, predict(test=dist, reference=ref), printed with 7
// decimals so ±5e-8) and demands 1e-4 absolute: the aim (its
// requirement is 0.01), with the same reasoning as TestRefvectors.
func corpusParity(t *testing.T, dir, table string) {
	tab, err := shared.ReadTSV(filepath.Join(dir, table))
	if err != nil {
		if os.IsNotExist(err) && os.Getenv("CI") != "true" {
			t.Skipf("no %s", table)
		}
		t.Fatal(err)
	}
	const tol = 1e-4
	var maxd float64
	worst := ""
	var cur *Reference
	curPath := ""
	defer func() { cur.Release() }()
	for i := range tab.Rows {
		rp, dp := tab.Get(i, "ref"), tab.Get(i, "dist")
		want, err := tab.Float(i, "cvvdp_jod")
		if err != nil {
			t.Fatal(err)
		}
		if rp != curPath {
			cur.Release()
			if cur, err = Prepare(decode(t, dir, rp), Config{}); err != nil {
				t.Fatalf("%s: %v", rp, err)
			}
			curPath = rp
		}
		got, err := cur.Score(decode(t, dir, dp))
		if err != nil {
			t.Errorf("%s vs %s: %v", rp, dp, err)
			continue
		}
		d := math.Abs(got - want)
		if d > maxd || worst == "" {
			maxd, worst = d, dp
		}
		if !(d <= tol) {
			t.Errorf("%s vs %s: got %.7f, want %.7f (|Δ| %.3g > %g)", rp, dp, got, want, d, tol)
		}
	}
	t.Logf("%s: %d pairs, max |Δ| %.3g (%s)", table, len(tab.Rows), maxd, worst)
}

func TestCorpusTiny(t *testing.T) {
	corpusParity(t, shared.Testdata(t, "tiny"), "scores_cvvdp_iwssim.tsv")
}

func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("large corpus left out under -short")
	}
	corpusParity(t, sharedDir(t, "corpus"), "scores_cvvdp_iwssim.tsv")
}
