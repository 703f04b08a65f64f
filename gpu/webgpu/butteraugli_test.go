package webgpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
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

func bfScoreGPU(t *testing.T, dev *Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options) zenmetrics.Score {
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
	dev := device(t)
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
	dev := device(t)
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
	dev := device(t)
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
