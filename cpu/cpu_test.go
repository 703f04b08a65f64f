package cpu

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIMULACRA2 runs the shared suite on the CPU backend: |Δ| ≤ 0.01
// against libjxl v0.12.0's ssimulacra2 on every pair of testdata/tiny, the
// shared corpus and the reference vectors, and identical scores between
// all cores and a single goroutine.
func TestSSIMULACRA2(t *testing.T) {
	threads := 0
	if runtime.GOMAXPROCS(0) == 1 {
		threads = 3
	}
	b := New(Config{Threads: threads})
	defer b.Close()
	one := New(Config{Threads: 1})
	defer one.Close()
	metrictest.Run(t, b, zenmetrics.SSIMULACRA2, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 0.01, Reference: 0},
		Reference: one,
	})
}

// TestDSSIM runs the shared suite on the CPU backend's DSSIM: within 1e-3
// relative (or 1e-8 absolute, the rounding of the 8-decimal reference
// scores) of dssim-core 3.4.0 on testdata/tiny, the shared corpus and the
// reference vectors, identical scores between all cores and one goroutine,
// and no refusal of small images (dssim-core scores a 1×1 image).
func TestDSSIM(t *testing.T) {
	threads := 0
	if runtime.GOMAXPROCS(0) == 1 {
		threads = 3
	}
	b := New(Config{Threads: threads})
	defer b.Close()
	one := New(Config{Threads: 1})
	defer one.Close()
	metrictest.Run(t, b, zenmetrics.DSSIM, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 1e-8, GoldenRel: 1e-3, Reference: 0},
		Reference: one,
		NoMinSize: true,
	})
	// The SSIM map comes back through Options.DistMap at the image's size.
	ref, dist := metrictest.SyntheticPair(40, 30, 1)
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.DSSIM, ref, dist, zenmetrics.Options{DistMap: true})
	if err != nil || s.Metric != zenmetrics.DSSIM || !(s.Value > 0) || s.DistMap == nil ||
		s.DistMap.Width != 40 || s.DistMap.Height != 30 || len(s.DistMap.Pix) != 40*30 {
		t.Errorf("dssim ScoreOnce with map = %+v, %v", s, err)
	}
	if n, ok := b.Estimate(zenmetrics.DSSIM, 1, 1, zenmetrics.ModeFull); !ok || n <= 0 {
		t.Errorf("Estimate dssim 1x1 = %d, %v; dssim-core scores it", n, ok)
	}
}

// TestIWSSIM runs the shared suite on the CPU backend's IW-SSIM: within
// 1e-6 absolute of piq 0.8.0 (float64) on testdata/tiny, the shared corpus
// and the reference vectors (in piq's call order; the published MATLAB
// values within their own 1e-5), identical scores between all cores and one
// goroutine, and refusal of images below 161 px a side.
func TestIWSSIM(t *testing.T) {
	threads := 0
	if runtime.GOMAXPROCS(0) == 1 {
		threads = 3
	}
	b := New(Config{Threads: threads})
	defer b.Close()
	one := New(Config{Threads: 1})
	defer one.Close()
	metrictest.Run(t, b, zenmetrics.IWSSIM, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 1e-6, Reference: 0},
		Reference: one,
		Tiny:      160,
		MinSide:   161,
	})
	if _, ok := b.Estimate(zenmetrics.IWSSIM, 160, 500, zenmetrics.ModeFull); ok {
		t.Error("Estimate iwssim accepted a 160-pixel-wide image")
	}
	if n, ok := b.Estimate(zenmetrics.IWSSIM, 1024, 768, zenmetrics.ModeFull); !ok || n < 1024*768*8 {
		t.Errorf("Estimate iwssim 1024x768 = %d, %v", n, ok)
	}
}

func TestBackendContract(t *testing.T) {
	b := New(Config{})
	if b.Name() != "cpu" {
		t.Errorf("Name = %q", b.Name())
	}
	if n, ok := b.Estimate(zenmetrics.SSIMULACRA2, 1024, 768, zenmetrics.ModeFull); !ok || n < 1024*768*4 {
		t.Errorf("Estimate ssim2 1024x768 = %d, %v", n, ok)
	}
	if _, ok := b.Estimate(zenmetrics.SSIMULACRA2, 7, 100, zenmetrics.ModeFull); ok {
		t.Error("Estimate accepted a 7-pixel-wide image")
	}
	ref, dist := metrictest.SyntheticPair(40, 30, 1)
	// Metrics the backend does not claim in Estimate must be refused by
	// Prepare with ErrUnsupported (the set grows as metrics are added).
	for _, m := range append(zenmetrics.AllMetrics(), zenmetrics.Metric(0), zenmetrics.Metric(200)) {
		// 256×256 is above every metric's minimum size (IW-SSIM: 161).
		if _, ok := b.Estimate(m, 256, 256, zenmetrics.ModeFull); ok {
			continue
		}
		if m == zenmetrics.SSIMULACRA2 {
			t.Error("Estimate does not claim SSIMULACRA2")
		}
		if _, err := b.Prepare(context.Background(), m, ref, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("Prepare %v: err = %v, want ErrUnsupported", m, err)
		}
	}
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{})
	if err != nil || s.Metric != zenmetrics.SSIMULACRA2 || !(s.Value < 100) {
		t.Errorf("ScoreOnce = %+v, %v", s, err)
	}
	// Butteraugli through the same contract: max distance as Value, the
	// 3-norm in Extras. Images under 8 px are refused (libjxl's tool
	// prints 0 for them; see MinSize and TestButteraugliTooSmall).
	if _, ok := b.Estimate(zenmetrics.Butteraugli, 4, 4, zenmetrics.ModeFull); ok {
		t.Error("Estimate accepted a 4x4 butteraugli image, which Prepare refuses")
	}
	bs, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Butteraugli, ref, dist, zenmetrics.Options{})
	if err != nil || bs.Metric != zenmetrics.Butteraugli || !(bs.Value > 0) || !(bs.Extras["pnorm3"] > 0) || bs.Extras["pnorm3"] > bs.Value {
		t.Errorf("butteraugli ScoreOnce = %+v, %v", bs, err)
	}
	r, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Score(ctx, dist); !errors.Is(err, context.Canceled) {
		t.Errorf("Score with cancelled ctx: %v", err)
	}
	r.Release()
	if _, err := r.Score(context.Background(), dist); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("Score after Release: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{}); err == nil {
		t.Error("Prepare after Close succeeded")
	}
}

// TestPanicBecomesError checks that a panic inside a reference's Score
// comes back as a *zenmetrics.PanicError instead of crashing the process
// (a nil adapter dereferences nil inside Score).
func TestPanicBecomesError(t *testing.T) {
	b := New(Config{})
	if _, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, nil, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("nil image: err = %v, want ErrBadInput", err)
	}
	_, dist := metrictest.SyntheticPair(16, 16, 1)
	var r *ssim2Ref
	_, err := r.Score(context.Background(), dist)
	var pe *zenmetrics.PanicError
	if !errors.As(err, &pe) {
		t.Errorf("nil reference: err = %v, want *PanicError", err)
	}
}

// TestZensim checks the CPU backend's zensim dispatch: a score below 100
// for a distorted pair, exactly 100 for identical images, the package's
// own estimate, and 7-pixel sides refused with ErrBadInput. Its scores
// against zensim's published values are tested in cpu/zensim.
func TestZensim(t *testing.T) {
	b := New(Config{})
	ref, dist := metrictest.SyntheticPair(64, 48, 3)
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
	if err != nil || s.Metric != zenmetrics.Zensim || !(s.Value < 100) {
		t.Errorf("zensim 64x48: %+v, %v", s, err)
	}
	if s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, ref, zenmetrics.Options{}); err != nil || s.Value != 100 {
		t.Errorf("zensim identical: %v, %v; want 100", s.Value, err)
	}
	if n, ok := b.Estimate(zenmetrics.Zensim, 640, 480, zenmetrics.ModeFull); !ok || n != zensim.EstimateBytes(640, 480) {
		t.Errorf("Estimate zensim 640x480: %d, %v", n, ok)
	}
	small, _ := metrictest.SyntheticPair(7, 64, 1)
	if _, err := b.Prepare(context.Background(), zenmetrics.Zensim, small, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("zensim 7x64: %v, want ErrBadInput", err)
	}
}
