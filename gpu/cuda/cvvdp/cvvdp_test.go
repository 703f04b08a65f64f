package cvvdp

import (
	"context"
	"errors"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Tolerances on a GPU. The kernels do cpu/cvvdp's float32 operations in
// its order (NVRTC with --fmad=false, IEEE division), its powers,
// logarithms and exponentials from its own tables in double, and its
// float64 sums in its order; the CPU emulation of these very kernels
// (TestEmulated) gives every band sum and every JOD bit-identical to it,
// and so should the device: the only device code that is not the
// emulated arithmetic is CUDA's double pow, exp2, log10 and ldexp on the
// fallback paths (non-normal or huge arguments, which finite images do
// not reach). So tolJOD allows two float32 ulps of a JOD near 10
// (2 × 9.5e-7: a sum one ulp off moves the float32 pooling by at most
// that) and the tests log how many scores are bit-identical; tolMap is
// the emulation's bound on the map (its last step is jod_loss/10 where
// the CPU writes 1 − (10 − loss)/10: see emulate_test.go). tolGolden is
// the project's bound against pycvvdp 0.5.4 (cpu/cvvdp's own tests hold
// it to 1e-4 on the same goldens).
const (
	tolJOD    = 2e-6
	tolMap    = emuTolMap
	tolGolden = 1e-4
)

func backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(cudatest.Device(t))
}

func scoreGPU(t testing.TB, b *cuda.Backend, ref, dist *zenmetrics.Image, opt zenmetrics.Options) zenmetrics.Score {
	t.Helper()
	s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.CVVDP, ref, dist, opt)
	if err != nil {
		t.Fatalf("cuda score: %v", err)
	}
	return s
}

// compare checks a CUDA score (with its map) against cpu/cvvdp's and
// returns |Δ| of the value and whether it is bit-identical.
func compare(t *testing.T, name string, s zenmetrics.Score, ref, dist *zenmetrics.Image, display string) (float64, bool) {
	t.Helper()
	r, err := cpucv.Prepare(ref, cpucv.Config{Display: display, DistMap: true})
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	defer r.Release()
	want, err := r.ScoreContext(context.Background(), dist)
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	d := math.Abs(s.Value - want.JOD)
	if !(d <= tolJOD) {
		t.Errorf("%s: JOD %.9f, cpu %.9f (|Δ| %.2g)", name, s.Value, want.JOD, d)
	}
	if s.DistMap == nil || s.DistMap.Width != ref.Width || s.DistMap.Height != ref.Height {
		t.Fatalf("%s: map missing or of the wrong size", name)
	}
	worst := 0.0
	for i, v := range s.DistMap.Pix {
		if dd := math.Abs(float64(v) - float64(want.DistMap.Pix[i])); !(dd <= worst) {
			worst = dd
			if math.IsNaN(dd) {
				worst = math.Inf(1)
			}
		}
	}
	if !(worst <= tolMap) {
		t.Errorf("%s: map values differ by up to %.3g", name, worst)
	}
	return d, math.Float64bits(s.Value) == math.Float64bits(want.JOD)
}

// Fresh seeded pairs in every pixel format (grey, alpha, 16-bit), odd and
// tiny sizes (2×2, rows and columns of two, levels that halve with
// remainders, several blocks each way), padded strides, the map; mixed
// pairs; other display models (PQ, HLG colour and grey, few bands); and
// images of several upload chunks.
func TestVsCPU(t *testing.T) {
	b := backend(t)
	sizes := [][2]int{{96, 80}, {37, 29}, {2, 2}, {100, 2}, {2, 100}, {7, 40}, {17, 8}, {15, 17}, {200, 131}, {517, 389}}
	worst, same, n := 0.0, 0, 0
	check := func(name string, ref, dist *zenmetrics.Image, display string) {
		d, eq := compare(t, name, scoreGPU(t, b, ref, dist, zenmetrics.Options{DistMap: true, Display: display}), ref, dist, display)
		worst, n = math.Max(worst, d), n+1
		if eq {
			same++
		}
	}
	cudatest.FormatGrid(sizes, padded, func(name string, ref, dist *zenmetrics.Image) { check(name, ref, dist, "") })
	for _, c := range []struct{ rf, df zenmetrics.PixelFormat }{{zenmetrics.RGB8, zenmetrics.RGBA8},
		{zenmetrics.RGBA8, zenmetrics.Gray8}, {zenmetrics.Gray16, zenmetrics.RGBA16}, {zenmetrics.GrayA8, zenmetrics.RGB16}} {
		ref, _ := metrictest.Synthetic(64, 64, 5, c.rf)
		_, dist := metrictest.Synthetic(64, 64, 5, c.df)
		check(c.rf.String()+"/"+c.df.String(), ref, dist, "")
	}
	for i, c := range []struct {
		disp string
		f    zenmetrics.PixelFormat
		w, h int
	}{
		{"standard_hdr_pq", zenmetrics.RGB16, 90, 70},
		{"standard_hdr_hlg", zenmetrics.RGB16, 90, 70},
		{"standard_hdr_hlg", zenmetrics.Gray8, 61, 47},
		{"standard_hdr_linear", zenmetrics.RGBA16, 80, 64},
		{"standard_hmd", zenmetrics.RGB8, 150, 110},
		{"standard_phone", zenmetrics.RGB8, 97, 33},
		{"iphone_14_pro_hdr", zenmetrics.RGB8, 64, 64},
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(30+i), c.f)
		check(c.disp+"_"+c.f.String(), ref, dist, c.disp)
	}
	cudatest.LargePairs(func(name string, ref, dist *zenmetrics.Image) { check(name, ref, dist, "") })
	t.Logf("%d pairs: worst |Δ| vs cpu/cvvdp %.3g; %d JODs bit-identical", n, worst, same)
}

// The shared suite: errors (pycvvdp needs 2×2: 1 is refused),
// determinism, concurrency, agreement with the CPU backend (tolJOD), and
// pycvvdp 0.5.4's scores on testdata/tiny, the reference vectors and the
// corpus (tolGolden).
func TestSuite(t *testing.T) {
	b := backend(t)
	ref := cpu.New(cpu.Config{})
	defer ref.Close()
	metrictest.Run(t, b, zenmetrics.CVVDP, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: tolGolden, Reference: tolJOD},
		Reference: ref,
		Tiny:      1,
	})
}

// A cached reference gives each distorted image (other formats too:
// alpha, 16-bit, grey) its one-shot score and map bit for bit, from
// several goroutines at once; identical images score exactly 10 with a
// map of zeros; Release makes Score fail cleanly and gives back every
// byte.
func TestCachedConcurrent(t *testing.T) {
	cudatest.CachedConcurrent(t, backend(t), cudatest.Cached{
		Metric: zenmetrics.CVVDP,
		Opt:    zenmetrics.Options{DistMap: true},
		Self: func(t *testing.T, r zenmetrics.Reference, ref *zenmetrics.Image) {
			s, err := r.Score(context.Background(), ref)
			if err != nil || s.Value != 10 {
				t.Errorf("identical images: %v %v, want 10", s.Value, err)
			}
			if err == nil {
				for i, v := range s.DistMap.Pix {
					if v != 0 {
						t.Fatalf("identical images: map[%d] = %v, want 0", i, v)
					}
				}
			}
		},
	})
}

// Errors: size mismatch, cancelled context, bad pixels, an unknown
// display, strip pairs (strips are taken), too small, and out of memory
// predicted before anything is allocated (beyond the kernels' indexing,
// and beyond the device's memory).
func TestErrors(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	ref, dist := metrictest.SyntheticPair(16, 16, 1)
	cudatest.ScoreErrors(t, b, zenmetrics.CVVDP, ref, dist, true)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Prepare(cctx, zenmetrics.CVVDP, ref, zenmetrics.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled prepare: %v", err)
	}
	if _, err := b.Prepare(ctx, zenmetrics.CVVDP, ref, zenmetrics.Options{Display: "nope"}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("unknown display: %v", err)
	}
	one, _ := metrictest.SyntheticPair(1, 16, 1)
	if _, err := b.Prepare(ctx, zenmetrics.CVVDP, one, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("1×16: %v", err)
	}
	cudatest.Modes(t, b, zenmetrics.CVVDP, ref, []zenmetrics.Mode{zenmetrics.ModeStripPair}, []zenmetrics.Mode{zenmetrics.ModeStrip, zenmetrics.ModeFull})
	// 27000² is past the kernels' int indexing (3·w·h floats of a level);
	// everything within it (about 92 bytes a pixel, 66 GB at most) fits
	// an H200, so the refusal for lack of memory is checked only where
	// the device is smaller than the 24000² image's estimate.
	for _, side := range []int{27000, 24000} {
		est, ok := b.Estimate(zenmetrics.CVVDP, side, side, zenmetrics.ModeFull)
		if side == 27000 && ok {
			t.Fatalf("Estimate(%d²) = %d bytes, ok", side, est)
		}
		f, _, err := b.Device().MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		if ok && uint64(est) <= f {
			t.Logf("%d²: %d bytes fit in %d free: no refusal to check on this device", side, est, f)
			continue
		}
		im := &zenmetrics.Image{Width: side, Height: side, Format: zenmetrics.Gray8, Stride: side, Pix: make([]byte, side*side)}
		before := b.Device().Held()
		if _, err := b.Prepare(ctx, zenmetrics.CVVDP, im, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
			t.Fatalf("Prepare(%d²): %v", side, err)
		}
		if after := b.Device().Held(); after != before {
			t.Errorf("a refused Prepare(%d²) holds %d bytes", side, after-before)
		}
	}
}

// The estimate predicts what a reference and its first scorer hold, with
// and without the map; Estimate is that for RGBA16 uploads on the default
// display.
func TestEstimateMatchesHeld(t *testing.T) {
	b := backend(t)
	for _, distMap := range []bool{false, true} {
		held := cudatest.EstimateMatchesHeld(t, b, zenmetrics.CVVDP, zenmetrics.Options{DistMap: distMap}, func(ref *zenmetrics.Image) int64 {
			p, _ := cpucv.NewPlan(ref.Width, ref.Height, "")
			return estimate(p, cuda.RawBytes(ref), distMap)
		})
		if e, _ := b.Estimate(zenmetrics.CVVDP, 1000, 700, zenmetrics.ModeFull); !distMap && e != held[zenmetrics.RGBA16] {
			t.Errorf("Estimate %d, held %d", e, held[zenmetrics.RGBA16])
		}
	}
}
