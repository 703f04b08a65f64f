package ssim2

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// heapObjects is the live-plus-unswept heap object bytes.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestPeakHeap4MP measures the peak heap of preparing and scoring a 4 MP
// (2048×2048) pair and checks it against EstimateBytes.
func TestPeakHeap4MP(t *testing.T) {
	if testing.Short() {
		t.Skip("4 MP heap measurement skipped in -short mode")
	}
	const w, h = 2048, 2048
	ref, dist := metrictest.SyntheticPair(w, h, 1)
	runtime.GC()
	base := heapObjects()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := heapObjects(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	r, err := Prepare(ref, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Score(dist); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	if v := heapObjects(); v > peak.Load() {
		peak.Store(v)
	}
	runtime.KeepAlive(r)
	used := int64(peak.Load() - base)
	est := EstimateBytes(w, h)
	t.Logf("4 MP pair: peak heap above baseline %.1f MiB (EstimateBytes %.1f MiB, inputs %.1f MiB not counted)",
		float64(used)/(1<<20), float64(est)/(1<<20), float64(2*w*h*3)/(1<<20))
	if used > est+est/4 {
		t.Errorf("peak heap %d bytes exceeds EstimateBytes %d by more than 25%%", used, est)
	}
	if used < est/2 {
		t.Errorf("peak heap %d bytes is under half of EstimateBytes %d: the estimate is off", used, est)
	}
}
