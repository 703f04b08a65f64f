package dssim

import (
	"context"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimateBytes checks EstimateBytes against what Prepare and one Score
// really allocate (runtime TotalAlloc, which does not depend on when the
// collector runs): every plane is allocated once and kept, so the two
// must agree to within the small per-call bookkeeping (closures, slice
// headers, the reference struct), allowed here as 1 % + 64 KiB. The SSIM
// map, when asked for, is the caller's and adds exactly 4·w·h.
func TestEstimateBytes(t *testing.T) {
	const w, h = 1001, 703
	ref, dist := metrictest.SyntheticPair(w, h, 4)
	linearLUT8() // the lookup table is global, built once
	for _, withMap := range []bool{false, true} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		r, err := Prepare(ref, Config{SSIMMap: withMap})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Score(context.Background(), dist); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		r.Release()
		got := int64(m1.TotalAlloc - m0.TotalAlloc)
		want := EstimateBytes(w, h)
		if withMap {
			want += 4 * w * h
		}
		t.Logf("map=%v: allocated %d bytes, EstimateBytes %d (%.3f%%)", withMap, got, want, 100*float64(got-want)/float64(want))
		if got < want || got > want+want/100+64<<10 {
			t.Errorf("map=%v: allocated %d bytes, EstimateBytes predicts %d", withMap, got, want)
		}
	}
}
