package zensim

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// bench is the standard benchmarks (cudatest.Bench): their names and
// sub-benchmarks are what the device scripts select.
var bench = cudatest.Bench{Metric: zenmetrics.Zensim, MsPerScore: true, Cached2Warm: 2}

// BenchmarkCached is one score against a prepared reference (the
// distorted RGB8 image uploaded each time), at 1, 4 and 16 MP.
func BenchmarkCached(b *testing.B) { bench.Cached(b) }

// BenchmarkCached2 is the same with two callers on one reference; ns/op
// is per score.
func BenchmarkCached2(b *testing.B) { bench.Cached2(b) }

// BenchmarkOneShot prepares, scores and releases (with the kernels loaded).
func BenchmarkOneShot(b *testing.B) { bench.OneShot(b) }

// TestKernelTimes logs the GPU time per kernel of the distorted half of a
// 16 MP score (the pixels already uploaded), to say where the time goes.
func TestKernelTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("16 MP")
	}
	rr, dist, w, h := cudatest.Prepared16(t, backend(t), zenmetrics.Zensim)
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
		if err := queueXYB(q, r.k, w, h, &r.g.bands[0], 0, h, layoutOf(dist), s.raw, r.tab, r.ref[0], s.dist[0], s.flag); err != nil {
			return err
		}
		if err := queuePyramid(q, r.k, r.g.img, s.dist); err != nil {
			return err
		}
		return queueStats(q, r.k, r.g, s, r.ref)
	})
}
