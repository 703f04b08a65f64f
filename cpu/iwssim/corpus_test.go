package iwssim

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// corpusParity scores every row of dir/table's iwssim column (piq 0.8.0
// float64, x = dist, y = ref, printed with 10 decimals so ±5e-11) and
// demands 1e-6 absolute, the CPU tolerance; piq's own float64
// arithmetic in another order agrees to ~1e-12 (see TestRefvectors).
func corpusParity(t *testing.T, dir, table string) {
	tab, err := shared.ReadTSV(filepath.Join(dir, table))
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("no %s", table)
		}
		t.Fatal(err)
	}
	const tol = 1e-6
	var maxd float64
	worst := ""
	refs := map[string]*Reference{}
	defer func() {
		for _, r := range refs {
			r.Release()
		}
	}()
	for i := range tab.Rows {
		rp, dp := tab.Get(i, "ref"), tab.Get(i, "dist")
		want, err := tab.Float(i, "iwssim")
		if err != nil {
			t.Fatal(err)
		}
		r := refs[rp]
		if r == nil {
			for k, old := range refs { // keep one prepared reference
				old.Release()
				delete(refs, k)
			}
			if r, err = Prepare(decode(t, dir, rp), Config{}); err != nil {
				t.Fatalf("%s: %v", rp, err)
			}
			refs[rp] = r
		}
		got, err := r.Score(decode(t, dir, dp))
		if err != nil {
			t.Errorf("%s vs %s: %v", rp, dp, err)
			continue
		}
		d := math.Abs(got - want)
		if d > maxd || worst == "" {
			maxd, worst = d, dp
		}
		if !(d <= tol) {
			t.Errorf("%s vs %s: got %.10f, want %.10f (|Δ| %.3g > %g)", rp, dp, got, want, d, tol)
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
	corpusParity(t, shared.Dir(t, "corpus"), "scores_cvvdp_iwssim.tsv")
}
