package cudatest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Backend is a cuda.Backend on the test binary's device (Device: it
// skips, or fails under ZENMETRICS_REQUIRE_CUDA=1, without one).
func Backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(Device(t))
}

// MP is the square image of about n megapixels the benchmarks use (1, 4,
// 16 or 64; anything else is 16).
func MP(n int) (w, h int) {
	switch n {
	case 1:
		return 1024, 1024
	case 4:
		return 2048, 2048
	case 64:
		return 8192, 8192
	}
	return 4096, 4096
}

// Bench is the benchmarks every CUDA metric package runs, on the same
// synthetic RGB8 pairs (metrictest.SyntheticPair, seed 5), so that their
// numbers compare across metrics. The device scripts select them by name
// (Benchmark(Cached|Cached2|OneShot)$, BenchmarkCached2$/16MP), so each
// package keeps its own BenchmarkCached, BenchmarkCached2 and
// BenchmarkOneShot that call these; the sub-benchmarks are named 1MP, 4MP
// and 16MP.
type Bench struct {
	Metric zenmetrics.Metric
	// MsPerScore adds an ms/score metric to the three benchmarks.
	MsPerScore bool
	// Cached2Warm is the scores run one after another before Cached2's
	// timer starts.
	Cached2Warm int
}

// prepare is a prepared reference of n MP and its distorted image.
func (c Bench) prepare(b *testing.B, n int) (r zenmetrics.Reference, dist *zenmetrics.Image, w, h int) {
	be := Backend(b)
	w, h = MP(n)
	ref, dist := metrictest.SyntheticPair(w, h, 5)
	r, err := be.Prepare(context.Background(), c.Metric, ref, zenmetrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return r, dist, w, h
}

func (c Bench) msPerScore(b *testing.B) {
	if c.MsPerScore {
		b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/score")
	}
}

// Cached is one score against a prepared reference (the distorted image
// uploaded each time, the result read back), at 1, 4 and 16 MP, after
// metrictest.WarmGPU has brought the GPU's clocks up; it reports GP/s.
func (c Bench) Cached(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			r, dist, w, h := c.prepare(b, n)
			defer r.Release()
			metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), dist); return err })
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Score(context.Background(), dist); err != nil {
					b.Fatal(err)
				}
			}
			c.msPerScore(b)
			b.ReportMetric(float64(w*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GP/s")
		})
	}
}

// CachedPinned is Cached with the distorted image in page-locked memory
// (cuda.Backend.PinnedImage): uploaded in place, without the staging
// copy, as GPU tools that feed pinned buffers (Vship's harnesses) do.
func (c Bench) CachedPinned(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			r, dist, w, h := c.prepare(b, n)
			defer r.Release()
			pin := PinnedCopy(b, dist)
			// The same pixels give the same bits whichever way they travel.
			want, err := r.Score(context.Background(), dist)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := r.Score(context.Background(), pin); err != nil || got.Value != want.Value {
				b.Fatalf("pinned upload scored %v (%v), ordinary memory %v", got.Value, err, want.Value)
			}
			metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), pin); return err })
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Score(context.Background(), pin); err != nil {
					b.Fatal(err)
				}
			}
			c.msPerScore(b)
			b.ReportMetric(float64(w*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GP/s")
		})
	}
}

// PinnedCopy is im copied into a PinnedImage on the test device, freed at
// the end of the test.
func PinnedCopy(t testing.TB, im *zenmetrics.Image) *zenmetrics.Image {
	t.Helper()
	pin, release, err := Backend(t).PinnedImage(im.Width, im.Height, im.Format)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	rowBytes := im.Width * im.Format.BytesPerPixel()
	for y := 0; y < im.Height; y++ {
		copy(pin.Pix[y*pin.Stride:y*pin.Stride+rowBytes], im.Pix[y*im.Stride:])
	}
	return pin
}

// Cached2 is Cached with two callers on one reference at 1 and 16 MP
// (each has its own stream: one's upload overlaps the other's kernels);
// ns/op is per score.
func (c Bench) Cached2(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			r, dist, _, _ := c.prepare(b, n)
			defer r.Release()
			for i := 0; i < c.Cached2Warm; i++ {
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
			c.msPerScore(b)
		})
	}
}

// OneShot prepares, scores and releases at 1, 4 and 16 MP, after one such
// score outside the timer (which loads the kernels).
func (c Bench) OneShot(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			be := Backend(b)
			w, h := MP(n)
			ref, dist := metrictest.SyntheticPair(w, h, 5)
			if _, err := zenmetrics.ScoreOnce(context.Background(), be, c.Metric, ref, dist, zenmetrics.Options{}); err != nil {
				b.Fatalf("cuda score: %v", err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := zenmetrics.ScoreOnce(context.Background(), be, c.Metric, ref, dist, zenmetrics.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			c.msPerScore(b)
		})
	}
}

// Strips times cached strip scores (zenmetrics.ModeStrip) at 16 and 64
// MP, WebGPU's strip sizes, with the backend's free memory capped at a
// quarter of the whole image's estimate (cuda.Backend.SetFreeLimit) so
// that even an H200 plans several strips; it reports ms/score, GP/s, the
// strips and whether the reference stays resident (kept 1), and logs the
// first strip score beside the whole image's where that fits (the strip
// tests check them; this only shows them).
func (c Bench) Strips(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("%dMP", n), func(b *testing.B) {
			ctx := context.Background()
			be := Backend(b)
			w, h := MP(n)
			ref, dist := metrictest.SyntheticPair(w, h, 5)
			var whole float64
			if s, err := zenmetrics.ScoreOnce(ctx, be, c.Metric, ref, dist, zenmetrics.Options{}); err == nil {
				whole = s.Value
			}
			full, _ := be.Estimate(c.Metric, w, h, zenmetrics.ModeFull)
			be.SetFreeLimit(full / 4)
			defer be.SetFreeLimit(0)
			r, err := be.Prepare(ctx, c.Metric, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip})
			if err != nil {
				b.Fatalf("strip prepare (free memory capped at %d MiB): %v", full/4>>20, err)
			}
			defer r.Release()
			s, err := r.Score(ctx, dist)
			if err != nil {
				b.Fatal(err)
			}
			strips, kept, _ := cuda.StripsOf(r)
			b.Logf("%dx%d: %d strips (kept %v), %.17g; whole image %.17g", w, h, strips, kept, s.Value, whole)
			metrictest.WarmGPU(b, func() error { _, err := r.Score(ctx, dist); return err })
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Score(ctx, dist); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/score")
			b.ReportMetric(float64(w*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GP/s")
			b.ReportMetric(float64(strips), "strips")
			k := 0.0
			if kept {
				k = 1
			}
			b.ReportMetric(k, "kept")
		})
	}
}
