package ssim2

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// stripTol is the strip scores' allowance against the whole image's: the
// GPU strips' contract. strip.go argues (and this file checks) that with
// the vertical states carried every value is the full image's bit for bit
// and the sums are added in the same order, so the measured difference is
// expected to be 0; the allowance only keeps the contract's number.
const stripTol = 1e-6

// stripScore scores ref/dist in strips of band rows.
func stripScore(t *testing.T, ref, dist *zenmetrics.Image, band, threads int) float64 {
	t.Helper()
	r, err := PrepareStrips(ref, Config{Threads: threads}, band)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	v, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// paths is the reference path, and the fast path where it exists.
func paths() []bool {
	if useSIMD {
		return []bool{false, true}
	}
	return []bool{false}
}

// TestStripGeometry: the constants follow from the blur's radius and the
// scale count (strip.go), and every scale's crop holds the rows the
// vertical pass reads for its interior.
func TestStripGeometry(t *testing.T) {
	if blurSigma15.radius != stripRadius || simdBlur.Radius() != stripRadius {
		t.Fatalf("blur radius %d / %d, strips assume %d", blurSigma15.radius, simdBlur.Radius(), stripRadius)
	}
	if stripAlign != 32 || stripHaloAbove != 192 || stripHaloBelow != 128 {
		t.Fatalf("align %d, halo %d/%d", stripAlign, stripHaloAbove, stripHaloBelow)
	}
	for _, h := range []int{8, 300, 1001, 4097} {
		dims := scaleDims(500, h)
		for _, band := range []int{32, 64, 96, 416} {
			for y0 := 0; y0 < h; y0 += band {
				g := stripAt(h, band, y0)
				for k, d := range dims {
					c0, c1 := rowsAt(g.c0, g.c1, h, d[1], k)
					i0, i1 := rowsAt(g.y0, g.y1, h, d[1], k)
					if first := i0 - stripRadius - 1; i0 > 0 && first >= 0 && first < c0 {
						t.Fatalf("h=%d band=%d y0=%d scale %d: interior from %d reads row %d, crop from %d", h, band, y0, k, i0, i0-stripRadius-1, c0)
					}
					if last := i1 - 1 + stripRadius - 1; last < d[1] && last >= c1 {
						t.Fatalf("h=%d band=%d y0=%d scale %d: interior to %d reads row %d, crop to %d", h, band, y0, k, i1, last, c1)
					}
				}
			}
		}
	}
}

// TestStripsEqualFullSynthetic compares strip scores with whole-image
// scores on both paths: odd sizes, every pixel format (gray, alpha on
// either side, 16 bits), bands of one alignment unit (many strips, halos
// larger than the band), bands that end a strip mid-way through the image
// with a short last strip, and a band covering the image (one strip).
func TestStripsEqualFullSynthetic(t *testing.T) {
	cases := []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{203, 997, zenmetrics.RGB8},
		{129, 611, zenmetrics.RGBA8},
		{77, 530, zenmetrics.Gray8},
		{64, 700, zenmetrics.GrayA16},
		{300, 401, zenmetrics.RGB16},
		{20, 333, zenmetrics.RGB8}, // three scales only
		{9, 40, zenmetrics.RGB8},   // two scales, one strip at most 2
	}
	if testing.Short() {
		cases = cases[:3]
	}
	var worst float64
	n, same := 0, 0
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.f)
		if c.f == zenmetrics.RGBA8 {
			// Only the distorted image with alpha: one view on 0.5.
			r3, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), zenmetrics.RGB8)
			ref = r3
		}
		for _, simd := range paths() {
			restore := setSIMD(simd)
			full, err := Score(ref, dist, Config{Threads: 2})
			if err != nil {
				restore()
				t.Fatal(err)
			}
			for _, band := range []int{32, 96, 160, (c.h + 31) &^ 31} {
				for _, threads := range []int{1, 3} {
					got := stripScore(t, ref, dist, band, threads)
					d := math.Abs(got - full)
					worst = max(worst, d)
					n++
					if d == 0 {
						same++
					}
					if !(d <= stripTol) {
						t.Errorf("%dx%d %v simd=%v band=%d threads=%d: strips %.12f, full %.12f", c.w, c.h, c.f, simd, band, threads, got, full)
					}
				}
			}
			restore()
		}
	}
	t.Logf("synthetic: max |strips − full| = %.3g over %d scorings (%d bit-identical)", worst, n, same)
}

// TestStripsEqualFullCorpus: strips against whole-image scores on the
// shared corpus photos (512² RGB and 500² RGBA with real transparency on
// both sides), one distortion each, bands of 96 and 224 rows (6 and 3
// strips), both paths; -short takes three of the photos.
func TestStripsEqualFullCorpus(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "images")
	names, _ := filepath.Glob(filepath.Join(dir, "*__ref.png"))
	if len(names) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no corpus under %s", dir)
		}
		t.Skipf("no corpus under %s", dir)
	}
	sort.Strings(names)
	if testing.Short() {
		names = names[len(names)-3:] // the last is the one with alpha
	}
	var worst float64
	n, same := 0, 0
	for _, refName := range names {
		stem := strings.TrimSuffix(refName, "__ref.png")
		dists, _ := filepath.Glob(stem + "__*.png")
		dists = slices.DeleteFunc(dists, func(s string) bool { return strings.HasSuffix(s, "__ref.png") })
		sort.Strings(dists)
		dists = dists[:min(1, len(dists))]
		ref, err := imageio.DecodeFile(refName)
		if err != nil {
			t.Fatal(err)
		}
		for _, dn := range dists {
			dist, err := imageio.DecodeFile(dn)
			if err != nil {
				t.Fatal(err)
			}
			for _, simd := range paths() {
				restore := setSIMD(simd)
				full, err := Score(ref, dist, Config{})
				if err != nil {
					restore()
					t.Fatal(err)
				}
				for _, band := range []int{96, 224} {
					got := stripScore(t, ref, dist, band, 0)
					d := math.Abs(got - full)
					worst = max(worst, d)
					n++
					if d == 0 {
						same++
					}
					if !(d <= stripTol) {
						t.Errorf("%s simd=%v band=%d: strips %.12f, full %.12f", filepath.Base(dn), simd, band, got, full)
					}
				}
				restore()
			}
		}
	}
	t.Logf("corpus: max |strips − full| = %.3g over %d scorings (%d bit-identical)", worst, n, same)
}

// TestStripBytes checks StripBytes against what PrepareStrips and one
// Score allocate (runtime.MemStats.TotalAlloc, on GOMAXPROCS threads as
// StripBytes assumes): it must not be below it (it guards the memory
// budget), and not more than 5 % plus StripBytes' 128 KiB allowance for
// small allocations and its allowance for the parallel loops' garbage
// (stripGarbage, counted for two views, which only a reference with alpha
// has, and from a per-call cost that narrow planes, run on fewer
// goroutines, do not reach) above it. Alpha on both sides (two views)
// checks that the scratch is reused, not allocated twice.
func TestStripBytes(t *testing.T) {
	for _, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
	}{
		{700, 1500, 64, zenmetrics.RGB8},
		{1001, 999, 320, zenmetrics.RGBA8},
		{333, 2000, 32, zenmetrics.Gray16},
	} {
		for _, simd := range paths() {
			restore := setSIMD(simd)
			ref, dist := metrictest.Synthetic(c.w, c.h, 9, c.f)
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			r, err := PrepareStrips(ref, Config{}, c.band)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Score(context.Background(), dist); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&m1)
			r.Release()
			got := int64(m1.TotalAlloc - m0.TotalAlloc)
			est := StripBytes(c.w, c.h, c.band)
			restore()
			name := fmt.Sprintf("%dx%d %v band %d simd=%v", c.w, c.h, c.f, c.band, simd)
			t.Logf("%s: allocated %d bytes, StripBytes %d (%+.2f %%); full EstimateBytes %d", name, got, est,
				100*float64(est-got)/float64(got), EstimateBytes(c.w, c.h))
			l := newStripLayout(c.w, c.h, c.band, runtime.GOMAXPROCS(0), simd)
			if est < got || float64(est) > 1.05*float64(got)+float64(stripFixedBytes+2*l.stripGarbage(c.h)) {
				t.Errorf("%s: StripBytes %d, allocated %d", name, est, got)
			}
		}
	}
}

// TestStripBand: the band is a multiple of 32, fits the budget and is the
// largest that does; below the least strip working set it is 0; a strip's
// working set is well below the whole image's for a tall image.
func TestStripBand(t *testing.T) {
	w, h := 20000, 20000
	budget := int64(1 << 30)
	b := StripBand(w, h, budget)
	if b < stripAlign || b%stripAlign != 0 || StripBytes(w, h, b) > budget {
		t.Fatalf("StripBand = %d: bytes %d (budget %d)", b, StripBytes(w, h, b), budget)
	}
	for wider := b + stripAlign; wider < h+stripAlign; wider += stripAlign {
		if StripBytes(w, h, wider) <= budget {
			t.Fatalf("StripBand = %d, but %d fits too", b, wider)
		}
	}
	least := MinStripBytes(w, h)
	if StripBand(w, h, least-1) != 0 || StripBand(w, h, least) == 0 {
		t.Fatal("MinStripBytes is not the threshold of StripBand")
	}
	if got := StripBand(w, 100, 1<<40); got != 128 {
		t.Fatalf("unlimited budget on 100 rows: band %d, want 128 (one strip)", got)
	}
	t.Logf("20000²: full %d MiB, 32-row strip %d MiB, least %d MiB, band %d under 1 GiB", EstimateBytes(w, h)>>20,
		StripBytes(w, h, stripAlign)>>20, least>>20, b)
}

// TestStripErrors: bad bands and released references.
func TestStripErrors(t *testing.T) {
	ref, dist := metrictest.SyntheticPair(64, 64, 1)
	for _, band := range []int{0, -32, 33} {
		if _, err := PrepareStrips(ref, Config{}, band); err == nil {
			t.Errorf("band %d accepted", band)
		}
	}
	small := zenmetrics.NewImage(7, 100, zenmetrics.RGB8)
	if _, err := PrepareStrips(small, Config{}, 32); err == nil {
		t.Error("7 px wide image accepted")
	}
	r, err := PrepareStrips(ref, Config{}, 32)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if _, err := r.Score(context.Background(), dist); err != zenmetrics.ErrReleased {
		t.Errorf("after Release: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _ = PrepareStrips(ref, Config{}, 32)
	if _, err := r.Score(ctx, dist); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}
