package iwssim

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// tolCPU is the tolerance on a GPU against cpu/iwssim, absolute on the
// score. The kernels do the reference's float64 operations in its order
// (NVRTC with --fmad=false; double division and the other double
// operations are IEEE round-to-nearest on every CUDA device, denormals
// included), the logarithm is Go's algorithm, and every sum runs in the
// reference's order; the CPU emulation of these very kernels gives the
// reference's scores bit for bit (TestEmulated). So on amd64, where Go
// fuses nothing either, the scores must be identical: 0. Elsewhere Go
// fuses some multiply-adds in the reference (a single rounding where the
// kernels round twice), a few ulps per term: 1e-12 of a score near 1
// allows that and still catches any reordered or wrong operation (one
// ulp of drift in every term of a map moves a score by ~1e-14 to 1e-13,
// a real error by far more).
func tolCPU() float64 {
	if runtime.GOARCH == "amd64" {
		return 0
	}
	return 1e-12
}

// tolGolden is the tolerance against piq 0.8.0's float64 scores (the
// goldens): the CPU reference's own, 1e-6 absolute (the CPU
// tolerance; cpu/iwssim measures 5e-11, the rounding of the 10-decimal
// golden values), since these scores are cpu/iwssim's.
const tolGolden = 1e-6

func backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(cudatest.Device(t))
}

func scoreGPU(t testing.TB, b *cuda.Backend, ref, dist *zenmetrics.Image) float64 {
	t.Helper()
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.IWSSIM, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatalf("cuda score: %v", err)
	}
	return s.Value
}

// Fresh seeded pairs in every pixel format (gray, alpha, 16-bit), odd
// sizes (the 161 minimum, sizes whose halvings round up, one wider than a
// terms round, several blocks each way), padded strides, mixed formats,
// and images of several upload chunks, against cpu/iwssim.
func TestVsCPU(t *testing.T) {
	b := backend(t)
	tol := tolCPU()
	sizes := [][2]int{{161, 161}, {162, 333}, {177, 163}, {300, 161}, {517, 389}}
	worst, differ, n := 0.0, 0, 0
	check := func(name string, ref, dist *zenmetrics.Image) {
		got := scoreGPU(t, b, ref, dist)
		want, err := cpuiw.Score(ref, dist, cpuiw.Config{})
		if err != nil {
			t.Fatalf("%s: cpu: %v", name, err)
		}
		d := math.Abs(got - want)
		if got != want {
			differ++
		}
		worst, n = math.Max(worst, d), n+1
		if !(d <= tol) {
			t.Errorf("%s: cuda %.17g, cpu %.17g (|Δ| %.3g > %g)", name, got, want, d, tol)
		}
	}
	cudatest.FormatGrid(sizes, padded, check)
	for _, c := range []struct{ rf, df zenmetrics.PixelFormat }{{zenmetrics.RGB8, zenmetrics.RGBA8},
		{zenmetrics.RGBA8, zenmetrics.RGB8}, {zenmetrics.Gray16, zenmetrics.RGBA16}, {zenmetrics.GrayA8, zenmetrics.RGB16}} {
		ref, _ := metrictest.Synthetic(200, 180, 5, c.rf)
		_, dist := metrictest.Synthetic(200, 180, 5, c.df)
		check(c.rf.String()+"/"+c.df.String(), ref, dist)
	}
	cudatest.LargePairs(check)
	t.Logf("%d pairs: worst |Δ| vs cpu/iwssim %.3g; %d not bit-identical", n, worst, differ)
}

// The shared suite: errors (161 minimum), determinism, concurrency,
// agreement with the CPU backend on fresh and real pairs (tolCPU), and
// piq 0.8.0's scores on testdata/tiny, the reference vectors and the
// shared corpus (tolGolden).
func TestSuite(t *testing.T) {
	b := backend(t)
	ref := cpu.New(cpu.Config{})
	defer ref.Close()
	metrictest.Run(t, b, zenmetrics.IWSSIM, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: tolGolden, Reference: tolCPU()},
		Reference: ref,
		Tiny:      minSide - 1,
		MinSide:   minSide,
	})
}

// A cached reference gives each distorted image (other formats too:
// alpha, 16-bit) its one-shot score bit for bit, from several goroutines
// at once (more than maxSlots, so some wait for a slot); the reference
// against itself scores what the CPU says; Release makes Score fail
// cleanly and gives back every byte.
func TestCachedConcurrent(t *testing.T) {
	cudatest.CachedConcurrent(t, backend(t), cudatest.Cached{
		Metric: zenmetrics.IWSSIM,
		Self: func(t *testing.T, r zenmetrics.Reference, ref *zenmetrics.Image) {
			self, err := cpuiw.Score(ref, ref, cpuiw.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if s, err := r.Score(context.Background(), ref); err != nil || math.Abs(s.Value-self) > tolCPU() {
				t.Errorf("identical images: %v %v, cpu %v", s.Value, err, self)
			}
		},
	})
}

// Errors: size mismatch, cancelled context, no pixels, below the
// minimum, strip pairs (strips are taken), and out of memory predicted
// before anything is allocated (beyond the kernels' indexing, and beyond
// the device's memory).
func TestErrors(t *testing.T) {
	b := backend(t)
	ref, dist := metrictest.SyntheticPair(170, 170, 1)
	cudatest.ScoreErrors(t, b, zenmetrics.IWSSIM, ref, dist, true)
	small, _ := metrictest.SyntheticPair(160, 400, 1)
	var ts *zenmetrics.TooSmallError
	if _, err := b.Prepare(context.Background(), zenmetrics.IWSSIM, small, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrBadInput) || !errors.As(err, &ts) {
		t.Errorf("160 wide: %v", err)
	}
	cudatest.Modes(t, b, zenmetrics.IWSSIM, ref, []zenmetrics.Mode{zenmetrics.ModeStripPair}, []zenmetrics.Mode{zenmetrics.ModeStrip, zenmetrics.ModeFull})
	// 60000² is past the kernels' int indexing, 40000² (about 216 GB)
	// past any device's memory; both are refused before anything is
	// allocated or uploaded.
	cudatest.Refused(t, b, zenmetrics.IWSSIM, 60000, 40000)
}

// The estimate predicts what a reference and its first scorer hold.
func TestEstimateMatchesHeld(t *testing.T) {
	cudatest.EstimateMatchesHeld(t, backend(t), zenmetrics.IWSSIM, zenmetrics.Options{}, func(ref *zenmetrics.Image) int64 {
		return estimate(ref.Width, ref.Height, cuda.RawBytes(ref))
	})
}
