package orchestrator

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// gpuBench opens the WebGPU backend for a benchmark (skipped without one).
func gpuBench(b *testing.B) *webgpu.Backend {
	b.Helper()
	if os.Getenv(wgpu.EnvLibrary) == "" {
		if _, err := os.Stat("../.tools/libwebgpu_wrapper.so"); err == nil {
			b.Setenv(wgpu.EnvLibrary, "../.tools/libwebgpu_wrapper.so")
		}
	}
	g, err := webgpu.NewBackend(context.Background(), nil)
	if err != nil {
		b.Skipf("no WebGPU runtime: %v", err)
	}
	return g
}

// warmGPU scores ref against d for at least a second before the timing
// starts: besides warming the pipelines and the buffer pool, an idle GPU
// runs at a low clock and takes a few hundred milliseconds of work to come
// up to speed (seen on the H200: 345 MHz idle, 435 MHz for the first
// ~0.3 s of scoring, then 1980 MHz, and 16 MP scores 3x slower meanwhile).
func warmGPU(b *testing.B, g zenmetrics.Backend, m zenmetrics.Metric, ref, d *zenmetrics.Image) {
	b.Helper()
	ctx := context.Background()
	for t0 := time.Now(); time.Since(t0) < time.Second; {
		if _, err := zenmetrics.ScoreOnce(ctx, g, m, ref, d, zenmetrics.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedReferenceGPU is BenchmarkCachedReference on the GPU: 100
// (ZM_BENCH_VARIANTS) distorted variants of one 4096² (ZM_BENCH_SIDE)
// reference, per metric the GPU implements, scored
//   - direct-uncached: ScoreOnce per variant (prepare + score + release,
//     what a caller without reference reuse does);
//   - direct-cached: one Prepare, then Score per variant (the backend's
//     cached-reference form alone);
//   - orchestrator: RunAll through an orchestrator whose only slot is this
//     GPU, so the reference cache (xxh3 of the reference bytes per task)
//     is what turns 100 tasks into one prepare;
//   - orchestrator-distinct: the same with 100 references that differ in
//     one byte each: every task prepares its own reference, through the
//     same workers (Backend.ConcurrentScores) and pipelining.
//
// The speedup the issue asks for is direct-uncached ÷ orchestrator (and,
// with everything but the cache equal, orchestrator-distinct ÷
// orchestrator).
// Slow on lavapipe: run with -benchtime=1x and a small ZM_BENCH_SIDE there.
func BenchmarkCachedReferenceGPU(b *testing.B) {
	if testing.Short() {
		b.Skip("slow")
	}
	side := envInt("ZM_BENCH_SIDE", 4096)
	n := envInt("ZM_BENCH_VARIANTS", 100)
	ref, _ := capability.SyntheticPair(side, side, 1)
	ds := variants(ref, n)
	ctx := context.Background()
	for _, m := range []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli} {
		b.Run(m.String()+"/direct-uncached", func(b *testing.B) {
			g := gpuBench(b)
			defer g.Close()
			// Warm the pipelines and buffer pool outside the timing.
			warmGPU(b, g, m, ref, ds[0])
			b.ResetTimer()
			for range b.N {
				for _, d := range ds {
					if _, err := zenmetrics.ScoreOnce(ctx, g, m, ref, d, zenmetrics.Options{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/batch")
		})
		b.Run(m.String()+"/direct-cached", func(b *testing.B) {
			g := gpuBench(b)
			defer g.Close()
			warmGPU(b, g, m, ref, ds[0])
			b.ResetTimer()
			for range b.N {
				r, err := g.Prepare(ctx, m, ref, zenmetrics.Options{})
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range ds {
					if _, err := r.Score(ctx, d); err != nil {
						b.Fatal(err)
					}
				}
				r.Release()
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/batch")
		})
		// orchestrator: the reference cache turns 100 tasks into one
		// prepare; orchestrator-distinct: the same orchestrator (same
		// workers, same pipelining) on 100 references that differ in one
		// byte, so every task prepares its own: the cache's speedup is
		// orchestrator-distinct ÷ orchestrator, next to direct-uncached ÷
		// orchestrator (what a caller without reuse does).
		for _, distinct := range []bool{false, true} {
			name := "/orchestrator"
			if distinct {
				name += "-distinct"
			}
			b.Run(m.String()+name, func(b *testing.B) {
				g := gpuBench(b)
				warmGPU(b, g, m, ref, ds[0])
				cfg := Config{CacheDir: b.TempDir(), MaxParallelCPU: 1}
				cfg.probe = func(context.Context) (*capability.Report, error) {
					return &capability.Report{CPU: capability.CPUInfo{Brand: "bench", LogicalCores: 1},
						GPUs: []capability.GPUInfo{{Name: g.Name(), VRAMMiB: 1 << 16}}}, nil
				}
				cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
					return []backendSlot{{name: g.Name(), gpu: true, gpuIndex: 0, backend: g, heapBytes: 64 << 30}}, nil
				}
				o, err := New(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer o.Close()
				ts := make([]Task, n)
				for i := range ts {
					r := ref
					if distinct {
						r = zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
						copy(r.Pix, ref.Pix)
						r.Pix[i] ^= 1
					}
					ts[i] = Task{ID: TaskID(i + 1), Metric: m, Ref: r, Dist: ds[i]}
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
	}
}
