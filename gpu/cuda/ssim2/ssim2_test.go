package ssim2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	cpussim2 "github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

func backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(cudatest.Device(t))
}

func score(t testing.TB, b *cuda.Backend, ref, dist *zenmetrics.Image) float64 {
	t.Helper()
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatalf("cuda score: %v", err)
	}
	return s.Value
}

// Against the CPU reference on seeded photo-like pairs in every pixel
// format and odd sizes (8×8: one scale and a 4×4 one; 300×17: scales stop
// early). Tolerance 1e-4: the kernels do the CPU's float32 operations in
// its order; only the float64 sums are added in another order (per column
// here, per row there, ~1e-13), and the CPU emulates FMA in float64 (a
// double rounding on exact ties).
func TestVsCPU(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "bands"}[on], func(t *testing.T) {
			defer func(was *bool) { bandsOn = was }(bandsOn)
			bandsOn = &on
			vsCPU(t)
		})
	}
}

func vsCPU(t *testing.T) {
	b := backend(t)
	cases := []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{256, 192, zenmetrics.RGB8}, {37, 29, zenmetrics.RGB8}, {8, 8, zenmetrics.RGB8}, {300, 17, zenmetrics.RGBA8},
		{129, 97, zenmetrics.Gray8}, {96, 80, zenmetrics.GrayA8}, {120, 90, zenmetrics.RGB16}, {64, 72, zenmetrics.RGBA16},
		{50, 40, zenmetrics.Gray16}, {1023, 517, zenmetrics.RGB8},
		// Above one 8 MiB staging chunk (two chunks; odd sizes: the
		// last band's rows when bands are on).
		{2047, 1537, zenmetrics.RGB8}, {1601, 1199, zenmetrics.RGB16},
	}
	maxd := 0.0
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(100+i), c.f)
		want, err := cpussim2.Score(ref, dist, cpussim2.Config{})
		if err != nil {
			t.Fatal(err)
		}
		got := score(t, b, ref, dist)
		d := math.Abs(got - want)
		maxd = math.Max(maxd, d)
		if d > 1e-4 || math.IsNaN(got) {
			t.Errorf("%dx%d %v: cuda %.10f cpu %.10f |Δ| %.2e > 1e-4", c.w, c.h, c.f, got, want, d)
		}
		if same := score(t, b, ref, ref); same != 100 {
			t.Errorf("%dx%d %v: identical images score %.10f, want exactly 100", c.w, c.h, c.f, same)
		}
	}
	t.Logf("max |Δ| vs CPU reference over %d pairs: %.2e", len(cases), maxd)
}

// The shared suite: errors, determinism, concurrency, agreement with the
// CPU backend (1e-4), and libjxl's scores on testdata/tiny, the refvectors
// and the corpus (≤ 0.02, the project's GPU tolerance for SSIMULACRA2).
func TestSuite(t *testing.T) {
	b := backend(t)
	ref := cpu.New(cpu.Config{})
	defer ref.Close()
	metrictest.Run(t, b, zenmetrics.SSIMULACRA2, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 0.02, Reference: 1e-4},
		Reference: ref,
	})
}

// A cached reference gives each distorted image its one-shot score, from
// several goroutines at once, and Release makes Score fail cleanly.
func TestCachedConcurrent(t *testing.T) {
	b := backend(t)
	ref, _ := metrictest.SyntheticPair(333, 250, 1)
	var dists []*zenmetrics.Image
	for i := 0; i < 6; i++ {
		_, d := metrictest.SyntheticPair(333, 250, int64(10+i))
		dists = append(dists, d)
	}
	cudatest.CachedConcurrent(t, b, cudatest.Cached{
		Metric:     zenmetrics.SSIMULACRA2,
		Ref:        ref,
		Dists:      dists,
		Goroutines: 4,
		Same: func(s, want zenmetrics.Score) error {
			if s.Value != want.Value {
				return fmt.Errorf("cached %.12f, one-shot %.12f", s.Value, want.Value)
			}
			return nil
		},
	})
	if n := b.Device().Held(); n != 0 {
		t.Errorf("%d device bytes still held after Release", n)
	}
}

// Out of memory: an image whose estimate exceeds the device's free memory
// is refused before anything is allocated, matching ErrOutOfMemory.
func TestOutOfMemory(t *testing.T) {
	b := backend(t)
	const side = 60000 // 3.6 GP: ~200 GB of planes
	est, ok := b.Estimate(zenmetrics.SSIMULACRA2, side, side, zenmetrics.ModeFull)
	if ok {
		t.Fatalf("Estimate(%d²) = %d bytes, ok", side, est)
	}
	im := &zenmetrics.Image{Width: side, Height: side, Format: zenmetrics.Gray8, Stride: side, Pix: make([]byte, side*side)}
	_, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, im, zenmetrics.Options{})
	if !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Fatalf("Prepare(%d²): %v", side, err)
	}
	if _, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, im, zenmetrics.Options{Mode: zenmetrics.ModeStripPair}); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("strip pairs: %v", err)
	}
	if _, err := b.Prepare(context.Background(), zenmetrics.IWSSIM, im, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Errorf("unregistered metric: %v", err)
	}
}

// bench is the standard benchmarks (cudatest.Bench): their names and
// sub-benchmarks are what the device scripts select.
var bench = cudatest.Bench{Metric: zenmetrics.SSIMULACRA2}

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

// BenchmarkCachedBands is BenchmarkCached at 16 MP with scale 0's first
// kernels queued band by band as the upload arrives
// (ZENMETRICS_CUDA_BANDS=on), to measure what that overlap gains.
func BenchmarkCachedBands(b *testing.B) {
	defer func(was *bool) { bandsOn = was }(bandsOn)
	bandsOn = force(true)
	be := backend(b)
	ref, dist := metrictest.SyntheticPair(4096, 4096, 5)
	r, err := be.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
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
}

// BenchmarkCachedPinnedBands is BenchmarkCachedBands with the distorted
// image in page-locked memory: with no host copy in the way, the banded
// upload can overlap the DMA with scale 0's first kernels.
func BenchmarkCachedPinnedBands(b *testing.B) {
	defer func(was *bool) { bandsOn = was }(bandsOn)
	bandsOn = force(true)
	be := backend(b)
	ref, dist := metrictest.SyntheticPair(4096, 4096, 5)
	r, err := be.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Release()
	pin := cudatest.PinnedCopy(b, dist)
	metrictest.WarmGPU(b, func() error { _, err := r.Score(context.Background(), pin); return err })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Score(context.Background(), pin); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProfile logs the GPU time of each step of a 16 MP cached score
// (events between launches), and the upload. Informational: it fails only
// if a step cannot be timed.
func TestProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("profile left out under -short")
	}
	be := backend(t)
	d := be.Device()
	ref, dist := metrictest.SyntheticPair(4096, 4096, 5)
	r, err := be.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	// The banded upload (6 chunks here) gives the very same bits as
	// upload-then-compute.
	defer func(was *bool) { bandsOn = was }(bandsOn)
	bandsOn = force(true)
	banded, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	bandsOn = force(false)
	plain, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	if banded.Value != plain.Value {
		t.Errorf("16 MP: banded upload %.12f, plain %.12f", banded.Value, plain.Value)
	}
	// From page-locked memory (uploaded in place), banded or not: the
	// same bits again.
	pin := cudatest.PinnedCopy(t, dist)
	for _, on := range []bool{false, true} {
		bandsOn = &on
		got, err := r.Score(context.Background(), pin)
		if err != nil {
			t.Fatal(err)
		}
		if got.Value != plain.Value {
			t.Errorf("16 MP pinned (bands %v): %.12f, plain %.12f", on, got.Value, plain.Value)
		}
	}
	bandsOn = force(false)
	type ev struct {
		label string
		e     *cuda.Event
	}
	var evs []ev
	profile = func(st *cuda.Stream, k int, step string) {
		e, err := d.NewEvent()
		if err == nil && e.Record(st) == nil {
			evs = append(evs, ev{fmt.Sprintf("s%d %s", k, step), e})
		}
	}
	defer func() { profile = nil }()
	for rep := 0; rep < 3; rep++ {
		for _, e := range evs {
			e.e.Destroy()
		}
		evs = evs[:0]
		t0 := time.Now()
		if _, err := r.Score(context.Background(), dist); err != nil {
			t.Fatal(err)
		}
		if rep < 2 {
			continue
		}
		t.Logf("score wall %.3f ms", float64(time.Since(t0).Microseconds())/1000)
	}
	by := map[string]float32{}
	var total float32
	for i := 1; i < len(evs); i++ {
		ms, err := cuda.Elapsed(evs[i-1].e, evs[i].e)
		if err != nil {
			t.Fatal(err)
		}
		step := evs[i].label[strings.Index(evs[i].label, " ")+1:]
		by[step] += ms
		total += ms
		t.Logf("%-18s %.3f ms", evs[i].label, ms)
	}
	var keys []string
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("total %-12s %.3f ms", k, by[k])
	}
	t.Logf("timed kernels %.3f ms (the first scale-0 step and the reduce not included)", total)
	for _, e := range evs {
		e.e.Destroy()
	}
}

// force is a bandsOn value.
func force(on bool) *bool { return &on }
