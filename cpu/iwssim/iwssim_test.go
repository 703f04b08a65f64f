package iwssim

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// backend adapts this package to zenmetrics.Backend so that the shared
// suite runs on it directly (package cpu does the same for users; it
// cannot be imported here without a cycle).
type backend struct {
	name    string
	threads int
}

func (b backend) Name() string { return b.name }
func (b backend) Estimate(m zenmetrics.Metric, w, h int, _ zenmetrics.Mode) (int64, bool) {
	return EstimateBytes(w, h), m == zenmetrics.IWSSIM && w >= minSide && h >= minSide
}
func (b backend) Close() error { return nil }
func (b backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.IWSSIM {
		return nil, zenmetrics.ErrUnsupported
	}
	return PrepareBackend(ctx, ref, opt, b.threads)
}

// TestSuite runs the shared backend suite: testdata/tiny, the 77 pairs of
// the shared corpus and the two reference vectors (in piq's call order)
// within 1e-6 absolute of piq 0.8.0 in float64 (the CPU tolerance;
// measured: 5e-11, the rounding of the 10-decimal reference scores), the
// published MATLAB values within their own 1e-5, and bit-identical scores
// between all cores and one goroutine.
func TestSuite(t *testing.T) {
	all := backend{"iwssim", 0}
	if runtime.GOMAXPROCS(0) == 1 {
		all.threads = 3 // still exercise the goroutine split
	}
	metrictest.Run(t, all, zenmetrics.IWSSIM, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: 1e-6, Reference: 0},
		Reference: backend{"iwssim-1thread", 1},
		Tiny:      minSide - 1,
		MinSide:   minSide,
	})
}

// TestMinSize checks piq's limit: 161 on both sides is scored, 160 on
// either is refused with ErrBadInput (a *TooSmallError).
func TestMinSize(t *testing.T) {
	if w, h := MinSize(); w != 161 || h != 161 {
		t.Fatalf("MinSize = %d×%d, want 161×161 ((11−1)·2⁴ + 1)", w, h)
	}
	ref, dist := metrictest.Synthetic(161, 161, 3, zenmetrics.Gray8)
	v, err := Score(ref, dist, Config{Threads: 1})
	if err != nil || !(v > 0 && v < 1) {
		t.Errorf("161×161: %v, %v; want a score in (0, 1)", v, err)
	}
	for _, s := range [][2]int{{160, 161}, {161, 160}} {
		r, d := metrictest.SyntheticPair(s[0], s[1], 4)
		_, err := Score(r, d, Config{})
		var ts *zenmetrics.TooSmallError
		if !errors.Is(err, zenmetrics.ErrBadInput) || !errors.As(err, &ts) || ts.MinWidth != 161 {
			t.Errorf("%d×%d: err = %v, want a TooSmallError (ErrBadInput) naming 161", s[0], s[1], err)
		}
	}
	if EstimateBytes(160, 400) != 0 || EstimateBytes(161, 161) <= 0 {
		t.Error("EstimateBytes does not follow the minimum size")
	}
}

// TestIdentical: an image against itself scores 1 (every cs term is
// exactly 1 when x = y, and the weights cancel), up to the rounding of
// the Gaussian sums: within 1e-12.
func TestIdentical(t *testing.T) {
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.Gray16, zenmetrics.RGBA8} {
		ref, _ := metrictest.Synthetic(200, 170, 9, f)
		v, err := Score(ref, ref, Config{})
		if err != nil || math.Abs(v-1) > 1e-12 {
			t.Errorf("%v: identical images scored %.17g, %v; want 1 ± 1e-12", f, v, err)
		}
	}
}

// TestThreads: scores are bit-identical for 1, 2, 3 and 7 goroutines on an
// odd size whose row counts do not divide into the chunks evenly.
func TestThreads(t *testing.T) {
	ref, dist := metrictest.SyntheticPair(333, 271, 17)
	var want float64
	for i, th := range []int{1, 2, 3, 7} {
		v, err := Score(ref, dist, Config{Threads: th})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			want = v
		} else if math.Float64bits(v) != math.Float64bits(want) {
			t.Errorf("threads=%d: %.17g, threads=1: %.17g", th, v, want)
		}
	}
}

// TestFlat: flat images have (next to) no information content; what piq
// does there depends on the rounding of its pyramid (a singular covariance,
// 0/0). Here: a flat reference against a textured image is scored (the
// weights then come from the distorted image's 3×3 variance, and the score
// is low); two flat grey images are scored near 1 (the cs terms are all ≈ 1
// whatever the weights; only the last scale's luminance term differs);
// two black images, whose bands are exactly zero so that every weight is
// zero (piq: 0/0 = NaN), are refused with ErrBadInput.
func TestFlat(t *testing.T) {
	fill := func(v byte) *zenmetrics.Image {
		im := zenmetrics.NewImage(200, 200, zenmetrics.Gray8)
		for i := range im.Pix {
			im.Pix[i] = v
		}
		return im
	}
	grey, dark, black := fill(128), fill(90), fill(0)
	_, dist := metrictest.Synthetic(200, 200, 5, zenmetrics.Gray8)
	if v, err := Score(grey, dist, Config{}); err != nil || !(v > 0 && v < 0.5) {
		t.Errorf("flat reference, textured image: %v, %v; want a score in (0, 0.5)", v, err)
	}
	if v, err := Score(grey, grey, Config{}); err != nil || math.Abs(v-1) > 1e-12 {
		t.Errorf("flat grey against itself: %v, %v; want 1 ± 1e-12", v, err)
	}
	if v, err := Score(grey, dark, Config{}); err != nil || !(v > 0.95 && v < 1) {
		t.Errorf("two flat greys: %v, %v; want a score in (0.95, 1)", v, err)
	}
	if v, err := Score(black, black, Config{}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("two black images: %v, %v; want ErrBadInput", v, err)
	}
}
