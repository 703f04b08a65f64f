package butteraugli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	cpuba "github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	zmshared "github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// Tolerances. The kernels do the CPU reference's float32 operations in its
// order (no fused multiply-adds: NVRTC runs with --fmad=false; IEEE
// division and square root) and its double operations in double; the CPU
// emulation of these very kernels (TestEmulated) gives distance maps
// bit-identical to cpu/butteraugli. What can still differ on a GPU: CUDA's
// double pow (alpha compositing; p-norm powers) against Go's math.Pow, an
// ulp apart at most and only where an image has alpha or a p-norm other
// than 3 is asked for, and the order the double power sums are added in
// (~1e-15). So 1e-5 relative against the CPU reference leaves room only
// for real mistakes; the contract against libjxl is 1e-3.
const (
	tolCPU = 1e-5 // vs cpu/butteraugli: max, 3-norm, p-norm (relative)
	tolMap = 1e-5 // vs the CPU distance map, per pixel, relative to the map's max
	tolJXL = 1e-3 // vs libjxl v0.12.0's butteraugli_main (the bound)
)

func backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(cudatest.Device(t))
}

func scoreGPU(t testing.TB, b *cuda.Backend, ref, dist *zenmetrics.Image, opt zenmetrics.Options) zenmetrics.Score {
	t.Helper()
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Butteraugli, ref, dist, opt)
	if err != nil {
		t.Fatalf("cuda score: %v", err)
	}
	return s
}

func scoreCPU(t testing.TB, ref, dist *zenmetrics.Image, opt zenmetrics.Options) cpuba.Result {
	t.Helper()
	res, err := cpuba.Compare(ref, dist, cpuba.Config{IntensityTarget: opt.IntensityTarget, PNorm: opt.PNorm, DistMap: opt.DistMap})
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	return res
}

// compare checks a CUDA score against the CPU result; it returns the
// relative differences of max and 3-norm.
func compare(t *testing.T, name string, s zenmetrics.Score, c cpuba.Result, opt zenmetrics.Options) (float64, float64) {
	t.Helper()
	eMax, eNorm := relDiff(s.Value, c.Max), relDiff(s.Extras["pnorm3"], c.PNorm3)
	if eMax > tolCPU || eNorm > tolCPU || math.IsNaN(s.Value+s.Extras["pnorm3"]) {
		t.Errorf("%s: max %.8f cpu %.8f (rel %.2g); 3-norm %.8f cpu %.8f (rel %.2g)",
			name, s.Value, c.Max, eMax, s.Extras["pnorm3"], c.PNorm3, eNorm)
	}
	if opt.PNorm > 0 {
		if e := relDiff(s.Extras["pnorm"], c.PNorm); e > tolCPU {
			t.Errorf("%s: %g-norm %.8f cpu %.8f (rel %.2g)", name, opt.PNorm, s.Extras["pnorm"], c.PNorm, e)
		}
	}
	if opt.DistMap {
		if s.DistMap == nil || len(s.DistMap.Pix) != len(c.DistMap) {
			t.Fatalf("%s: distance map missing or wrong size", name)
		}
		worst := 0.0
		for i, v := range s.DistMap.Pix {
			worst = math.Max(worst, math.Abs(float64(v)-float64(c.DistMap[i])))
		}
		if worst > tolMap*c.Max {
			t.Errorf("%s: distance map differs by %.3g (max %.4g)", name, worst, c.Max)
		}
	}
	return eMax, eNorm
}

// Fresh seeded photo-like pairs in every pixel format (gray, alpha: two
// backgrounds, 16-bit), odd sizes (odd half-resolution edges; 9×30 has no
// half level), several blocks each way, 2 staging chunks (2047×1537), a
// non-default intensity target and p-norms, the distance map; and mixed
// pairs (an opaque reference against a distorted image with alpha and the
// other way round).
func TestVsCPU(t *testing.T) {
	b := backend(t)
	formats := cudatest.AllFormats
	sizes := [][2]int{{96, 80}, {37, 29}, {8, 8}, {9, 30}, {15, 17}, {200, 131}, {517, 389}}
	worst := [2]float64{}
	n := 0
	for i, f := range formats {
		for j, sz := range sizes {
			ref, dist := metrictest.Synthetic(sz[0], sz[1], int64(100+10*i+j), f)
			opt := zenmetrics.Options{DistMap: true, PNorm: 1.5 + float64(j)}
			if (i+j)%2 == 1 {
				opt.IntensityTarget = 250
			}
			name := fmt.Sprintf("%v_%dx%d", f, sz[0], sz[1])
			eMax, eNorm := compare(t, name, scoreGPU(t, b, ref, dist, opt), scoreCPU(t, ref, dist, opt), opt)
			worst[0], worst[1] = math.Max(worst[0], eMax), math.Max(worst[1], eNorm)
			n++
		}
	}
	for _, c := range []struct{ rf, df zenmetrics.PixelFormat }{{zenmetrics.RGB8, zenmetrics.RGBA8},
		{zenmetrics.RGBA8, zenmetrics.RGB8}, {zenmetrics.Gray16, zenmetrics.RGBA16}} {
		ref, _ := metrictest.Synthetic(64, 64, 5, c.rf)
		_, dist := metrictest.Synthetic(64, 64, 5, c.df)
		opt := zenmetrics.Options{DistMap: true}
		compare(t, c.rf.String()+"/"+c.df.String(), scoreGPU(t, b, ref, dist, opt), scoreCPU(t, ref, dist, opt), opt)
	}
	cudatest.LargePairs(func(name string, ref, dist *zenmetrics.Image) {
		opt := zenmetrics.Options{DistMap: true}
		eMax, eNorm := compare(t, name, scoreGPU(t, b, ref, dist, opt), scoreCPU(t, ref, dist, opt), opt)
		worst[0], worst[1] = math.Max(worst[0], eMax), math.Max(worst[1], eNorm)
		n++
	})
	t.Logf("%d pairs: worst rel vs CPU reference: max %.2g, 3-norm %.2g", n, worst[0], worst[1])
}

// The shared suite: errors, determinism, concurrency, agreement with the
// CPU backend, and libjxl's scores on testdata/tiny, the reference vectors
// and the corpus (the max distance and the 3-norm within 1e-3 relative,
// the bound; abs 1e-4 lets the near-zero scores of nearly equal
// pairs through). Reference: |Δ| ≤ 1e-4 against the CPU backend, whose
// Butteraugli scores are at most ~100 here: 1e-6 relative, ten times the
// expected agreement (tolCPU's reasoning).
func TestSuite(t *testing.T) {
	b := backend(t)
	ref := cpu.New(cpu.Config{})
	defer ref.Close()
	metrictest.Run(t, b, zenmetrics.Butteraugli, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 1e-4, GoldenRel: tolJXL, Reference: 1e-4},
		Reference: ref,
	})
}

// TestParityCorpus scores every pair of the shared corpus against libjxl
// v0.12.0's butteraugli_main (max distance and 3-norm) with the issue's
// bound, 1e-3 relative, and against the CPU reference with tolCPU. Each
// reference is prepared once and scores its distortions (the cached form).
func TestParityCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus parity skipped with -short")
	}
	b := backend(t)
	dir := zmshared.Dir(t, "corpus")
	tab, err := zmshared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		refPath  string
		refIm    *zenmetrics.Image
		prepared zenmetrics.Reference
		cpuRef   *cpuba.Reference
		worst    [4]float64
	)
	release := func() {
		if prepared != nil {
			prepared.Release()
			cpuRef.Release()
		}
	}
	defer release()
	for i := range tab.Rows {
		if p := tab.Get(i, "ref"); p != refPath {
			release()
			if refIm, err = imageio.DecodeFile(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
			if prepared, err = b.Prepare(ctx, zenmetrics.Butteraugli, refIm, zenmetrics.Options{}); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if cpuRef, err = cpuba.Prepare(refIm, cpuba.Config{}); err != nil {
				t.Fatal(err)
			}
			refPath = p
		}
		name := tab.Get(i, "dist")
		dist, err := imageio.DecodeFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := prepared.Score(ctx, dist)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c, err := cpuRef.Score(dist)
		if err != nil {
			t.Fatal(err)
		}
		wantMax, _ := tab.Float(i, "butteraugli_max")
		wantNorm, _ := tab.Float(i, "butteraugli_3norm")
		e := [4]float64{relDiff(s.Value, wantMax), relDiff(s.Extras["pnorm3"], wantNorm), relDiff(s.Value, c.Max), relDiff(s.Extras["pnorm3"], c.PNorm3)}
		for k := range e {
			worst[k] = math.Max(worst[k], e[k])
		}
		if e[0] > tolJXL || e[1] > tolJXL || math.IsNaN(s.Value) {
			t.Errorf("%s: max %.8f libjxl %.8f (rel %.2g); 3-norm %.6f libjxl %.6f (rel %.2g)", name, s.Value, wantMax, e[0], s.Extras["pnorm3"], wantNorm, e[1])
		}
		if e[2] > tolCPU || e[3] > tolCPU {
			t.Errorf("%s: max %.8f cpu %.8f (rel %.2g); 3-norm %.8f cpu %.8f (rel %.2g)", name, s.Value, c.Max, e[2], s.Extras["pnorm3"], c.PNorm3, e[3])
		}
	}
	t.Logf("%d pairs: worst rel vs libjxl: max %.2g, 3-norm %.2g; vs CPU reference: max %.2g, 3-norm %.2g",
		len(tab.Rows), worst[0], worst[1], worst[2], worst[3])
}

// A cached reference gives each distorted image (other formats too: alpha,
// 16-bit) its one-shot score bit for bit, from several goroutines at once;
// identical images score exactly 0; Release makes Score fail cleanly and
// gives back every byte.
func TestCachedConcurrent(t *testing.T) {
	b := backend(t)
	cudatest.CachedConcurrent(t, b, cudatest.Cached{
		Metric: zenmetrics.Butteraugli,
		Opt:    zenmetrics.Options{PNorm: 6, DistMap: true},
		Same:   same,
		Self: func(t *testing.T, r zenmetrics.Reference, ref *zenmetrics.Image) {
			if s, err := r.Score(context.Background(), ref); err != nil || s.Value != 0 || s.Extras["pnorm3"] != 0 {
				t.Errorf("identical images: %v %v %v, want 0", s.Value, s.Extras, err)
			}
		},
	})
	if n := b.Device().Held(); n != 0 {
		t.Errorf("%d device bytes still held after Release", n)
	}
}

func same(a, b zenmetrics.Score) error {
	if a.Value != b.Value || a.Extras["pnorm3"] != b.Extras["pnorm3"] || a.Extras["pnorm"] != b.Extras["pnorm"] {
		return fmt.Errorf("%v %v vs %v %v", a.Value, a.Extras, b.Value, b.Extras)
	}
	return cudatest.SameMaps(a, b)
}

// Errors: bad options, too small, size mismatch, cancelled context, strip pairs,
// and out of memory predicted before anything is allocated.
func TestErrors(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	ref, dist := metrictest.SyntheticPair(16, 16, 1)
	for _, opt := range []zenmetrics.Options{{IntensityTarget: math.NaN()}, {PNorm: -1}, {PNorm: math.Inf(1)}} {
		if _, err := b.Prepare(ctx, zenmetrics.Butteraugli, ref, opt); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("options %+v: got %v, want ErrBadInput", opt, err)
		}
	}
	small, _ := metrictest.SyntheticPair(7, 30, 1)
	var ts *zenmetrics.TooSmallError
	if _, err := b.Prepare(ctx, zenmetrics.Butteraugli, small, zenmetrics.Options{}); !errors.As(err, &ts) {
		t.Errorf("7x30: %v, want a TooSmallError", err)
	}
	cudatest.ScoreErrors(t, b, zenmetrics.Butteraugli, ref, dist, false)
	// Strips are strip_test.go's; strip pairs (CVVDP's layout) are refused.
	cudatest.Modes(t, b, zenmetrics.Butteraugli, ref, []zenmetrics.Mode{zenmetrics.ModeStripPair}, []zenmetrics.Mode{zenmetrics.ModeStrip})
	cudatest.Refused(t, b, zenmetrics.Butteraugli, 60000) // 3.6 GP: ~TBs of planes
}

// The estimate predicts what a reference and its first scorer hold.
func TestEstimateMatchesHeld(t *testing.T) {
	cudatest.EstimateMatchesHeld(t, backend(t), zenmetrics.Butteraugli, zenmetrics.Options{}, func(ref *zenmetrics.Image) int64 {
		variants := 1
		if ref.Format.HasAlpha() {
			variants = 2
		}
		return estimate(ref.Width, ref.Height, variants, cuda.RawBytes(ref))
	})
}

// bench is the standard benchmarks (cudatest.Bench): their names and
// sub-benchmarks are what the device scripts select.
var bench = cudatest.Bench{Metric: zenmetrics.Butteraugli}

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
