package dssim

import (
	"context"
	"sort"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// bench is the standard benchmarks (cudatest.Bench): their names and
// sub-benchmarks are what the device scripts select.
var bench = cudatest.Bench{Metric: zenmetrics.DSSIM, MsPerScore: true, Cached2Warm: 2}

// BenchmarkCached is one score against a prepared reference (the
// distorted RGB8 image uploaded each time), at 1, 4 and 16 MP.
func BenchmarkCached(b *testing.B) { bench.Cached(b) }

// BenchmarkCachedPinned is BenchmarkCached with the distorted image in
// page-locked memory (cuda.Backend.PinnedImage), uploaded in place.
func BenchmarkCachedPinned(b *testing.B) { bench.CachedPinned(b) }

// BenchmarkCached2 is the same with two callers on one reference; ns/op
// is per score.
func BenchmarkCached2(b *testing.B) { bench.Cached2(b) }

// BenchmarkOneShot prepares, scores and releases (with the kernels loaded).
func BenchmarkOneShot(b *testing.B) { bench.OneShot(b) }

// timed is a launcher that records an event after every launch, for the
// GPU time of each kernel.
type timed struct {
	q      launch.Stream
	dev    *cuda.Device
	events []*cuda.Event
	names  []string
}

func (t *timed) Launch(k *launch.Kernel, grid, block cuda.Dim3, args ...any) error {
	if err := t.q.Launch(k, grid, block, args...); err != nil {
		return err
	}
	e, err := t.dev.NewEvent()
	if err != nil {
		return err
	}
	t.events = append(t.events, e)
	t.names = append(t.names, k.Name)
	return e.Record(t.q.St)
}

// TestKernelTimes logs the GPU time per kernel of the distorted half of a
// 16 MP score (the pixels already uploaded), to say where the time goes.
func TestKernelTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("16 MP")
	}
	be := backend(t)
	w, h := cudatest.MP(16)
	ref, dist := metrictest.SyntheticPair(w, h, 5)
	rr, err := be.Prepare(context.Background(), zenmetrics.DSSIM, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	r := rr.(*reference)
	s, err := r.slots.Get(context.Background(), cuda.RawBytes(dist))
	if err != nil {
		t.Fatal(err)
	}
	defer r.slots.Put(s)
	if err := r.upload(s, dist); err != nil {
		t.Fatal(err)
	}
	st := s.wk.Stream
	q := &timed{q: launch.Stream{St: st}, dev: r.dev}
	start, err := r.dev.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Record(st); err != nil {
		t.Fatal(err)
	}
	lay := layoutOf(dist)
	if err := queueUnpack(q, r.k, w, 0, h, 0, lay, s.raw, r.lut, s); err != nil {
		t.Fatal(err)
	}
	if err := queueDistorted(q, r.k, r.dims, lay.alpha, s, &r.ref); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(); err != nil {
		t.Fatal(err)
	}
	per := map[string]float64{}
	prev, total := start, 0.0
	for i, e := range q.events {
		ms, err := cuda.Elapsed(prev, e)
		if err != nil {
			t.Fatal(err)
		}
		per[q.names[i]] += float64(ms)
		total += float64(ms)
		prev = e
	}
	var names []string
	for n := range per {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return per[names[i]] > per[names[j]] })
	for _, n := range names {
		t.Logf("%-9s %7.3f ms", n, per[n])
	}
	t.Logf("%dx%d: %d launches, %.3f ms of kernels (upload not included)", w, h, len(q.events), total)
	for _, e := range append(q.events, start) {
		e.Destroy()
	}
}
