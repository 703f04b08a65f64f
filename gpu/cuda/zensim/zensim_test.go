package zensim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/cpu/zensim/zensimtest"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// Tolerances on a GPU. The kernels do cpu/zensim's float32 operations in
// its order (NVRTC with --fmad=false, fmaf exactly where it fuses, IEEE
// division) and its float64 sums in its order; the CPU emulation of
// these very kernels (TestEmulated) gives features and scores
// bit-identical to it. What can still differ on a device is the rare
// halfway tie where cpu/zensim's fused multiply-add, computed in float64
// and rounded again, and fmaf's single rounding disagree: about once in
// 2^29 operations, one ulp of one value, carried along its row by a
// running sum and, through the SSIM denominator (a variance plus C2,
// ~1e-3), up to ~1e-4 relative on that row's SSIM values, which a
// scale's mean dilutes by the row's share of the pixels (~1e-7 relative
// on a 256×256 feature). So each pair: features within 1e-5 relative
// (1e-3 floor, for features near 0), the score within 1e-6 (0..100).
// A slip that is smaller still (making one fused multiply-add of the
// SSIM formula unfused moves a score by only 2.5e-8) touches every pair,
// where a tie touches one: so a test also fails when more pairs are not
// bit-identical than ties explain (tieBound). The tolerance for
// GPU backends is 1e-3.
const (
	tolFeature = 1e-5
	tolScore   = 1e-6
)

// fmaPerPixel bounds the fused multiply-adds cpu/zensim does per pixel
// of scale 0: XYB at most 25 (the opsin mix 9, the scalar cube root 12,
// compositing 3, X 1), then per channel 6 in the horizontal and 5 in the
// vertical pass, over all scales: 25 + 3·11·4/3 = 69.
const fmaPerPixel = 70

// tieBound is how many pairs of px pixels in all may fail to be
// bit-identical: four times the expected number of halfway ties
// (px·fmaPerPixel/2^29), and at least 2.
func tieBound(px int64) int {
	return 2 + int(math.Ceil(4*float64(px)*fmaPerPixel/(1<<29)))
}

func backend(t testing.TB) *cuda.Backend {
	t.Helper()
	return cuda.NewBackendOn(cudatest.Device(t))
}

// cpuBackend adapts cpu/zensim to zenmetrics.Backend (what package cpu
// does for zensim; used directly so that these tests depend on the zensim
// CPU code only).
type cpuBackend struct{}

func (cpuBackend) Name() string { return "cpu/zensim" }
func (cpuBackend) Estimate(m zenmetrics.Metric, w, h int, _ zenmetrics.Mode) (int64, bool) {
	return cpuz.EstimateBytes(w, h), m == zenmetrics.Zensim
}
func (cpuBackend) Close() error { return nil }
func (cpuBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.Zensim {
		return nil, zenmetrics.ErrUnsupported
	}
	return cpuz.PrepareBackend(ctx, ref, opt, 0)
}

// stats gathers the comparisons of a test for its closing check.
type stats struct {
	mu                sync.Mutex
	pairs, feats, off int
	inexact           int   // pairs with a feature not bit-identical
	px                int64 // pixels compared
	worstF, worstS    float64
}

// check logs the totals and fails t when more pairs are inexact than
// halfway ties explain.
func (s *stats) check(t *testing.T) {
	t.Logf("%d pairs (%d pixels): %d of %d features not bit-identical, in %d pairs (worst relative %.3g); worst score |Δ| %.3g",
		s.pairs, s.px, s.off, s.feats, s.inexact, s.worstF, s.worstS)
	if s.inexact > tieBound(s.px) {
		t.Errorf("%d pairs are not bit-identical to cpu/zensim; halfway ties of its fused multiply-adds explain at most %d",
			s.inexact, tieBound(s.px))
	}
}

// compare scores ref/dist on the device (ScoreDetail) and with cpu/zensim
// and checks every feature and the score within the tolerances.
func compare(t *testing.T, b *cuda.Backend, st *stats, name string, ref, dist *zenmetrics.Image) {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer r.Release()
	got, err := r.(*reference).ScoreDetail(ctx, dist)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := cpuDetail(t, ref, dist)
	d, wf, ds, err := diffResults(name, got, want, tolFeature, tolScore)
	if err != nil {
		t.Error(err)
	}
	st.mu.Lock()
	st.pairs, st.feats, st.off = st.pairs+1, st.feats+len(want.Features), st.off+d
	st.px += int64(ref.Width) * int64(ref.Height)
	if d > 0 || ds > 0 {
		st.inexact++
	}
	st.worstF, st.worstS = math.Max(st.worstF, wf), math.Max(st.worstS, ds)
	st.mu.Unlock()
}

// TestVsCPU: fresh seeded pairs in every pixel format (the alpha
// background, 16-bit tables, grey), padded strides, the 8×8 minimum, odd
// sizes whose scales leave scalar tails and strips with remainders, a
// width past 512 (zensim's extra padded columns), mixed formats, and
// images of several upload chunks and XYB chunks: every feature and the
// score against cpu/zensim.
func TestVsCPU(t *testing.T) {
	b := backend(t)
	var st stats
	sizes := [][2]int{{8, 8}, {9, 13}, {37, 29}, {97, 70}, {171, 133}, {260, 70}, {500, 20}, {517, 389}, {1031, 77}}
	cudatest.FormatGrid(sizes, padded, func(name string, ref, dist *zenmetrics.Image) { compare(t, b, &st, name, ref, dist) })
	for _, c := range []struct{ rf, df zenmetrics.PixelFormat }{{zenmetrics.RGB8, zenmetrics.RGBA8},
		{zenmetrics.RGBA8, zenmetrics.RGB8}, {zenmetrics.Gray16, zenmetrics.RGBA16}, {zenmetrics.GrayA8, zenmetrics.RGB16}} {
		ref, _ := metrictest.Synthetic(64, 64, 5, c.rf)
		_, dist := metrictest.Synthetic(64, 64, 5, c.df)
		compare(t, b, &st, c.rf.String()+"/"+c.df.String(), ref, dist)
	}
	cudatest.LargePairs(func(name string, ref, dist *zenmetrics.Image) { compare(t, b, &st, name, ref, dist) })
	st.check(t)
}

// TestTiny: testdata/tiny (a 256×256 photo crop under JPEG q20 and JPEG
// XL d1), every feature and the score against cpu/zensim.
func TestTiny(t *testing.T) {
	b := backend(t)
	var st stats
	dir := filepath.Join("..", "..", "..", "testdata", "tiny")
	ref, err := imageio.DecodeFile(filepath.Join(dir, "astronaut_crop256__ref.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"astronaut_crop256__jpeg_q20.png", "astronaut_crop256__jxl_d1.png"} {
		dist, err := imageio.DecodeFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		compare(t, b, &st, f, ref, dist)
	}
	st.check(t)
}

// TestSuite runs the parts of the shared suite that apply to zensim (it
// has no reference-vector goldens; cpu/zensim is checked against zensim's
// published scores): the error contract, determinism (identical bits),
// concurrent scoring and the CPU reference on fresh synthetic and real
// images within tolScore.
func TestSuite(t *testing.T) {
	b := backend(t)
	cfg := metrictest.Config{Tol: metrictest.Tolerances{Reference: tolScore}, Reference: cpuBackend{}, MinSide: cpuz.MinSize}
	t.Run("Errors", func(t *testing.T) { metrictest.Errors(t, b, zenmetrics.Zensim, cfg) })
	t.Run("Determinism", func(t *testing.T) { metrictest.Determinism(t, b, zenmetrics.Zensim, cfg) })
	t.Run("Concurrent", func(t *testing.T) { metrictest.Concurrent(t, b, zenmetrics.Zensim, cfg) })
	t.Run("VsReference", func(t *testing.T) { metrictest.VsReference(t, b, zenmetrics.Zensim, cfg) })
}

// TestPublished scores zensim 0.2.7's cross-platform test pairs (its
// generators, cpu/zensim/zensimtest) and matches the scores that test
// publishes within its own tolerance, 1e-5 (cpu/zensim is within 3.6e-7
// of them), and the CPU within the tolerances above; each source against
// a copy of itself scores exactly 100.
func TestPublished(t *testing.T) {
	b := backend(t)
	var st stats
	const n = zensimtest.PublishedSize
	pairs := zensimtest.Pairs(n, n)
	for i, want := range zensimtest.Published {
		p := pairs[i]
		if p.Name != want.Name {
			t.Fatalf("pair %d is %s, want %s", i, p.Name, want.Name)
		}
		ref, dist := zensimtest.Image(p.Src, n, n), zensimtest.Image(p.Dist, n, n)
		compare(t, b, &st, p.Name, ref, dist)
		got, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, dist, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(got.Value - want.Score)
		t.Logf("%-26s cuda %.12f published %.12f |Δ| %.2e", p.Name, got.Value, want.Score, d)
		if !(d <= zensimtest.PublishedTolerance) {
			t.Errorf("%s: %.12f, published %.12f (|Δ| %.2e > %g)", p.Name, got.Value, want.Score, d, zensimtest.PublishedTolerance)
		}
		same, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.Zensim, ref, zensimtest.Image(p.Src, n, n), zenmetrics.Options{})
		if err != nil || same.Value != 100 {
			t.Errorf("%s: the source against a copy of itself: %v, %v; want exactly 100", p.Name, same.Value, err)
		}
	}
	st.check(t)
}

// TestCorpus scores every pair of the shared corpus (../shared/corpus,
// scores.tsv: photos under JPEG, AVIF, WebP, JPEG XL, blur and noise)
// against cpu/zensim, features and score. Under -short only every eighth
// pair. Skipped without the shared data (shared.Dir).
func TestCorpus(t *testing.T) {
	dir := shared.Dir(t, "corpus")
	tab, err := shared.ReadTSV(filepath.Join(dir, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) == 0 {
		t.Fatal("corpus scores.tsv has no rows")
	}
	b := backend(t)
	var st stats
	cache := map[string]*zenmetrics.Image{}
	load := func(rel string) *zenmetrics.Image {
		if im := cache[rel]; im != nil {
			return im
		}
		im, err := imageio.DecodeFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		cache[rel] = im
		return im
	}
	for i := range tab.Rows {
		if testing.Short() && i%8 != 0 {
			continue
		}
		compare(t, b, &st, filepath.Base(tab.Get(i, "dist")), load(tab.Get(i, "ref")), load(tab.Get(i, "dist")))
	}
	st.check(t)
}

// A cached reference gives each distorted image (other formats too:
// alpha, 16-bit, a padded stride) its one-shot score bit for bit, from
// several goroutines at once (more than the slots: some wait);
// identical images score exactly 100 and one changed byte does not;
// Release makes Score fail cleanly and gives back every byte.
func TestCachedConcurrent(t *testing.T) {
	dists := cudatest.SixFormats(333, 250)
	dists[4] = padded(dists[4])
	cudatest.CachedConcurrent(t, backend(t), cudatest.Cached{
		Metric: zenmetrics.Zensim,
		Dists:  dists,
		Same: func(s, want zenmetrics.Score) error {
			if s.Metric != zenmetrics.Zensim {
				return fmt.Errorf("scored as %v", s.Metric)
			}
			return cudatest.SameBits(s, want)
		},
		Self: func(t *testing.T, r zenmetrics.Reference, ref *zenmetrics.Image) {
			if s, err := r.Score(context.Background(), padded(ref)); err != nil || s.Value != 100 {
				t.Errorf("identical images: %v %v, want exactly 100", s.Value, err)
			}
			one := *ref
			one.Pix = append([]byte(nil), ref.Pix...)
			one.Pix[len(one.Pix)/2] ^= 0x10
			if s, err := r.Score(context.Background(), &one); err != nil || !(s.Value < 100) {
				t.Errorf("one changed byte: %v %v, want below 100", s.Value, err)
			}
		},
	})
}

// Errors: below the 8×8 minimum (whole images and strips), size
// mismatch, cancelled context, no pixels, strip pairs (CVVDP's layout;
// strips are strip_test.go's), and out of memory predicted before
// anything is allocated (beyond the kernels' indexing, and beyond the
// device's memory).
func TestErrors(t *testing.T) {
	b := backend(t)
	small, _ := metrictest.SyntheticPair(7, 40, 1)
	for _, opt := range []zenmetrics.Options{{}, {Mode: zenmetrics.ModeStrip}} {
		if _, err := b.Prepare(context.Background(), zenmetrics.Zensim, small, opt); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("7×40 (%v): %v", opt.Mode, err)
		}
	}
	ref, dist := metrictest.SyntheticPair(16, 16, 1)
	cudatest.ScoreErrors(t, b, zenmetrics.Zensim, ref, dist, true)
	cudatest.Modes(t, b, zenmetrics.Zensim, ref, []zenmetrics.Mode{zenmetrics.ModeStripPair}, []zenmetrics.Mode{zenmetrics.ModeStrip, zenmetrics.ModeFull})
	// 47000² is past the kernels' int indexing, 40000² (about 190 GB)
	// past any device's memory.
	cudatest.Refused(t, b, zenmetrics.Zensim, 47000, 40000)
}

// The estimate predicts what a reference and its first scorer hold.
func TestEstimateMatchesHeld(t *testing.T) {
	cudatest.EstimateMatchesHeld(t, backend(t), zenmetrics.Zensim, zenmetrics.Options{}, func(ref *zenmetrics.Image) int64 {
		return estimate(ref.Width, ref.Height, cuda.RawBytes(ref))
	})
}

// Importing the package registers zensim with package cuda (so that
// --backend cuda, the orchestrator's chooser and zmwarm's CUDA cells,
// which ask every backend's Estimate per metric, take it) as a metric
// that prepares strips (cuda.StripImpl: without the marker the backend
// refuses ModeStrip and the ladder skips the CUDA strip rung), and the
// estimate declines what Prepare refuses; strips are planned in a
// device's free memory, so without one (nil) they are declined. No GPU
// needed.
func TestRegistered(t *testing.T) {
	if !slices.Contains(cuda.Metrics(), zenmetrics.Zensim) {
		t.Fatal("zensim is not registered with package cuda")
	}
	var im impl
	if _, ok := cuda.MetricImpl(im).(cuda.StripImpl); !ok {
		t.Error("zensim does not prepare strips (cuda.StripImpl)")
	}
	if n, ok := im.Estimate(nil, 1024, 768, zenmetrics.ModeFull); !ok || n != estimate(1024, 768, worstRaw(1024, 768)) {
		t.Errorf("Estimate(1024×768) = %d, %v", n, ok)
	}
	for _, c := range []struct {
		w, h int
		m    zenmetrics.Mode
	}{{7, 100, zenmetrics.ModeFull}, {100, 7, zenmetrics.ModeFull}, {1024, 768, zenmetrics.ModeStrip}, {47000, 47000, zenmetrics.ModeFull}} {
		if _, ok := im.Estimate(nil, c.w, c.h, c.m); ok {
			t.Errorf("Estimate(%d×%d, %v) accepted", c.w, c.h, c.m)
		}
	}
}
