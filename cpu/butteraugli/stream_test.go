package butteraugli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// streamSizes are the image sizes the streamed path is checked on: the
// smallest (8, where the half-resolution level is skipped, and 15, 16,
// where it starts), odd widths and heights, narrow and short strips
// (fewer rows than any stage's halo, and more rows than one band with
// fewer than a halo left for the last), and sizes whose height sits at a
// band edge plus or minus one.
var streamSizes = [][2]int{
	{8, 8}, {9, 8}, {8, 9}, {15, 16}, {16, 15}, {17, 17},
	{8, 203}, {11, 131}, {300, 8}, {257, 9},
	{33, 35}, {64, 48}, {97, 61}, {129, 77},
	{70, 63}, {70, 64}, {70, 65}, {70, 97},
}

// streamBands are the band heights tried: 2 (every stage advancing by a
// couple of rows, windows compacted on nearly every band), odd ones
// (rounded up to even), one smaller than the longest blur reach, the
// default and one taller than every image.
var streamBands = []int{2, 3, 6, 10, 32, 1000}

// TestStreamedEqualsPrepared: comparePair gives Compare's bits (map, Max,
// both norms) for every size, band, thread count and opaque format, on
// both paths. A window that dropped a row a reader still needed, or a
// stage run before its inputs were complete, changes the map.
func TestStreamedEqualsPrepared(t *testing.T) {
	formats := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.Gray8, zenmetrics.RGB16}
	for i, sz := range streamSizes {
		f := formats[i%len(formats)]
		ref, dist := photoPair(sz[0], sz[1], uint64(40+i), f)
		for _, fast := range []bool{false, true} {
			saved := useFast
			useFast = fast
			for _, threads := range []int{1, 3} {
				cfg := Config{Threads: threads, PNorm: 2, DistMap: true}
				want := mustCompare(t, ref, dist, cfg)
				for _, band := range streamBands {
					name := fmt.Sprintf("%dx%d %v fast=%v threads=%d band=%d", sz[0], sz[1], f, fast, threads, band)
					got, err := comparePair(ref, dist, cfg, band)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					sameResult(t, name, want, got)
				}
			}
			useFast = saved
		}
	}
}

// TestStreamedNoMap: without the map (its rows then live in a window
// only) the scores are the same bits.
func TestStreamedNoMap(t *testing.T) {
	ref, dist := photoPair(203, 151, 9, zenmetrics.RGB8)
	want := mustCompare(t, ref, dist, Config{PNorm: 6})
	for _, band := range []int{2, 32, 100} {
		got, err := comparePair(ref, dist, Config{PNorm: 6}, band)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, fmt.Sprint("band ", band), want, got)
		if got.DistMap != nil {
			t.Fatal("a map nobody asked for")
		}
	}
	got, err := ComparePair(ref, dist, Config{PNorm: 6, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "ComparePair", want, got)
}

// TestStreamedFallbacks: alpha and images under 8 pixels take Compare's
// path (and results); errors are Compare's.
func TestStreamedFallbacks(t *testing.T) {
	for _, c := range []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{{129, 77, zenmetrics.RGBA8}, {40, 33, zenmetrics.GrayA8}, {7, 30, zenmetrics.RGB8}, {30, 5, zenmetrics.RGB8}} {
		ref, dist := photoPair(c.w, c.h, 5, c.f)
		want := mustCompare(t, ref, dist, Config{DistMap: true})
		got, err := ComparePair(ref, dist, Config{DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, fmt.Sprintf("%dx%d %v", c.w, c.h, c.f), want, got)
	}
	ref, _ := photoPair(20, 20, 1, zenmetrics.RGB8)
	_, other := photoPair(21, 20, 1, zenmetrics.RGB8)
	var sm *zenmetrics.SizeMismatchError
	if _, err := ComparePair(ref, other, Config{}); !errors.As(err, &sm) {
		t.Fatalf("size mismatch: %v", err)
	}
	if _, err := ComparePair(ref, ref, Config{IntensityTarget: math.NaN()}); err == nil {
		t.Fatal("NaN intensity accepted")
	}
	if _, err := ComparePair(nil, ref, Config{}); err == nil {
		t.Fatal("nil reference accepted")
	}
}

// TestStreamedRefvectors: every synthetic pair of refvectors/butteraugli
// (flat, tiny, extreme and structured images), streamed in short bands.
func TestStreamedRefvectors(t *testing.T) {
	tab := refvectorCases(t)
	for i := range tab.Rows {
		name := tab.Get(i, "case")
		a, b, err := synth(name)
		if err != nil {
			t.Fatal(err)
		}
		want := mustCompare(t, a.image(), b.image(), Config{DistMap: true})
		got, err := comparePair(a.image(), b.image(), Config{DistMap: true}, 6)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, name, want, got)
	}
}

// TestWinGrow: ring and linear windows, sized by a dry run, keep the rows
// asked for while rows are added 7 at a time and the oldest dropped.
func TestWinGrow(t *testing.T) {
	for _, linear := range []bool{false, true} {
		w := win{pl: plane{w: 3, h: 1000}, linear: linear, dry: true}
		for pass := 0; pass < 2; pass++ {
			lo := 0
			for hi := 0; hi < 1000; {
				n := min(1000, hi+7)
				w.grow(lo, n)
				if pass == 1 {
					for y := hi; y < n; y++ {
						r := w.pl.row(y)
						for x := range r {
							r[x] = float32(y*3 + x)
						}
					}
				}
				hi = n
				lo = max(0, hi-20)
				for y := lo; pass == 1 && y < hi; y++ {
					for x, v := range w.pl.row(y) {
						if v != float32(y*3+x) {
							t.Fatalf("linear=%v row %d col %d: %v after grow to %d", linear, y, x, v, n)
						}
					}
				}
			}
			if pass == 0 {
				if w.span != 27 {
					t.Fatalf("linear=%v: span %d, want 27", linear, w.span)
				}
				w.allocate(14)
			}
		}
	}
}

// TestPrepareOnceBackend: the first Score is streamed, later ones use a
// prepared reference; all give PrepareBackend's scores, and the errors
// are its errors.
func TestPrepareOnceBackend(t *testing.T) {
	a, b := photoPair(70, 65, 12, zenmetrics.RGB8)
	_, c := photoPair(70, 65, 13, zenmetrics.RGB8)
	opt := zenmetrics.Options{PNorm: 2, DistMap: true}
	bg := context.Background()
	want, err := PrepareBackend(bg, a, opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	once, err := PrepareOnceBackend(bg, a, opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []*zenmetrics.Image{b, c, b} {
		w, err1 := want.Score(bg, d)
		g, err2 := once.Score(bg, d)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if w.Value != g.Value || w.Extras["pnorm3"] != g.Extras["pnorm3"] || w.Extras["pnorm"] != g.Extras["pnorm"] {
			t.Fatalf("score %d: %+v, want %+v", i, g, w)
		}
		sameResult(t, fmt.Sprint("map ", i), Result{DistMap: w.DistMap.Pix}, Result{DistMap: g.DistMap.Pix})
	}
	once.Release()
	if _, err := once.Score(bg, b); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Fatalf("after Release: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := PrepareOnceBackend(ctx, a, opt, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if _, err := PrepareOnceBackend(bg, a, zenmetrics.Options{PNorm: -1}, 0); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Fatalf("bad p-norm: %v", err)
	}
	if _, err := PrepareOnceBackend(bg, &zenmetrics.Image{}, opt, 0); err == nil {
		t.Fatal("empty image accepted")
	}
}
