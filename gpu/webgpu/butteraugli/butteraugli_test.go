package butteraugli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	zmshared "github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// Tolerances. The kernels follow the CPU reference's float32 operation
// order, but where the reference uses double (Malta half-open terms, mask
// curves, alpha blending) they stay in f32, the GPU's transcendental and
// division roundings are not the CPU's, and the compiler may fuse multiply-
// adds; the p-norm sums are f32 trees instead of double rows. Each of these
// moves a value by a few ulps; through the square-root combination the
// maximum and the norms move by well under 1e-5 relative (measured below).
// The contract is 1e-3 relative, libjxl's own butteraugli test tolerance.
const (
	bfTolCPU = 1e-3 // vs cpu/butteraugli: max, 3-norm, p-norm
	bfTolMap = 1e-3 // vs the CPU distance map, per pixel, relative to the map's max
)

func bfScoreGPU(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options) zenmetrics.Score {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer r.Release()
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return s
}

func bfScoreCPU(t *testing.T, ref, dist *zenmetrics.Image, opt zenmetrics.Options) butteraugli.Result {
	t.Helper()
	res, err := butteraugli.Compare(ref, dist, butteraugli.Config{IntensityTarget: opt.IntensityTarget,
		PNorm: opt.PNorm, DistMap: opt.DistMap})
	if err != nil {
		t.Fatalf("cpu: %v", err)
	}
	return res
}

func rel(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// bfCompare checks a GPU score against the CPU result and returns the
// relative differences of max and 3-norm.
func bfCompare(t *testing.T, name string, s zenmetrics.Score, c butteraugli.Result, opt zenmetrics.Options) (float64, float64) {
	t.Helper()
	eMax := rel(s.Value, c.Max)
	eNorm := rel(s.Extras["pnorm3"], c.PNorm3)
	if eMax > bfTolCPU || eNorm > bfTolCPU {
		t.Errorf("%s: max %.8f cpu %.8f (rel %.2g); 3-norm %.8f cpu %.8f (rel %.2g)",
			name, s.Value, c.Max, eMax, s.Extras["pnorm3"], c.PNorm3, eNorm)
	}
	if opt.PNorm > 0 {
		if e := rel(s.Extras["pnorm"], c.PNorm); e > bfTolCPU {
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
		if worst > bfTolMap*c.Max {
			t.Errorf("%s: distance map differs by %.3g (max %.4g)", name, worst, c.Max)
		}
	}
	return eMax, eNorm
}

func TestButteraugliSynthetic(t *testing.T) {
	dev := gputest.Device(t)
	for _, sz := range [][2]int{{64, 48}, {37, 29}, {15, 17}, {8, 8}, {200, 131}} {
		ref, dist := metrictest.SyntheticPair(sz[0], sz[1], 11)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2}
		s := bfScoreGPU(t, dev, ref, dist, opt)
		c := bfScoreCPU(t, ref, dist, opt)
		eMax, eNorm := bfCompare(t, fmt.Sprintf("%dx%d", sz[0], sz[1]), s, c, opt)
		t.Logf("%dx%d: max %.6f (cpu %.6f, rel %.2g) 3-norm %.6f (cpu %.6f, rel %.2g)",
			sz[0], sz[1], s.Value, c.Max, eMax, s.Extras["pnorm3"], c.PNorm3, eNorm)
	}
}

func TestButteraugliTiny(t *testing.T) {
	dev := gputest.Device(t)
	dir := zmshared.Testdata(t, "tiny")
	tab, err := zmshared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var worstCPU, worstJXL [2]float64
	for i := range tab.Rows {
		ref, err := imageio.DecodeFile(filepath.Join(dir, tab.Get(i, "ref")))
		if err != nil {
			t.Fatal(err)
		}
		dist, err := imageio.DecodeFile(filepath.Join(dir, tab.Get(i, "dist")))
		if err != nil {
			t.Fatal(err)
		}
		opt := zenmetrics.Options{}
		s := bfScoreGPU(t, dev, ref, dist, opt)
		c := bfScoreCPU(t, ref, dist, opt)
		eMax, eNorm := bfCompare(t, tab.Get(i, "dist"), s, c, opt)
		worstCPU[0], worstCPU[1] = math.Max(worstCPU[0], eMax), math.Max(worstCPU[1], eNorm)
		wantMax, _ := tab.Float(i, "butteraugli_max")
		wantNorm, _ := tab.Float(i, "butteraugli_3norm")
		jMax, jNorm := rel(s.Value, wantMax), rel(s.Extras["pnorm3"], wantNorm)
		// libjxl prints the 3-norm with 6 decimals: allow that rounding.
		cMax, cNorm := rel(c.Max, wantMax), rel(c.PNorm3, wantNorm)
		if jMax > math.Max(bfTolCPU, 2*cMax) || jNorm > math.Max(bfTolCPU, 2*cNorm) {
			t.Errorf("%s vs libjxl: max %.8f want %.8f (rel %.2g); 3-norm %.6f want %.6f (rel %.2g)",
				tab.Get(i, "dist"), s.Value, wantMax, jMax, s.Extras["pnorm3"], wantNorm, jNorm)
		}
		worstJXL[0], worstJXL[1] = math.Max(worstJXL[0], jMax), math.Max(worstJXL[1], jNorm)
		t.Logf("%-36s gpu %.6f / %.6f  cpu %.6f / %.6f  libjxl %.6f / %.6f", tab.Get(i, "dist"),
			s.Value, s.Extras["pnorm3"], c.Max, c.PNorm3, wantMax, wantNorm)
	}
	t.Logf("worst rel vs CPU: max %.2g, 3-norm %.2g; vs libjxl: max %.2g, 3-norm %.2g",
		worstCPU[0], worstCPU[1], worstJXL[0], worstJXL[1])
}

func TestButteraugliSizeMismatch(t *testing.T) {
	dev := gputest.Device(t)
	ref, _ := metrictest.SyntheticPair(32, 32, 1)
	_, dist := metrictest.SyntheticPair(32, 31, 1)
	r, err := prepareButteraugli(context.Background(), dev, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	_, err = r.Score(context.Background(), dist)
	var se *zenmetrics.SizeMismatchError
	if !errors.As(err, &se) || !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Fatalf("got %v, want a SizeMismatchError", err)
	}
}

// Every pixel format (gray, alpha: two backgrounds, 16-bit), a non-default
// intensity target and p-norm, fresh seeded photo-like images.
func TestButteraugliFormats(t *testing.T) {
	dev := gputest.Device(t)
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA8, zenmetrics.Gray8, zenmetrics.GrayA8,
		zenmetrics.RGB16, zenmetrics.RGBA16, zenmetrics.Gray16, zenmetrics.GrayA16}
	for i, f := range formats {
		ref, dist := metrictest.Synthetic(96, 80, int64(100+i), f)
		opt := zenmetrics.Options{DistMap: true, PNorm: 1.5 + float64(i)}
		if i%2 == 1 {
			opt.IntensityTarget = 250
		}
		s := bfScoreGPU(t, dev, ref, dist, opt)
		c := bfScoreCPU(t, ref, dist, opt)
		eMax, eNorm := bfCompare(t, f.String(), s, c, opt)
		t.Logf("%-8v max %.6f 3-norm %.6f %.1f-norm %.6f (rel vs cpu %.2g %.2g %.2g)", f, s.Value, s.Extras["pnorm3"],
			opt.PNorm, s.Extras["pnorm"], eMax, eNorm, rel(s.Extras["pnorm"], c.PNorm))
	}
	// Mixed: an opaque reference against a distorted image with alpha and
	// the other way round (the CPU reference blends only the image that has
	// alpha and compares it with both backgrounds).
	refA, distA := metrictest.Synthetic(64, 64, 5, zenmetrics.RGBA8)
	refO, distO := metrictest.Synthetic(64, 64, 5, zenmetrics.RGB8)
	for _, p := range [][2]*zenmetrics.Image{{refO, distA}, {refA, distO}} {
		s := bfScoreGPU(t, dev, p[0], p[1], zenmetrics.Options{})
		c := bfScoreCPU(t, p[0], p[1], zenmetrics.Options{})
		bfCompare(t, p[0].Format.String()+"/"+p[1].Format.String(), s, c, zenmetrics.Options{})
	}
}

// A photo-like pair at a size with several workgroups in each direction and
// odd dimensions (odd half-resolution edges).
func TestButteraugliMedium(t *testing.T) {
	if testing.Short() {
		t.Skip("medium size skipped with -short")
	}
	dev := gputest.Device(t)
	ref, dist := metrictest.SyntheticPair(517, 389, 23)
	opt := zenmetrics.Options{DistMap: true}
	s := bfScoreGPU(t, dev, ref, dist, opt)
	c := bfScoreCPU(t, ref, dist, opt)
	eMax, eNorm := bfCompare(t, "517x389", s, c, opt)
	t.Logf("517x389: max %.6f 3-norm %.6f (rel vs cpu %.2g %.2g)", s.Value, s.Extras["pnorm3"], eMax, eNorm)
}

// Scores are bit-identical run to run, and a cached reference scoring
// several images in any order gives exactly what a fresh one-shot
// comparison gives.
func TestButteraugliDeterministicCached(t *testing.T) {
	dev := gputest.Device(t)
	ref, d1 := metrictest.SyntheticPair(120, 90, 3)
	_, d2 := metrictest.SyntheticPair(120, 90, 4)
	_, d3 := metrictest.Synthetic(120, 90, 5, zenmetrics.RGBA16) // other format and alpha: two backgrounds
	opt := zenmetrics.Options{DistMap: true, PNorm: 6}
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	dists := []*zenmetrics.Image{d1, d2, d3, d1, d3, d2, ref}
	first := map[*zenmetrics.Image]zenmetrics.Score{}
	for i, d := range dists {
		s, err := r.Score(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := first[d]; ok {
			bfSame(t, fmt.Sprintf("repeat %d", i), p, s)
			continue
		}
		first[d] = s
		bfSame(t, fmt.Sprintf("one-shot %d", i), bfScoreGPU(t, dev, ref, d, opt), s)
	}
	if s := first[ref]; s.Value != 0 || s.Extras["pnorm3"] != 0 {
		t.Errorf("identical images: max %g 3-norm %g, want 0", s.Value, s.Extras["pnorm3"])
	}
}

func bfSame(t *testing.T, name string, a, b zenmetrics.Score) {
	t.Helper()
	if a.Value != b.Value || a.Extras["pnorm3"] != b.Extras["pnorm3"] || a.Extras["pnorm"] != b.Extras["pnorm"] {
		t.Errorf("%s: %v %v vs %v %v", name, a.Value, a.Extras, b.Value, b.Extras)
	}
	if (a.DistMap == nil) != (b.DistMap == nil) {
		t.Fatalf("%s: distance map present in one only", name)
	}
	if a.DistMap != nil {
		for i := range a.DistMap.Pix {
			if math.Float32bits(a.DistMap.Pix[i]) != math.Float32bits(b.DistMap.Pix[i]) {
				t.Fatalf("%s: distance maps differ at %d: %v vs %v", name, i, a.DistMap.Pix[i], b.DistMap.Pix[i])
			}
		}
	}
}

func TestButteraugliErrors(t *testing.T) {
	dev := gputest.Device(t)
	ref, dist := metrictest.SyntheticPair(16, 16, 1)
	for _, opt := range []zenmetrics.Options{{IntensityTarget: math.NaN()}, {PNorm: -1}, {PNorm: math.Inf(1)}} {
		if _, err := prepareButteraugli(context.Background(), dev, ref, opt); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("options %+v: got %v, want ErrBadInput", opt, err)
		}
	}
	if _, err := prepareButteraugli(context.Background(), dev, &zenmetrics.Image{}, zenmetrics.Options{}); err == nil {
		t.Error("empty reference accepted")
	}
	r, err := prepareButteraugli(context.Background(), dev, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Release()
	if _, err := r.Score(context.Background(), dist); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("after Release: %v", err)
	}
	// Below 8 pixels libjxl's map is all zeros.
	small, smallD := metrictest.SyntheticPair(7, 30, 1)
	s := bfScoreGPU(t, dev, small, smallD, zenmetrics.Options{DistMap: true})
	if s.Value != 0 || s.Extras["pnorm3"] != 0 || len(s.DistMap.Pix) != 7*30 {
		t.Errorf("7x30: %v %v", s.Value, s.Extras)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := prepareButteraugli(ctx, dev, ref, zenmetrics.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestButteraugliBench reports warm per-image timings (cached reference)
// at 1 MP, or at ZENMETRICS_BENCH_SIZE (e.g. 4096x4096), over
// ZENMETRICS_BENCH_RUNS runs.
func TestButteraugliBench(t *testing.T) {
	if testing.Short() {
		t.Skip("timing skipped with -short")
	}
	dev := gputest.Device(t)
	w, h := 1024, 1024
	if dev.Info().Type.String() == "CPU" {
		// On lavapipe this test checks that Bench runs (the same kernels
		// at any size); 6 MP of Butteraugli cost ~70 s of a loaded CI run
		// for timings nobody reads there (zmbench measures speed).
		w, h = 256, 256
	}
	if s := os.Getenv("ZENMETRICS_BENCH_SIZE"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &w, &h); err != nil {
			t.Fatalf("ZENMETRICS_BENCH_SIZE=%q: %v", s, err)
		}
	}
	ref, dist := metrictest.SyntheticPair(w, h, 42)
	warm, runs := 0, 1
	if dev.Info().Type.String() != "CPU" {
		warm, runs = 3, 30
	}
	if s := os.Getenv("ZENMETRICS_BENCH_RUNS"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &runs); err != nil {
			t.Fatalf("ZENMETRICS_BENCH_RUNS=%q: %v", s, err)
		}
	}
	res, err := Bench(context.Background(), dev, ref, dist, zenmetrics.Options{}, warm, runs, os.Getenv("ZENMETRICS_BF_PROFILE") != "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Max <= 0 {
		t.Fatalf("no distance measured: %+v", res)
	}
	t.Logf("%s on %s", res, dev.Name())
	if res.PassMS != nil {
		t.Logf("per kernel (ms): %v", res.PassMS)
	}
}

// TestButteraugliLarge compares with the CPU reference at
// ZENMETRICS_BIG_SIZE (e.g. 4096x4096: planes of 64 MiB, the largest that
// fit lavapipe's 128 MiB binding limit twice over); skipped when unset.
func TestButteraugliLarge(t *testing.T) {
	size := os.Getenv("ZENMETRICS_BIG_SIZE")
	if size == "" {
		t.Skip("set ZENMETRICS_BIG_SIZE=WxH")
	}
	var w, h int
	if _, err := fmt.Sscanf(size, "%dx%d", &w, &h); err != nil {
		t.Fatalf("ZENMETRICS_BIG_SIZE=%q: %v", size, err)
	}
	dev := gputest.Device(t)
	ref, dist := metrictest.SyntheticPair(w, h, 77)
	opt := zenmetrics.Options{DistMap: true}
	s := bfScoreGPU(t, dev, ref, dist, opt)
	c := bfScoreCPU(t, ref, dist, opt)
	eMax, eNorm := bfCompare(t, size, s, c, opt)
	t.Logf("%s: max %.6f 3-norm %.6f (rel vs cpu %.2g %.2g)", size, s.Value, s.Extras["pnorm3"], eMax, eNorm)
}
