package ssim2

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// The fast path (cpusimd) against the reference path of this package. The
// kernels themselves are checked bit for bit against their Go twins and
// exact-arithmetic oracles in package cpusimd; these tests measure how far
// the fast path's results are from the reference code's, whose fused
// multiply-adds are emulated in float64 (two roundings) where the kernels
// round once. The Go twins (what runs with -tags noasm or on other
// architectures when forced, and what these tests use when the assembly is
// not available) give the very same bits as the assembly.

// setSIMD switches the path used by References prepared from now on and
// returns the function that restores it.
func setSIMD(on bool) func() {
	old := useSIMD
	useSIMD = on
	return func() { useSIMD = old }
}

// TestSIMDSelection: the fast path is on exactly when cpusimd says so
// (assembly built and supported, ZENMETRICS_NOSIMD unset).
func TestSIMDSelection(t *testing.T) {
	if useSIMD != cpusimd.Enabled() {
		t.Fatalf("useSIMD = %v, cpusimd.Enabled() = %v", useSIMD, cpusimd.Enabled())
	}
	if os.Getenv("ZENMETRICS_NOSIMD") != "" && useSIMD {
		t.Fatal("ZENMETRICS_NOSIMD is set but the fast path is on")
	}
	t.Logf("fast path: %v (assembly available: %v)", useSIMD, cpusimd.HasAsm())
}

// ulps is the distance between two float32 values in units in the last
// place (both finite, same sign or zero).
func ulps(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if a < 0 {
		ia = -(ia &^ (1 << 31))
	}
	if b < 0 {
		ib = -(ib &^ (1 << 31))
	}
	d := ia - ib
	if d < 0 {
		d = -d
	}
	return d
}

// TestSIMDBlurVsReference blurs random planes of every width 1..40 and
// heights 1..12 (below, at and above the radius 5), plus photo-sized ones,
// through both paths (plain and product blurs, as the metric uses them),
// with guard bands around the output, and bounds the difference.
//
// Tolerance: 8 ulps. The paths differ only where the reference's float64
// emulation of a fused multiply-add double-rounds (the float64 sum lands
// exactly on a float32 midpoint, about once in 2^29 random operations);
// each such event moves one filter state by one ulp, which then decays
// through the recursion. Measured on this suite: no pixel differs (0 of
// 583,298; logged below).
func TestSIMDBlurVsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	type size struct{ w, h int }
	var sizes []size
	for w := 1; w <= 40; w++ {
		sizes = append(sizes, size{w, 1 + rng.IntN(12)})
	}
	for h := 1; h <= 12; h++ {
		sizes = append(sizes, size{17 + rng.IntN(50), h})
	}
	sizes = append(sizes, size{129, 131}, size{517, 389}, size{1024, 64})
	var maxUlps, diffs, total int64
	for _, s := range sizes {
		w, h := s.w, s.h
		a := make([]float32, w*h)
		b := make([]float32, w*h)
		for i := range a {
			a[i] = float32(rng.Float64()*0.9 + 0.05)
			b[i] = a[i] + float32(rng.NormFloat64()*0.03)
		}
		for _, mul := range []bool{false, true} {
			var bb []float32
			if mul {
				bb = b
			}
			var got [2][]float32
			for i, simd := range []bool{false, true} {
				for _, threads := range []int{1, 3} {
					r := &Reference{w: w, h: h, threads: threads}
					sc := newScratch(w, h, threads, simd)
					const guard = 16
					buf := make([]float32, w*h+2*guard)
					for j := range buf {
						buf[j] = -7
					}
					dst := buf[guard : guard+w*h]
					r.blur(dst, a, bb, w, h, sc)
					for j := 0; j < guard; j++ {
						if buf[j] != -7 || buf[guard+w*h+j] != -7 {
							t.Fatalf("%dx%d simd=%v: write outside the output", w, h, simd)
						}
					}
					if got[i] != nil {
						for j := range dst {
							if math.Float32bits(dst[j]) != math.Float32bits(got[i][j]) {
								t.Fatalf("%dx%d simd=%v: threads change pixel %d", w, h, simd, j)
							}
						}
					}
					got[i] = dst
				}
			}
			for j := range got[0] {
				total++
				if u := ulps(got[0][j], got[1][j]); u > 0 {
					diffs++
					maxUlps = max(maxUlps, u)
				}
			}
		}
	}
	t.Logf("blur: %d of %d pixels differ from the reference path, by at most %d ulp", diffs, total, maxUlps)
	if maxUlps > 8 {
		t.Errorf("blur differs from the reference path by %d ulps (tolerance 8)", maxUlps)
	}
}

// TestSIMDXYBVsReference converts random linear pixels (including zeros,
// negative opsin mixes and values above 1) of every row width 1..40 and
// some wide rows with both paths.
//
// Tolerance: 2 ulps of each output. The cube root's Newton steps are fused
// multiply-adds, so the same rare double rounding can move an
// intermediate by one ulp. Measured: no value differs (0 of 317,160).
func TestSIMDXYBVsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	var maxUlps, diffs, total int64
	sample := func() float32 {
		switch rng.IntN(10) {
		case 0:
			return 0
		case 1:
			return -float32(rng.Float64() * 0.01)
		case 2:
			return 1 + float32(rng.Float64())
		}
		return float32(rng.Float64())
	}
	for _, w := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 40, 1000, 4099} {
		for rep := 0; rep < 20; rep++ {
			var in, ref, fast [3][]float32
			for c := 0; c < 3; c++ {
				in[c], ref[c], fast[c] = make([]float32, w), make([]float32, w), make([]float32, w)
				for i := range in[c] {
					in[c][i] = sample()
				}
			}
			xybRow(false, in[0], in[1], in[2], ref[0], ref[1], ref[2])
			xybRow(true, in[0], in[1], in[2], fast[0], fast[1], fast[2])
			for c := 0; c < 3; c++ {
				for i := 0; i < w; i++ {
					total++
					if u := ulps(ref[c][i], fast[c][i]); u > 0 {
						diffs++
						maxUlps = max(maxUlps, u)
					}
				}
			}
		}
	}
	t.Logf("XYB: %d of %d values differ from the reference path, by at most %d ulp", diffs, total, maxUlps)
	if maxUlps > 2 {
		t.Errorf("XYB differs from the reference path by %d ulps (tolerance 2)", maxUlps)
	}
}

// TestSIMDTermsVsReference: the error terms' float32 part is the same
// arithmetic on both paths (no fused operations), only the order of the
// float64 sums differs (four partial sums). Tolerance: 1e-12 relative
// (about 1e-16 per addition, over at most a few thousand pixels).
func TestSIMDTermsVsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	var worst float64
	for w := 1; w <= 70; w++ {
		rows := make([][]float32, 7)
		for i := range rows {
			rows[i] = make([]float32, w)
		}
		img1, mu1, vr1, img2, mu2, s22, s12 := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5], rows[6]
		for x := 0; x < w; x++ {
			img1[x] = float32(rng.Float64())
			mu1[x] = img1[x] + float32(rng.NormFloat64()*0.05)
			vr1[x] = float32(rng.Float64() * 0.01)
			img2[x] = img1[x] + float32(rng.NormFloat64()*0.05)
			mu2[x] = mu1[x] + float32(rng.NormFloat64()*0.02)
			s22[x] = mu2[x]*mu2[x] + float32(rng.Float64()*0.01)
			s12[x] = mu1[x]*mu2[x] + float32(rng.NormFloat64()*0.005)
		}
		want := make([]float64, 6)
		got := make([]float64, 6)
		rowTerms(want, img1, mu1, vr1, img2, mu2, s22, s12)
		simdTerms.Row(got, img1, mu1, vr1, img2, mu2, s22, s12)
		for i := range want {
			d := math.Abs(got[i]-want[i]) / max(math.Abs(want[i]), 1e-300)
			worst = max(worst, d)
			if d > 1e-12 {
				t.Fatalf("w=%d term %d: %v, reference %v", w, i, got[i], want[i])
			}
		}
	}
	t.Logf("error terms: max relative difference %.3g", worst)
}

// TestSIMDScoresVsReference scores the golden cases (every pixel format,
// odd sizes, every scale count) and a few larger synthetic pairs with both
// paths.
//
// Tolerance: 1e-6 in score. libjxl's own ssimulacra2 is matched to about
// 5e-9 by both paths (TestSuite), and the paths differ only by the rare
// last-bit roundings above and the order of the float64 sums of a row.
// Measured: all 28 scorings bit-identical on both paths.
func TestSIMDScoresVsReference(t *testing.T) {
	type pair struct {
		name      string
		ref, dist *zenmetrics.Image
	}
	var pairs []pair
	for _, c := range goldenCases {
		ref, dist := c.Pair()
		pairs = append(pairs, pair{fmt.Sprintf("%dx%d %v", c.W, c.H, c.F), ref, dist})
	}
	for i, s := range [][2]int{{1024, 768}, {999, 1001}, {1500, 260}} {
		ref, dist := metrictest.SyntheticPair(s[0], s[1], int64(100+i))
		pairs = append(pairs, pair{fmt.Sprintf("%dx%d", s[0], s[1]), ref, dist})
	}
	var worst float64
	same, count := 0, 0
	for _, p := range pairs {
		for _, threads := range []int{1, 2} {
			var v [2]float64
			for i, simd := range []bool{false, true} {
				restore := setSIMD(simd)
				s, err := Score(p.ref, p.dist, Config{Threads: threads})
				restore()
				if err != nil {
					t.Fatal(err)
				}
				v[i] = s
			}
			d := math.Abs(v[1] - v[0])
			count++
			if d == 0 {
				same++
			}
			worst = max(worst, d)
			if d > 1e-6 {
				t.Errorf("%s threads=%d: fast path %.10f, reference path %.10f", p.name, threads, v[1], v[0])
			}
		}
	}
	t.Logf("scores: max |Δ| fast vs reference path %.3g over %d scorings (%d bit-identical)", worst, count, same)
}

// TestSIMDFusedBitIdentical: the streamed distorted side and the
// plane-by-plane fast path run the same kernels on the same values, so
// their scores must be equal bit for bit, on one goroutine and on two, at sizes that hit the
// partial last group of eight rows, widths that are not multiples of 8,
// heights below and around the blur radius at the small scales, and
// images with alpha (two backgrounds).
func TestSIMDFusedBitIdentical(t *testing.T) {
	if !useSIMD {
		t.Skip("fast path not available")
	}
	sizes := [][2]int{{8, 8}, {9, 13}, {15, 9}, {17, 31}, {37, 23}, {64, 64}, {100, 131}, {203, 157}, {333, 211}}
	for i, s := range sizes {
		for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16} {
			ref, dist := metrictest.Synthetic(s[0], s[1], int64(40+i), f)
			var v [3]float64
			for j, c := range []struct {
				fuse    bool
				threads int
			}{{false, 1}, {true, 1}, {true, 2}} {
				fuseSIMD = c.fuse
				sv, err := Score(ref, dist, Config{Threads: c.threads})
				fuseSIMD = true
				if err != nil {
					t.Fatal(err)
				}
				v[j] = sv
			}
			if math.Float64bits(v[0]) != math.Float64bits(v[1]) || math.Float64bits(v[0]) != math.Float64bits(v[2]) {
				t.Errorf("%dx%d %v: streamed %.17g (2 goroutines %.17g), plane by plane %.17g", s[0], s[1], f, v[1], v[2], v[0])
			}
		}
	}
}

// pathBackend is the package as a zenmetrics.Backend on one path: its
// Prepare switches useSIMD while it prepares (the References keep their
// path). For sequential use only.
type pathBackend struct {
	backend
	simd bool
}

func (b pathBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	defer setSIMD(b.simd)()
	return b.backend.Prepare(ctx, m, ref, o)
}

// TestSIMDVsReferencePath runs the shared suite's comparison of the fast
// path with the reference path on its fresh cases (every pixel format,
// awkward sizes, mixed alpha, padded strides) and on testdata/tiny and its
// odd crops, on one goroutine and on three.
//
// Tolerance: 1e-6, as TestSIMDScoresVsReference. Measured: logged by the
// suite (max |Δ| 0 as of this writing).
func TestSIMDVsReferencePath(t *testing.T) {
	if !useSIMD {
		t.Skip("fast path not available")
	}
	for _, threads := range []int{1, 3} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			fast := pathBackend{backend{"ssim2-simd", Config{Threads: threads}}, true}
			ref := pathBackend{backend{"ssim2-ref", Config{Threads: threads}}, false}
			metrictest.VsReference(t, fast, zenmetrics.SSIMULACRA2, metrictest.Config{
				Tol:       metrictest.Tolerances{Reference: 1e-6},
				Reference: ref,
			})
		})
	}
}

// TestFusedStatsBitIdentical: the reference's streamed statistics
// (fusedStats: mu and blur(img²) − mu² row by row) equal the plane-by-plane
// blurs' planes bit for bit at every scale, on one goroutine, on two and on
// four (which takes the plane-by-plane path again), for every channel.
func TestFusedStatsBitIdentical(t *testing.T) {
	if !useSIMD {
		t.Skip("fast path not available")
	}
	sizes := [][2]int{{8, 8}, {9, 13}, {15, 9}, {17, 31}, {37, 23}, {100, 131}, {203, 157}}
	for i, s := range sizes {
		ref, _ := metrictest.Synthetic(s[0], s[1], int64(70+i), zenmetrics.RGB8)
		prep := func(fuse bool, threads int) *Reference {
			fuseSIMD = fuse
			defer func() { fuseSIMD = true }()
			r, err := Prepare(ref, Config{Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		want := prep(false, 1)
		for _, threads := range []int{1, 2, 4} {
			got := prep(true, threads)
			for k := range want.views[0].pyr {
				a, b := &want.views[0].pyr[k], &got.views[0].pyr[k]
				for c := 0; c < 3; c++ {
					for name, p := range map[string][2][]float32{"img": {a.img[c], b.img[c]}, "mu": {a.mu[c], b.mu[c]}, "vr": {a.vr[c], b.vr[c]}} {
						for j := range p[0] {
							if math.Float32bits(p[0][j]) != math.Float32bits(p[1][j]) {
								t.Fatalf("%dx%d threads %d scale %d channel %d %s[%d]: streamed %v, plane by plane %v",
									s[0], s[1], threads, k, c, name, j, p[1][j], p[0][j])
							}
						}
					}
				}
			}
		}
	}
}
