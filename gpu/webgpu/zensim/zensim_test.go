package zensim

import (
	"context"
	"errors"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/cpu/zensim/zensimtest"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

func backend(t testing.TB) *webgpu.Backend {
	t.Helper()
	return webgpu.NewBackendOn(gputest.Device(t))
}

// tol is the WebGPU tolerance against the CPU, 1e-3 on the score
// (0..100). The kernels compute cpu/zensim's per-pixel float32 values
// operation for operation (fused multiply-adds exact, quotients correctly
// rounded, running sums restarted where the CPU restarts them), so the
// only expected difference is the order of the sums: float32 per column
// and in fixed trees here, float64 per 8 columns there, a relative error
// of about 1e-6 on each pooled feature, which moves a score by ~1e-5
// (measured: see the tests' logs and the report in BENCHMARKS.md).
const tol = 1e-3

// TestSuite runs the parts of the shared suite that apply to zensim (it
// has no corpus goldens; cpu/zensim is checked against zensim's published
// scores): the error contract, determinism (identical bits), concurrent
// scoring and the CPU reference on fresh synthetic and real images within
// tol.
func TestSuite(t *testing.T) {
	b := backend(t)
	cfg := metrictest.Config{Tol: metrictest.Tolerances{Reference: tol}, Reference: cpuBackend{}}
	t.Run("Errors", func(t *testing.T) { metrictest.Errors(t, b, zenmetrics.Zensim, cfg) })
	t.Run("Determinism", func(t *testing.T) { metrictest.Determinism(t, b, zenmetrics.Zensim, cfg) })
	t.Run("Concurrent", func(t *testing.T) { metrictest.Concurrent(t, b, zenmetrics.Zensim, cfg) })
	t.Run("VsReference", func(t *testing.T) { metrictest.VsReference(t, b, zenmetrics.Zensim, cfg) })
}

// compare scores ref/dist on the GPU and the CPU and checks the score
// within tol; it returns |Δ|.
func compare(t *testing.T, b *webgpu.Backend, name string, ref, dist *zenmetrics.Image, opt zenmetrics.Options) float64 {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, opt)
	if opt.Mode == zenmetrics.ModeFull && (errors.Is(err, zenmetrics.ErrUnsupported) || errors.Is(err, zenmetrics.ErrOutOfMemory)) {
		// Beyond this device's limits as a whole image (lavapipe binds at
		// most 128 MiB): strips, which give the whole image's score.
		t.Logf("%s: %v; scoring in strips", name, err)
		opt.Mode = zenmetrics.ModeStrip
		r, err = b.Prepare(ctx, zenmetrics.Zensim, ref, opt)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer r.Release()
	got, err := r.(*reference).ScoreDetail(ctx, dist)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cr, err := cpuz.Prepare(ref, cpuz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Release()
	want, err := cr.ScoreDetail(ctx, dist)
	if err != nil {
		t.Fatal(err)
	}
	d := math.Abs(got.Score - want.Score)
	var worst float64
	worstI := -1
	for i := range want.Features {
		if i >= len(got.Features) {
			break
		}
		e := math.Abs(got.Features[i] - want.Features[i])
		if e > worst {
			worst, worstI = e, i
		}
	}
	t.Logf("%s: webgpu %.8f, cpu %.8f, |Δ| %.3g (largest feature |Δ| %.3g at %d)", name, got.Score, want.Score, d, worst, worstI)
	if len(got.Features) != len(want.Features) {
		t.Errorf("%s: %d features, the CPU %d", name, len(got.Features), len(want.Features))
	}
	if !(d <= tol) {
		t.Errorf("%s: |Δ| %.3g > %g", name, d, tol)
	}
	return d
}

// TestFormats: every pixel format (the alpha background, 16-bit tables,
// grey) and a padded stride give the CPU's score within tol, at sizes
// whose widths leave a scalar tail (w mod 8 ≠ 0) and pad columns.
func TestFormats(t *testing.T) {
	b := backend(t)
	for i, f := range []zenmetrics.PixelFormat{zenmetrics.Gray8, zenmetrics.GrayA8, zenmetrics.RGB8, zenmetrics.RGBA8,
		zenmetrics.Gray16, zenmetrics.GrayA16, zenmetrics.RGB16, zenmetrics.RGBA16} {
		ref, dist := metrictest.Synthetic(171+i, 133, int64(i), f)
		compare(t, b, f.String(), ref, dist, zenmetrics.Options{})
	}
}

// TestIdentical: an image against itself scores exactly 100 (zensim's
// identical-bytes rule; here the XYB planes of scale 0 compared bit for
// bit on the device), and one changed pixel does not.
func TestIdentical(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	ref, _ := metrictest.SyntheticPair(200, 150, 3)
	r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	s, err := r.Score(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if s.Value != 100 {
		t.Errorf("identical images score %v, want 100", s.Value)
	}
	one := *ref
	one.Pix = append([]byte(nil), ref.Pix...)
	one.Pix[len(one.Pix)/2] ^= 0x10
	s, err = r.Score(ctx, &one)
	if err != nil {
		t.Fatal(err)
	}
	if !(s.Value < 100) {
		t.Errorf("one changed pixel scores %v, want below 100", s.Value)
	}
}

// cpuBackend adapts cpu/zensim to zenmetrics.Backend (what package cpu
// does for zensim; used directly so that these tests depend on the zensim
// CPU code only).
type cpuBackend struct{}

func (cpuBackend) Name() string { return "cpu/zensim" }
func (cpuBackend) Estimate(m zenmetrics.Metric, w, h int, _ zenmetrics.Mode) (int64, bool) {
	return cpuz.EstimateBytes(w, h), m == zenmetrics.Zensim
}
func (cpuBackend) Close() error { return nil }
func (cpuBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.Zensim {
		return nil, zenmetrics.ErrUnsupported
	}
	return cpuz.PrepareBackend(ctx, ref, opt, 0)
}

// TestPublished scores zensim 0.2.7's cross-platform test pairs (its
// generators, cpu/zensim/zensimtest) on the GPU and matches the scores that
// test publishes within its own tolerance, 1e-5 (cpu/zensim is within
// 3.6e-7 of them; the GPU adds its sums' order), and the CPU within tol.
// Also the generators' images against themselves: exactly 100.
func TestPublished(t *testing.T) {
	b := backend(t)
	const n = zensimtest.PublishedSize
	pairs := zensimtest.Pairs(n, n)
	for i, want := range zensimtest.Published {
		p := pairs[i]
		if p.Name != want.Name {
			t.Fatalf("pair %d is %s, want %s", i, p.Name, want.Name)
		}
		ref, dist := zensimtest.Image(p.Src, n, n), zensimtest.Image(p.Dist, n, n)
		compare(t, b, p.Name, ref, dist, zenmetrics.Options{})
		got, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(got.Value - want.Score)
		t.Logf("%-26s webgpu %.12f published %.12f |Δ| %.2e", p.Name, got.Value, want.Score, d)
		if !(d <= zensimtest.PublishedTolerance) {
			t.Errorf("%s: %.12f, published %.12f (|Δ| %.2e > %g)", p.Name, got.Value, want.Score, d, zensimtest.PublishedTolerance)
		}
		same, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, zensimtest.Image(p.Src, n, n), zenmetrics.Options{})
		if err != nil || same.Value != 100 {
			t.Errorf("%s: the source against a copy of itself: %v, %v; want exactly 100", p.Name, same.Value, err)
		}
	}
}
