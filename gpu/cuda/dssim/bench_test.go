package dssim

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

func mp(n int) (w, h int) {
	switch n {
	case 1:
		return 1024, 1024
	case 4:
		return 2048, 2048
	}
	return 4096, 4096
}

// BenchmarkCached is one score against a prepared reference (the
// distorted RGB8 image uploaded each time, the result read back), at 1, 4
// and 16 MP.
func BenchmarkCached(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			be := backend(b)
			w, h := mp(n)
			ref, dist := metrictest.SyntheticPair(w, h, 5)
			r, err := be.Prepare(context.Background(), zenmetrics.DSSIM, ref, zenmetrics.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Release()
			metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), dist); return err })
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/score")
			b.ReportMetric(float64(w*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GP/s")
		})
	}
}

// BenchmarkCached2 is the same with two callers on one reference (each
// has its own stream: one's upload overlaps the other's kernels); ns/op is
// per score.
func BenchmarkCached2(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			be := backend(b)
			w, h := mp(n)
			ref, dist := metrictest.SyntheticPair(w, h, 5)
			r, err := be.Prepare(context.Background(), zenmetrics.DSSIM, ref, zenmetrics.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Release()
			for i := 0; i < 2; i++ {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / 2
			for g := 0; g < 2; g++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					for i := 0; i < k; i++ {
						if _, err := r.Score(context.Background(), dist); err != nil {
							b.Error(err)
							return
						}
					}
				}(per + g*(b.N%2))
			}
			wg.Wait()
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/score")
		})
	}
}

// BenchmarkOneShot prepares, scores and releases (with the kernels loaded).
func BenchmarkOneShot(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			be := backend(b)
			w, h := mp(n)
			ref, dist := metrictest.SyntheticPair(w, h, 5)
			scoreGPU(b, be, ref, dist, zenmetrics.Options{})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := zenmetrics.ScoreOnce(context.Background(), be, zenmetrics.DSSIM, ref, dist, zenmetrics.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/score")
		})
	}
}

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
	w, h := mp(16)
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
	if err := queueUnpack(q, r.k, w, 0, h, lay, s.raw, r.lut, s); err != nil {
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
