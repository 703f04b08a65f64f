package iwssim

import (
	"context"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// bench is the standard benchmarks (cudatest.Bench): their names and
// sub-benchmarks are what the device scripts select.
var bench = cudatest.Bench{Metric: zenmetrics.IWSSIM, MsPerScore: true, Cached2Warm: 2}

// BenchmarkCached is one score against a prepared reference (the
// distorted RGB8 image uploaded each time), at 1, 4 and 16 MP.
func BenchmarkCached(b *testing.B) { bench.Cached(b) }

// BenchmarkCached2 is the same with two callers on one reference; ns/op
// is per score.
func BenchmarkCached2(b *testing.B) { bench.Cached2(b) }

// BenchmarkOneShot prepares, scores and releases (with the kernels
// loaded): both halves on the device, with two round trips for the
// host's eigenvalue step while preparing.
func BenchmarkOneShot(b *testing.B) { bench.OneShot(b) }

// TestKernelTimes logs the wall time of a 16 MP Prepare and the GPU time
// per kernel of a 16 MP score (the pixels already uploaded), to say where
// the time goes.
func TestKernelTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("16 MP")
	}
	be := backend(t)
	w, h := cudatest.MP(16)
	ref, dist := metrictest.SyntheticPair(w, h, 5)
	if _, err := zenmetrics.ScoreOnce(context.Background(), be, zenmetrics.IWSSIM, ref, dist, zenmetrics.Options{}); err != nil {
		t.Fatal(err) // loads the kernels
	}
	t0 := time.Now()
	rr, err := be.Prepare(context.Background(), zenmetrics.IWSSIM, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	t.Logf("Prepare (upload, both device phases, the host's eigenvalue step): %v", time.Since(t0))
	r := rr.(*reference)
	s, err := r.Slots.Get(context.Background(), cuda.RawBytes(dist))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Slots.Put(s)
	if err := s.wk.Upload(s.raw, dist.Pix[:cuda.RawBytes(dist)]); err != nil {
		t.Fatal(err)
	}
	cudatest.KernelTimes(t, r.Dev, s.wk.Stream, 7, w, h, func(q launch.Launcher) error {
		if err := queueUnpack(q, r.k, w, 0, h, layoutOf(dist), s.raw, s.x[0]); err != nil {
			return err
		}
		return queueScore(q, r.k, wholeWin(r.gm), s, &r.ref)
	})
}
