package cudatest

import (
	"context"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// StripsConcurrent scores dist against a strip reference of ref from
// four goroutines at once (each takes its own slot: stream, staging,
// scratch and, recomputed, its own reference planes) and checks that
// every score equals want (a whole-image score of the same pair; the
// strip tests say why strips give it exactly).
func StripsConcurrent(t *testing.T, b zenmetrics.Backend, m zenmetrics.Metric, ref, dist *zenmetrics.Image, band int, want float64) {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, m, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: band})
	if err != nil {
		t.Fatalf("strip prepare: %v", err)
	}
	defer r.Release()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	got := make([]float64, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3 && errs[g] == nil; i++ {
				var s zenmetrics.Score
				s, errs[g] = r.Score(ctx, dist)
				got[g] = s.Value
			}
		}()
	}
	wg.Wait()
	for g := range got {
		if errs[g] != nil || got[g] != want {
			t.Errorf("concurrent strip score %d: %.17g (%v), want %.17g", g, got[g], errs[g], want)
		}
	}
}
