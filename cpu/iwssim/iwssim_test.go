package iwssim

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
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

// TestFlat: a flat image's bands are zero in exact arithmetic; computed,
// they are rounding noise whose pattern depends on the arithmetic's order.
// They are treated as the zeros they are (isFlatBand), as piq's exact
// arithmetic would have them, on every architecture:
//   - a flat reference has no information content of its own (its model is
//     exactly zero), so against a textured image the weights come from the
//     distorted image's 3×3 variance alone and the score is low;
//   - a textured reference against a flat image is scored from the
//     reference's model (the distorted bands are noise, vv = 0);
//   - two flat images (any levels, gray or colour, 8 or 16 bits) give zero
//     weights at every weighted scale: piq divides 0 by 0 (NaN; with bands
//     of exact zeros, as for black, its torch.inverse of the zero matrix
//     raises), so they are refused with ErrBadInput, naming scale 0.
func TestFlat(t *testing.T) {
	// fill makes a flat image of format f: channel c of every pixel is
	// v+c (a colour for RGB; 16-bit samples are (v+c)·257).
	fill := func(f zenmetrics.PixelFormat, v byte) *zenmetrics.Image {
		im := zenmetrics.NewImage(200, 190, f)
		ch, bps := f.Channels(), f.BytesPerSample()
		for i := 0; i < len(im.Pix); i += bps {
			s := v + byte(i/bps%ch)
			for b := 0; b < bps; b++ {
				im.Pix[i+b] = s
			}
		}
		return im
	}
	grey, dark, black := fill(zenmetrics.Gray8, 128), fill(zenmetrics.Gray8, 90), fill(zenmetrics.Gray8, 0)
	white := fill(zenmetrics.Gray8, 255)
	_, tex := metrictest.Synthetic(200, 190, 5, zenmetrics.Gray8)

	r, err := Prepare(grey, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < numScales-1; k++ {
		s := &r.scales[k]
		for i, l := range s.lamScaled {
			if l != 0 {
				t.Fatalf("flat reference, scale %d: λ[%d] = %g, want exactly 0", k, i, l)
			}
		}
		for _, v := range s.ss {
			if v != 0 {
				t.Fatalf("flat reference, scale %d: ss = %g, want exactly 0", k, v)
			}
		}
	}
	r.Release()

	if v, err := Score(grey, tex, Config{}); err != nil || !(v > 0 && v < 0.5) {
		t.Errorf("flat reference, textured image: %v, %v; want a score in (0, 0.5)", v, err)
	}
	if v, err := Score(tex, grey, Config{}); err != nil || !(v > 0 && v < 0.5) {
		t.Errorf("textured reference, flat image: %v, %v; want a score in (0, 0.5)", v, err)
	}
	pairs := [][2]*zenmetrics.Image{
		{grey, grey}, {grey, dark}, {dark, grey}, {black, black}, {white, white}, {black, white},
		{fill(zenmetrics.RGB8, 40), fill(zenmetrics.RGB8, 40)},
		{fill(zenmetrics.Gray16, 200), fill(zenmetrics.Gray16, 7)},
		{fill(zenmetrics.RGBA16, 33), fill(zenmetrics.RGBA16, 33)},
	}
	for _, p := range pairs {
		v, err := Score(p[0], p[1], Config{})
		if !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "scale 0") {
			t.Errorf("flat %v %d against flat %v %d: %v, %v; want ErrBadInput at scale 0",
				p[0].Format, p[0].Pix[0], p[1].Format, p[1].Pix[0], v, err)
		}
	}
}

// ramp is a horizontal 8-bit gradient: its bands vary along x only (and
// only near the left and right edges, where the reflected padding bends
// it), so every 3×3 neighbourhood has three equal rows and the
// neighbourhood covariance has rank 4 (3 with no parent): six of its ten
// eigenvalues are zero in exact arithmetic.
func ramp(w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.Gray8)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			im.Pix[y*im.Stride+x] = byte(x * 255 / (w - 1))
		}
	}
	return im
}

// TestRankDeficient: the ramp's zero eigenvalues come out of the
// decomposition as ±1e-17 or so, in a pattern that depends on the order of
// gonum's sums (amd64 assembly or Go). Kept as positive they would enter
// the pseudo-inverse as 1/noise: with relTol = 0 the ramp against a
// textured image scores 0.124427 with gonum's assembly and 0.124443 with
// its Go kernels (-tags noasm), 1.6e-5 apart. Here they must be exactly
// zero, the rank must be 4 below the last two weighted scales and 3 at
// scale 3.
func TestRankDeficient(t *testing.T) {
	r, err := Prepare(ramp(200, 190), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	for k := 0; k < numScales-1; k++ {
		want := 4
		if k == numScales-2 {
			want = 3
		}
		rank := 0
		for _, l := range r.scales[k].lamScaled {
			if l != 0 {
				rank++
			}
		}
		if rank != want {
			t.Errorf("scale %d: %d non-zero eigenvalues %v, want %d", k, rank, r.scales[k].lamScaled, want)
		}
	}
}

// TestRoundingInsensitive moves every entry of every neighbourhood
// covariance by up to 8 ulps (a random relative change of at most 8ε, far
// more than reordering its sums or gonum's kernels do) and demands the same
// outcome: the same error class, or a score within 1e-12. That is what
// makes scores agree across architectures to the goldens' 1e-13. Cases:
// the ramp (rank-deficient) against itself, a one-pixel change and a
// textured image, both ways, and flat images. With relTol = 0 this fails:
// the one-pixel change moves by 1.5e-7 and the ramp against the textured
// image turns NaN (ss overflows) for some perturbations.
func TestRoundingInsensitive(t *testing.T) {
	rp := ramp(200, 190)
	rp2 := ramp(200, 190)
	rp2.Pix[100*rp2.Stride+100] += 3
	_, tex := metrictest.Synthetic(200, 190, 5, zenmetrics.Gray8)
	grey := zenmetrics.NewImage(200, 190, zenmetrics.Gray8)
	for i := range grey.Pix {
		grey.Pix[i] = 128
	}
	pairs := [][2]*zenmetrics.Image{{rp, rp}, {rp, rp2}, {rp2, rp}, {rp, tex}, {tex, rp}, {grey, tex}, {tex, grey}, {grey, grey}}
	type result struct {
		v   float64
		err error
	}
	run := func() []result {
		var out []result
		for _, p := range pairs {
			v, err := Score(p[0], p[1], Config{Threads: 2})
			out = append(out, result{v, err})
		}
		return out
	}
	want := run()
	defer func() { perturbCovariance = nil }()
	for seed := int64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewSource(seed))
		perturbCovariance = func(cm *mat.SymDense) {
			n := cm.SymmetricDim()
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					cm.SetSym(i, j, cm.At(i, j)*(1+8*eps*(2*rng.Float64()-1)))
				}
			}
		}
		for i, got := range run() {
			w := want[i]
			if (got.err == nil) != (w.err == nil) || got.err != nil && !errors.Is(got.err, zenmetrics.ErrBadInput) {
				t.Errorf("seed %d, pair %d: %v, %v; unperturbed %v, %v", seed, i, got.v, got.err, w.v, w.err)
				continue
			}
			// 1e-12: the perturbation changes the kept eigenvalues and
			// vectors by ~8ε relative, which moves a score by a few 1e-16
			// through the logarithms; 1e-12 leaves room and stays far
			// below the 1e-5 that a noise eigenvalue kept would cause.
			if d := math.Abs(got.v - w.v); !(d <= 1e-12) {
				t.Errorf("seed %d, pair %d: %.17g, unperturbed %.17g (|Δ| %.3g > 1e-12)", seed, i, got.v, w.v, d)
			}
		}
	}
}

// TestModelMargins measures how far the references the goldens and the
// tiny corpus use are from the two rounding thresholds: their smallest
// kept eigenvalue relative to the largest, against relTol, and their
// largest band sample relative to 255·2^k, against flatTol. Both must be
// at least 10⁶ times the threshold (measured: 4.6e-4 and 0.077, 3·10⁷ and
// 8·10⁷ times), so the thresholds change nothing for images with content.
func TestModelMargins(t *testing.T) {
	var refs []*zenmetrics.Image
	for _, c := range goldenCases {
		r, _ := c.Pair()
		refs = append(refs, r)
	}
	dir := shared.Testdata(t, "tiny")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "__ref.png") {
			refs = append(refs, decode(t, dir, e.Name()))
		}
	}
	minRatio, minBand := math.Inf(1), math.Inf(1)
	for _, im := range refs {
		r, err := Prepare(im, Config{})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < numScales-1; k++ {
			s := &r.scales[k]
			var band, top float64
			for _, v := range s.y {
				band = max(band, math.Abs(v))
			}
			minBand = min(minBand, band/(dataRange*float64(int(1)<<k)))
			for _, l := range s.lamScaled {
				top = max(top, l)
			}
			for _, l := range s.lamScaled {
				minRatio = min(minRatio, l/top)
			}
		}
		r.Release()
	}
	t.Logf("%d references: smallest λ/λmax %.3g (relTol %.3g), smallest max|band|/(255·2^k) %.3g (flatTol %.3g)",
		len(refs), minRatio, relTol, minBand, flatTol)
	if !(minRatio >= 1e6*relTol) || !(minBand >= 1e6*flatTol) {
		t.Errorf("a reference with content is within 10⁶ of a rounding threshold")
	}
}
