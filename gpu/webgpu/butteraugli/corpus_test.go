package butteraugli

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	zmshared "github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestButteraugliParityCorpus scores every pair of the shared corpus on
// the GPU against libjxl v0.12.0's butteraugli_main (max distance and
// 3-norm) with the bound, 1e-3 relative. The CPU reference is
// within 1.4e-5 of libjxl on this corpus and the GPU within ~3e-6 of the
// CPU, so 1e-3 leaves room only for real mistakes. Each reference is
// prepared once and scores its distortions (the cached-reference form).
func TestButteraugliParityCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus parity skipped with -short")
	}
	dir := zmshared.Dir(t, "corpus")
	tab, err := zmshared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	b := webgpu.NewBackendOn(gputest.Device(t))
	ctx := context.Background()
	var (
		refPath  string
		prepared zenmetrics.Reference
		worst    [2]float64
		worstAt  [2]string
	)
	defer func() {
		if prepared != nil {
			prepared.Release()
		}
	}()
	for i := range tab.Rows {
		if p := tab.Get(i, "ref"); p != refPath {
			if prepared != nil {
				prepared.Release()
			}
			ref, err := imageio.DecodeFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if prepared, err = b.Prepare(ctx, zenmetrics.Butteraugli, ref, zenmetrics.Options{}); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			refPath = p
		}
		dist, err := imageio.DecodeFile(filepath.Join(dir, tab.Get(i, "dist")))
		if err != nil {
			t.Fatal(err)
		}
		s, err := prepared.Score(ctx, dist)
		if err != nil {
			t.Fatalf("%s: %v", tab.Get(i, "dist"), err)
		}
		wantMax, _ := tab.Float(i, "butteraugli_max")
		wantNorm, _ := tab.Float(i, "butteraugli_3norm")
		e := [2]float64{rel(s.Value, wantMax), rel(s.Extras["pnorm3"], wantNorm)}
		for k := range e {
			if e[k] > worst[k] {
				worst[k], worstAt[k] = e[k], tab.Get(i, "dist")
			}
		}
		if e[0] > 1e-3 || e[1] > 1e-3 {
			t.Errorf("%s: max %.8f want %.8f (rel %.2g); 3-norm %.6f want %.6f (rel %.2g)",
				tab.Get(i, "dist"), s.Value, wantMax, e[0], s.Extras["pnorm3"], wantNorm, e[1])
		}
	}
	if math.IsNaN(worst[0] + worst[1]) {
		t.Fatal("NaN score")
	}
	t.Logf("butteraugli parity: %d pairs, max rel vs libjxl: max %.2g (%s), 3-norm %.2g (%s)",
		len(tab.Rows), worst[0], worstAt[0], worst[1], worstAt[1])
}
