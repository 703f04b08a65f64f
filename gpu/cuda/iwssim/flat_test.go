package iwssim

import (
	"context"
	"errors"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestFlat (GPU) is TestEmulatedFlat on a device, with more cases:
// flat references (gray and colour, 8 and 16 bits), a rank-deficient
// ramp, against textured and flat images. Pairs the CPU scores must
// score within tolCPU (0 on amd64: the row sums are the CPU's to the
// bit, the flat model's exact zeros included); pairs the CPU refuses
// (both images flat at some scale) must be refused with its error,
// errors.Is ErrBadInput and the same message, and a cached reference
// must still score a textured image after such a refusal.
func TestFlat(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	tol := tolCPU()
	type pair struct {
		name      string
		ref, dist *zenmetrics.Image
	}
	var pairs []pair
	for _, sz := range [][2]int{{161, 161}, {200, 170}, {517, 389}} {
		w, h := sz[0], sz[1]
		_, tex := metrictest.Synthetic(w, h, 5, zenmetrics.Gray8)
		_, texRGB := metrictest.Synthetic(w, h, 6, zenmetrics.RGB16)
		grey := flatImage(w, h, zenmetrics.Gray8, 128)
		rgb := flatImage(w, h, zenmetrics.RGB8, 128)
		black := flatImage(w, h, zenmetrics.RGBA16, 0)
		white := flatImage(w, h, zenmetrics.Gray16, 255)
		rp := ramp(w, h)
		pairs = append(pairs,
			pair{"grey/grey", grey, grey}, pair{"grey/textured", grey, tex}, pair{"textured/grey", tex, grey},
			pair{"rgb/textured16", rgb, texRGB}, pair{"textured16/rgb", texRGB, rgb},
			pair{"rgb/darker", rgb, flatImage(w, h, zenmetrics.RGB8, 90)},
			pair{"black/black", black, black}, pair{"white/black", white, black},
			pair{"ramp/textured", rp, tex}, pair{"textured/ramp", tex, rp}, pair{"ramp/ramp", rp, rp},
			pair{"ramp/grey", rp, grey})
	}
	scored, refused := 0, 0
	for _, p := range pairs {
		name := p.name + "_" + p.ref.Format.String()
		want, cerr := cpuiw.Score(p.ref, p.dist, cpuiw.Config{})
		got, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.IWSSIM, p.ref, p.dist, zenmetrics.Options{})
		if cerr != nil {
			refused++
			if !errors.Is(err, zenmetrics.ErrBadInput) || err.Error() != cerr.Error() {
				t.Errorf("%s %dx%d: cuda %v, %v; want the CPU's error %v", name, p.ref.Width, p.ref.Height, got.Value, err, cerr)
			}
			continue
		}
		scored++
		if err != nil {
			t.Errorf("%s %dx%d: %v (cpu %.17g)", name, p.ref.Width, p.ref.Height, err, want)
			continue
		}
		if d := math.Abs(got.Value - want); !(d <= tol) {
			t.Errorf("%s %dx%d: cuda %.17g, cpu %.17g (|Δ| %.3g > %g)", name, p.ref.Width, p.ref.Height, got.Value, want, d, tol)
		}
	}
	t.Logf("%d pairs scored as the CPU scores them, %d refused as it refuses them", scored, refused)
	if scored == 0 || refused == 0 {
		t.Errorf("%d scored, %d refused: the cases no longer cover both outcomes", scored, refused)
	}
	// A cached flat reference: refused against itself, then scored.
	grey := flatImage(200, 170, zenmetrics.Gray8, 128)
	_, tex := metrictest.Synthetic(200, 170, 5, zenmetrics.Gray8)
	r, err := b.Prepare(ctx, zenmetrics.IWSSIM, grey, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if _, err := r.Score(ctx, grey); !errors.Is(err, zenmetrics.ErrBadInput) || err.Error() != cpuiw.ZeroWeightsError(0).Error() {
		t.Errorf("cached flat reference against itself: %v; want %v", err, cpuiw.ZeroWeightsError(0))
	}
	want, err := cpuiw.Score(grey, tex, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Score(ctx, tex); err != nil || !(math.Abs(got.Value-want) <= tol) {
		t.Errorf("cached flat reference against a textured image after a refusal: %v, %v; cpu %.17g", got.Value, err, want)
	}
}

// TestModelFlatness checks model's reading of the cov kernel's output
// without a device: each block row's last value is its band rows' largest
// |y|, and a scale is flat exactly when no row's exceeds
// cpuiw.FlatBandLimit(k) (the CPU's isFlatBand: |v| > limit is not
// flat), which zeroes its model; a NaN maximum (a row never written) is
// an error, not a flat band. The sums are an identity covariance, whose
// model is non-zero unless the scale is flat.
func TestModelFlatness(t *testing.T) {
	// The cov kernel's thread np writes the maximum: a block has one.
	if n := components(0); covThreads < n*(n+1)/2+1 {
		t.Fatalf("cov blocks of %d threads have no spare thread for the band maximum", covThreads)
	}
	gm := newGeometry(161, 170)
	off, total := covOffsets(gm)
	build := func(top func(k, i int) float64) []float64 {
		cov := make([]float64, total)
		for k := 0; k < nScales-1; k++ {
			n, rl := components(k), covRowLen(k)
			for i := 0; i < gm.s[k].h-2; i++ {
				row := cov[off[k]+i*rl : off[k]+(i+1)*rl]
				p := 0
				for a := 0; a < n; a++ {
					row[p] = 1 // the diagonal entry (a, a)
					p += n - a
				}
				row[rl-1] = top(k, i)
			}
		}
		return cov
	}
	// Scale k's rows all at the limit but one row (k == 1: the last,
	// k == 2: the first) just above it; scales 0 and 3 exactly at it.
	cov := build(func(k, i int) float64 {
		lim := cpuiw.FlatBandLimit(k)
		switch {
		case k == 1 && i == gm.s[k].h-3, k == 2 && i == 0:
			return math.Nextafter(lim, 1)
		case i%2 == 0:
			return lim
		}
		return 0
	})
	var rp refPlanes
	m, err := model(gm, cov, &rp)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < nScales-1; k++ {
		wantFlat := k == 0 || k == 3
		nonzero := 0
		for _, v := range m[maxLam*k : maxLam*k+components(k)] {
			if v != 0 {
				nonzero++
			}
		}
		if rp.flat[k] != wantFlat || (nonzero == 0) != wantFlat {
			t.Errorf("scale %d: flat %v with %d non-zero eigenvalues; want flat %v", k, rp.flat[k], nonzero, wantFlat)
		}
	}
	cov = build(func(k, i int) float64 {
		if k == 2 && i == 3 {
			return math.NaN()
		}
		return 0
	})
	if _, err := model(gm, cov, &refPlanes{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("a NaN band maximum: %v, want ErrBadInput", err)
	}
}
