package cvvdp

import (
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimateBytes checks EstimateBytes (and MapBytes) against what
// Prepare and one Score allocate (runtime.MemStats.TotalAlloc over both,
// on GOMAXPROCS threads as EstimateBytes assumes): the prediction must not
// be below the measurement (it guards the memory budget) and not more
// than 2 % plus the 512 KiB allowance for small allocations above it.
func TestEstimateBytes(t *testing.T) {
	for _, s := range [][2]int{{2, 2}, {37, 19}, {517, 389}, {1024, 768}} {
		for _, withMap := range []bool{false, true} {
			ref, dist := metrictest.SyntheticPair(s[0], s[1], 2)
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			r, err := Prepare(ref, Config{DistMap: withMap})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Score(dist); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			r.Release()
			got := int64(m1.TotalAlloc - m0.TotalAlloc)
			est := EstimateBytes(s[0], s[1])
			if withMap {
				est += MapBytes(s[0], s[1])
			}
			t.Logf("%d×%d map %v: allocated %d bytes, estimated %d (%+.2f %%)", s[0], s[1], withMap, got, est, 100*float64(est-got)/float64(got))
			if est < got || float64(est) > 1.02*float64(got)+smallAlloc {
				t.Errorf("%d×%d map %v: estimated %d, allocated %d", s[0], s[1], withMap, est, got)
			}
		}
	}
}
