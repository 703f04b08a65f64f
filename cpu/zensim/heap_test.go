package zensim

import (
	"context"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimateBytes checks EstimateBytes against what Prepare and one Score
// really allocate (runtime TotalAlloc, independent of when the collector
// runs): every plane is allocated once, so the two must agree to within
// the per-call bookkeeping (closures, slice headers, the feature vector,
// the structs), allowed here as 1 % + 64 KiB.
func TestEstimateBytes(t *testing.T) {
	const w, h = 1001, 703
	ref, dist := metrictest.SyntheticPair(w, h, 4)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	r, err := Prepare(ref, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Score(context.Background(), dist); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	r.Release()
	got := int64(m1.TotalAlloc - m0.TotalAlloc)
	want := EstimateBytes(w, h)
	t.Logf("allocated %d bytes, EstimateBytes %d (%.3f%%)", got, want, 100*float64(got-want)/float64(want))
	if got < want || got > want+want/100+64<<10 {
		t.Errorf("allocated %d bytes, EstimateBytes predicts %d", got, want)
	}
}
