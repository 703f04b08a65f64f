package ssim2

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// backend adapts this package to zenmetrics.Backend so that the shared
// suite can run on it directly (package cpu does the same for users; it
// cannot be imported here without a cycle).
type backend struct {
	name string
	cfg  Config
}

func (b backend) Name() string { return b.name }
func (b backend) Estimate(m zenmetrics.Metric, w, h int, _ zenmetrics.Mode) (int64, bool) {
	return EstimateBytes(w, h), m == zenmetrics.SSIMULACRA2
}
func (b backend) Close() error { return nil }
func (b backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, _ zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.SSIMULACRA2 {
		return nil, zenmetrics.ErrUnsupported
	}
	r, err := PrepareContext(ctx, ref, b.cfg)
	if err != nil {
		return nil, err
	}
	return adapted{r}, nil
}

type adapted struct{ r *Reference }

func (a adapted) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	v, err := a.r.ScoreContext(ctx, dist)
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: v}, err
}
func (a adapted) Release() { a.r.Release() }

// TestSuite runs the shared backend suite: |Δ| ≤ 0.01 against libjxl
// v0.12.0's ssimulacra2 on every pair of testdata/tiny, the shared corpus
// and the reference vectors (plus each vector's own tolerance), and
// bit-identical scores between all cores and one goroutine.
//
// It runs on the reference path and, where it is available, on the fast
// path (cpusimd), each against libjxl.
func TestSuite(t *testing.T) {
	paths := []bool{false}
	if cpusimd.Enabled() {
		paths = append(paths, true)
	}
	for _, simd := range paths {
		name := "ref"
		if simd {
			name = "simd"
		}
		t.Run(name, func(t *testing.T) {
			defer setSIMD(simd)()
			all := backend{"ssim2", Config{}}
			one := backend{"ssim2-1thread", Config{Threads: 1}}
			if runtime.GOMAXPROCS(0) == 1 {
				all.cfg.Threads = 3 // still exercise the goroutine split
			}
			metrictest.Run(t, all, zenmetrics.SSIMULACRA2, metrictest.Config{
				Tol:       metrictest.Tolerances{Golden: 0.01, Reference: 0},
				Reference: one,
			})
		})
	}
}

func TestTooSmall(t *testing.T) {
	for _, s := range [][2]int{{7, 8}, {8, 7}, {1, 1}} {
		im := zenmetrics.NewImage(s[0], s[1], zenmetrics.RGB8)
		_, err := Prepare(im, Config{})
		var ts *zenmetrics.TooSmallError
		if !errors.As(err, &ts) || ts.MinWidth != 8 || ts.MinHeight != 8 || !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("%dx%d: err = %v, want *TooSmallError 8x8", s[0], s[1], err)
		}
	}
	if w, h := MinSize(); w != 8 || h != 8 {
		t.Errorf("MinSize = %d, %d", w, h)
	}
	im, dist := metrictest.SyntheticPair(8, 8, 1)
	if v, err := Score(im, dist, Config{}); err != nil || !(v <= 100) {
		t.Errorf("8x8: %v, %v", v, err)
	}
}

func TestIdentical(t *testing.T) {
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.GrayA16, zenmetrics.RGBA8} {
		ref, _ := metrictest.Synthetic(70, 50, 9, f)
		v, err := Score(ref, ref, Config{})
		if err != nil || v != 100 {
			t.Errorf("%v identical images: %v, %v; want exactly 100", f, v, err)
		}
	}
}

func TestScaleDims(t *testing.T) {
	// libjxl starts scale k+1 only while scale k is at least 8×8, so the
	// last scale may be below 8×8.
	cases := []struct {
		w, h, n int
	}{{8, 8, 2}, {14, 14, 2}, {15, 15, 3}, {16, 16, 3}, {32, 32, 4}, {256, 256, 6}, {1000, 9, 2}, {4096, 4096, 6}}
	for _, c := range cases {
		if got := len(scaleDims(c.w, c.h)); got != c.n {
			t.Errorf("%dx%d: %d scales, want %d", c.w, c.h, got, c.n)
		}
	}
}

func TestConstants(t *testing.T) {
	if blurSigma15.radius != 5 {
		t.Errorf("radius %d, want 5", blurSigma15.radius)
	}
	// The three filters' taps must sum to one (a unit DC gain): a constant
	// row far from the borders blurs to itself.
	in := make([]float32, 200)
	for i := range in {
		in[i] = 0.5
	}
	out := make([]float32, len(in))
	blurSigma15.blurRow(in, out)
	if d := math.Abs(float64(out[100]) - 0.5); d > 1e-5 {
		t.Errorf("DC gain: blur of 0.5 = %v", out[100])
	}
	// sRGB decoding: 0 → 0, 1 → 1, and close to the textbook curve.
	lut := linearLUT8()
	if lut[0] != 0 || math.Abs(float64(lut[255])-1) > 1e-6 {
		t.Errorf("lut ends: %v %v", lut[0], lut[255])
	}
	for i, v := range lut {
		x := float64(i) / 255
		want := x / 12.92
		if x > 0.04045 {
			want = math.Pow((x+0.055)/1.055, 2.4)
		}
		if math.Abs(float64(v)-want) > 2e-6 {
			t.Errorf("sRGB %d: %v, textbook %v", i, v, want)
		}
	}
	for _, x := range []float32{0, 1e-6, 0.0037930732552754493, 0.1, 0.5, 1, 3} {
		got := cubeRootAndAdd(x, 0)
		if d := math.Abs(float64(got) - math.Cbrt(float64(x))); d > 1e-6 {
			t.Errorf("cbrt(%v) = %v", x, got)
		}
	}
}

// naiveBlur is the recursive Gaussian written as libjxl's scalar code
// paths describe it, one float32 operation at a time with fma32, no float64
// shortcuts: the horizontal 4-output steps and the vertical recurrence.
func naiveBlur(g *gaussian, in []float32, w, h int) []float32 {
	tmp := make([]float32, w*h)
	N := g.radius
	for y := 0; y < h; y++ {
		row := in[y*w : (y+1)*w]
		out := tmp[y*w : (y+1)*w]
		var prev, prev2 [3]float32
		at := func(i int) float32 {
			if i < 0 || i >= w {
				return 0
			}
			return row[i]
		}
		n := -N + 1
		scalar := func(n int) {
			sum := at(n-N-1) + at(n+N-1)
			var o [3]float32
			for k := 0; k < 3; k++ {
				v := sum * g.mulIn[k][0]
				v = fma32(g.mulPrev2[k][0], prev2[k], v)
				v = fma32(g.mulPrev[k][0], prev[k], v)
				prev2[k], prev[k], o[k] = prev[k], v, v
			}
			if n >= 0 {
				out[n] = o[0] + (o[1] + o[2])
			}
		}
		for ; n < min(8, w); n++ {
			scalar(n)
		}
		for ; n < w-N+1-3; n += 4 {
			var s [4]float32
			for j := range s {
				s[j] = at(n+j-N-1) + at(n+j+N-1)
			}
			var o [3][4]float32
			for k := 0; k < 3; k++ {
				for j := 0; j < 4; j++ {
					v := s[0] * g.mulIn[k][j]
					for i := 1; i <= j; i++ {
						v = fma32(g.mulIn[k][j-i], s[i], v)
					}
					v = fma32(g.mulPrev2[k][j], prev2[k], v)
					v = fma32(g.mulPrev[k][j], prev[k], v)
					o[k][j] = v
				}
				prev2[k], prev[k] = o[k][2], o[k][3]
			}
			for j := 0; j < 4; j++ {
				out[n+j] = o[0][j] + (o[1][j] + o[2][j])
			}
		}
		for ; n < w; n++ {
			scalar(n)
		}
	}
	res := make([]float32, w*h)
	for x := 0; x < w; x++ {
		var y1, y2 [3]float32
		for n := -N + 1; n < h; n++ {
			var sum float32
			if t := n - N - 1; t >= 0 {
				sum = tmp[t*w+x]
			}
			if b := n + N - 1; b < h {
				sum += tmp[b*w+x]
			}
			var o [3]float32
			for k := 0; k < 3; k++ {
				v := fma32(g.n2[k], sum, -fma32(g.d1[k], y1[k], y2[k]))
				y2[k], y1[k], o[k] = y1[k], v, v
			}
			if n >= 0 {
				res[n*w+x] = o[0] + (o[1] + o[2])
			}
		}
	}
	return res
}

// TestBlurMatchesNaive checks the optimised blur bit for bit against the
// one-operation-at-a-time formulation, at sizes that hit every code path
// (shorter than the border loops, exactly one 4-step, long rows, more
// columns than one block).
func TestBlurMatchesNaive(t *testing.T) {
	for _, s := range [][2]int{{4, 4}, {8, 8}, {9, 11}, {16, 16}, {17, 30}, {70, 9}, {131, 67}} {
		w, h := s[0], s[1]
		ref, _ := metrictest.SyntheticPair(w, h, int64(w*h))
		r, err := Prepare(ref, Config{Threads: 2})
		if w < 8 || h < 8 {
			// Below the metric's minimum: test the blur alone on raw data.
			r = &Reference{w: w, h: h, threads: 2}
			err = nil
		}
		if err != nil {
			t.Fatal(err)
		}
		in := make([]float32, w*h)
		for i := range in {
			in[i] = float32(ref.Pix[3*i]) / 255
		}
		sc := newScratch(w, h, 2, false)
		got := make([]float32, w*h)
		r.blur(got, in, nil, w, h, sc)
		want := naiveBlur(blurSigma15, in, w, h)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%dx%d: pixel %d: %v, naive %v", w, h, i, got[i], want[i])
			}
		}
	}
}

func TestThreadsBitIdentical(t *testing.T) {
	ref, dist := metrictest.SyntheticPair(301, 257, 3)
	var first float64
	for i, n := range []int{1, 2, 3, 7, 16} {
		v, err := Score(ref, dist, Config{Threads: n})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = v
		} else if math.Float64bits(v) != math.Float64bits(first) {
			t.Errorf("threads=%d: %v, threads=1: %v", n, v, first)
		}
	}
}

func TestCancel(t *testing.T) {
	ref, dist := metrictest.SyntheticPair(64, 64, 3)
	r, err := Prepare(ref, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.ScoreContext(ctx, dist); !errors.Is(err, context.Canceled) {
		t.Errorf("ScoreContext: %v", err)
	}
	if _, err := PrepareContext(ctx, ref, Config{}); !errors.Is(err, context.Canceled) {
		t.Errorf("PrepareContext: %v", err)
	}
}
