package cudatest

import (
	"context"
	"sort"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

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

// KernelTimes runs queue on stream st of dev through a launcher that
// records an event after every launch, waits for the stream, and logs the
// GPU time per kernel name (longest first, names padded to nameWidth) and
// in all for a w×h image: the body every metric's TestKernelTimes shares,
// which each package calls with its own kernels queued on a slot it has
// filled (the upload is not timed).
func KernelTimes(t *testing.T, dev *cuda.Device, st *cuda.Stream, nameWidth, w, h int, queue func(q launch.Launcher) error) {
	t.Helper()
	q := &timed{q: launch.Stream{St: st}, dev: dev}
	start, err := dev.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Record(st); err != nil {
		t.Fatal(err)
	}
	if err := queue(q); err != nil {
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
		t.Logf("%-*s %7.3f ms", nameWidth, n, per[n])
	}
	t.Logf("%dx%d: %d launches, %.3f ms of kernels (upload not included)", w, h, len(q.events), total)
	for _, e := range append(q.events, start) {
		e.Destroy()
	}
}

// Prepared16 is a reference of metric m prepared on b from the 16 MP
// synthetic pair the benchmarks use (seed 5), released when the test
// ends, with the pair's distorted image and size: the start of the
// TestKernelTimes that time a score's kernels.
func Prepared16(t *testing.T, b *cuda.Backend, m zenmetrics.Metric) (r zenmetrics.Reference, dist *zenmetrics.Image, w, h int) {
	t.Helper()
	w, h = MP(16)
	ref, dist := metrictest.SyntheticPair(w, h, 5)
	r, err := b.Prepare(context.Background(), m, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	return r, dist, w, h
}
