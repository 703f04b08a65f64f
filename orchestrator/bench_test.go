package orchestrator

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/cpu"
)

// cpuOnly builds an orchestrator over the real CPU backend (no probe, no
// GPU), with its profile in a temporary directory.
func cpuOnly(tb testing.TB, workers int) *Orchestrator {
	tb.Helper()
	cfg := Config{CacheDir: tb.TempDir(), MaxParallelCPU: workers, DisableGPU: true}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	o, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { o.Close() })
	return o
}

func fakeOnly(tb testing.TB) (*Orchestrator, *fakeBackend) {
	tb.Helper()
	f := newFake("cpu", cpuScore)
	cfg := Config{CacheDir: tb.TempDir(), MaxParallelCPU: 1}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		return []backendSlot{{name: "cpu", gpuIndex: -1, backend: f}}, nil
	}
	o, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { o.Close() })
	return o, f
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkOverheadFake is the orchestrator's own cost per task: an
// instant backend, tiny images, a new reference each time (hash, chooser,
// queue, worker hand-off, cache insert, result).
func BenchmarkOverheadFake(b *testing.B) {
	o, _ := fakeOnly(b)
	ctx := context.Background()
	refs := make([]*zenmetrics.Image, 64)
	for i := range refs {
		refs[i] = img(16, 16, byte(i))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		r := o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, Ref: refs[i%len(refs)], Dist: refs[(i+1)%len(refs)]})
		lat = append(lat, time.Since(t0))
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	b.ReportMetric(float64(p50(lat).Nanoseconds()), "p50-ns/task")
}

// BenchmarkOverheadFakeBatch is the per-task cost in a RunAll batch.
func BenchmarkOverheadFakeBatch(b *testing.B) {
	o, _ := fakeOnly(b)
	ts := tasks(zenmetrics.SSIMULACRA2, 1000, img(16, 16, 1))
	for i := range ts {
		ts[i].Ref = img(16, 16, byte(i))
	}
	b.ResetTimer()
	for range b.N {
		for r := range o.RunAll(context.Background(), ts) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ts)), "ns/task")
}

// BenchmarkOverheadCPU compares a 64×64 SSIMULACRA2 through the
// orchestrator with the same call made directly on the CPU backend; the
// difference of the medians is the orchestrator's overhead.
func BenchmarkOverheadCPU(b *testing.B) {
	ctx := context.Background()
	// Twice the cache window, cycled: the LRU never has the next one, so
	// every orchestrator task prepares like the direct call does.
	refs := make([]*zenmetrics.Image, 2*32)
	for i := range refs {
		refs[i], _ = capability.SyntheticPair(64, 64, uint64(i))
	}
	_, dist := capability.SyntheticPair(64, 64, 999)
	be := cpu.New(cpu.Config{Threads: 1})
	o := cpuOnly(b, 1)
	var direct, orch []time.Duration
	b.ResetTimer()
	for i := range b.N {
		ref := refs[i%len(refs)]
		t0 := time.Now()
		if _, err := zenmetrics.ScoreOnce(ctx, be, zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{}); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(t0))
		// A different reference each time: no cache hit helps.
		t0 = time.Now()
		r := o.RunSingle(ctx, Task{Metric: zenmetrics.SSIMULACRA2, Ref: refs[(i+len(refs)/2)%len(refs)], Dist: dist})
		orch = append(orch, time.Since(t0))
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		if r.CacheHit {
			b.Fatal("cache hit: the overhead measurement would be wrong")
		}
	}
	b.ReportMetric(float64(p50(direct).Nanoseconds()), "p50-direct-ns")
	b.ReportMetric(float64(p50(orch).Nanoseconds()), "p50-orch-ns")
	b.ReportMetric(float64((p50(orch) - p50(direct)).Nanoseconds()), "p50-overhead-ns")
}

// variants makes n distorted copies of ref, each with its own noise.
func variants(ref *zenmetrics.Image, n int) []*zenmetrics.Image {
	out := make([]*zenmetrics.Image, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for k, v := range ref.Pix {
				if k&7 == 0 {
					d.Pix[k] = byte(min(255, max(0, int(v)+int(rng.IntN(17))-8)))
				} else {
					d.Pix[k] = v
				}
			}
			out[i] = d
		}()
	}
	wg.Wait()
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkCachedReference scores ZM_BENCH_VARIANTS (100) distorted
// variants of one ZM_BENCH_SIDE² (4096²) reference on the CPU: once
// straight on the backend with as many goroutines as the pool has workers
// (every task prepares the reference), once through the orchestrator
// (prepared once, then reused). Slow: run with -benchtime=1x.
func BenchmarkCachedReference(b *testing.B) {
	if testing.Short() {
		b.Skip("slow")
	}
	side := envInt("ZM_BENCH_SIDE", 4096)
	n := envInt("ZM_BENCH_VARIANTS", 100)
	workers := runtime.NumCPU()
	ref, _ := capability.SyntheticPair(side, side, 1)
	ds := variants(ref, n)
	ctx := context.Background()
	b.Run("direct-uncached", func(b *testing.B) {
		be := cpu.New(cpu.Config{Threads: 1})
		for range b.N {
			var wg sync.WaitGroup
			next := make(chan int, n)
			for i := range n {
				next <- i
			}
			close(next)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						if _, err := zenmetrics.ScoreOnce(ctx, be, zenmetrics.SSIMULACRA2, ref, ds[i], zenmetrics.Options{}); err != nil {
							b.Error(err)
						}
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/batch")
	})
	b.Run("orchestrator-cached", func(b *testing.B) {
		o := cpuOnly(b, workers)
		ts := make([]Task, n)
		for i := range ts {
			ts[i] = Task{ID: TaskID(i + 1), Metric: zenmetrics.SSIMULACRA2, Ref: ref, Dist: ds[i]}
		}
		b.ResetTimer()
		for range b.N {
			for r := range o.RunAll(ctx, ts) {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/batch")
		s := o.CachedRefStats()
		b.ReportMetric(float64(s.Hits), "hits")
		b.ReportMetric(float64(s.Misses), "misses")
	})
}
