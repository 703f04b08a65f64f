package zensim

import (
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestCorpus scores every pair of the shared corpus (../shared/corpus,
// scores.tsv: photos under JPEG, AVIF, WebP, JPEG XL, blur and noise) on
// the GPU and the CPU, within tol (the 1e-3; see tol for why the
// two agree far more closely), features compared too. Under -short only
// every eighth pair. Skipped without the shared data (a failure with
// CI=true, shared.Dir).
func TestCorpus(t *testing.T) {
	dir := shared.Dir(t, "corpus")
	tab, err := shared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) == 0 {
		t.Fatal("corpus scores.tsv has no rows")
	}
	b := backend(t)
	cache := map[string]*zenmetrics.Image{}
	load := func(rel string) *zenmetrics.Image {
		if im := cache[rel]; im != nil {
			return im
		}
		im, err := imageio.DecodeFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		cache[rel] = im
		return im
	}
	var worst float64
	var worstName string
	n := 0
	for i := range tab.Rows {
		if testing.Short() && i%8 != 0 {
			continue
		}
		ref, dist := load(tab.Get(i, "ref")), load(tab.Get(i, "dist"))
		name := filepath.Base(tab.Get(i, "dist"))
		if d := compare(t, b, name, ref, dist, zenmetrics.Options{}); d > worst {
			worst, worstName = d, name
		}
		n++
	}
	t.Logf("%d corpus pairs: max |Δ| %.3g (%s), tolerance %g", n, worst, worstName, tol)
}
