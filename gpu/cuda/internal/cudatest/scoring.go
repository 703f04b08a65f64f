package cudatest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// The GPU-only test bodies every CUDA metric package repeated: cached
// scoring from several goroutines, the errors a prepared reference
// returns, refusals before anything is allocated, and the memory estimate
// against what a reference really holds. Each package keeps its test
// functions (the device scripts select them by name) and passes its own
// parts: the metric, options, comparisons and extra checks.

// SixFormats are the distorted images of the cached-scoring tests: w×h
// synthetic images of seeds 10..15 in RGB8, RGBA16 and Gray8 in turn
// (alpha, 16-bit and grey uploads on one reference).
func SixFormats(w, h int) []*zenmetrics.Image {
	var out []*zenmetrics.Image
	for i := 0; i < 6; i++ {
		f := []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.Gray8}[i%3]
		_, d := metrictest.Synthetic(w, h, int64(10+i), f)
		out = append(out, d)
	}
	return out
}

// SameBits reports how a differs from b, bit for bit: the value and, when
// either has one, the distance map (nil when they are the same).
func SameBits(a, b zenmetrics.Score) error {
	if math.Float64bits(a.Value) != math.Float64bits(b.Value) {
		return fmt.Errorf("%v vs %v", a.Value, b.Value)
	}
	return SameMaps(a, b)
}

// SameMaps reports how a's distance map differs from b's, bit for bit
// (nil when both have none or they are the same).
func SameMaps(a, b zenmetrics.Score) error {
	if (a.DistMap == nil) != (b.DistMap == nil) {
		return errors.New("map present in one only")
	}
	if a.DistMap != nil {
		for i := range a.DistMap.Pix {
			if math.Float32bits(a.DistMap.Pix[i]) != math.Float32bits(b.DistMap.Pix[i]) {
				return fmt.Errorf("maps differ at %d: %v vs %v", i, a.DistMap.Pix[i], b.DistMap.Pix[i])
			}
		}
	}
	return nil
}

// Cached is a metric's part of CachedConcurrent.
type Cached struct {
	Metric zenmetrics.Metric
	Opt    zenmetrics.Options
	// Ref is the reference (nil: metrictest.SyntheticPair(333, 250, 1)'s)
	// and Dists the distorted images (nil: SixFormats(333, 250)).
	Ref   *zenmetrics.Image
	Dists []*zenmetrics.Image
	// Goroutines score at once (0: 6, more than any metric's slots, so
	// that some wait for one).
	Goroutines int
	// Same compares a cached score with the one-shot's (nil: SameBits).
	Same func(cached, oneShot zenmetrics.Score) error
	// Self, when set, checks the prepared reference r further before it
	// is released (the reference against itself, say).
	Self func(t *testing.T, r zenmetrics.Reference, ref *zenmetrics.Image)
}

// CachedConcurrent checks that a reference prepared once gives each
// distorted image its one-shot score (zenmetrics.ScoreOnce with the same
// options) from several goroutines at once, each going through the images
// from its own start; then runs c.Self; then that Release, twice, makes
// Score fail with ErrReleased and gives back every device byte the
// reference and its scorers held.
func CachedConcurrent(t *testing.T, b *cuda.Backend, c Cached) {
	t.Helper()
	ctx := context.Background()
	ref, dists := c.Ref, c.Dists
	if ref == nil {
		ref, _ = metrictest.SyntheticPair(333, 250, 1)
	}
	if dists == nil {
		dists = SixFormats(333, 250)
	}
	same := c.Same
	if same == nil {
		same = SameBits
	}
	goroutines := c.Goroutines
	if goroutines == 0 {
		goroutines = 6
	}
	var want []zenmetrics.Score
	for _, d := range dists {
		s, err := zenmetrics.ScoreOnce(ctx, b, c.Metric, ref, d, c.Opt)
		if err != nil {
			t.Fatalf("cuda score: %v", err)
		}
		want = append(want, s)
	}
	before := b.Device().Held()
	r, err := b.Prepare(ctx, c.Metric, ref, c.Opt)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	// Each goroutine sends at most one error per image.
	errs := make(chan error, goroutines*len(dists))
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := range dists {
				j := (i + g) % len(dists)
				s, err := r.Score(ctx, dists[j])
				if err != nil {
					errs <- err
					return
				}
				if err := same(s, want[j]); err != nil {
					errs <- fmt.Errorf("dist %d: %v", j, err)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c.Self != nil {
		c.Self(t, r, ref)
	}
	r.Release()
	r.Release()
	if _, err := r.Score(ctx, dists[0]); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("after Release: %v", err)
	}
	if n := b.Device().Held(); n != before {
		t.Errorf("%d device bytes still held after Release", n-before)
	}
}

// ScoreErrors checks the errors of a reference prepared from ref (w×h,
// default options) with dist its distorted image: a w×(h-1) image is
// ErrSizeMismatch, a cancelled context context.Canceled and, with
// noPixels, an RGB8 image without pixels ErrBadInput.
func ScoreErrors(t *testing.T, b *cuda.Backend, m zenmetrics.Metric, ref, dist *zenmetrics.Image, noPixels bool) {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, m, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	w, h := ref.Width, ref.Height
	_, odd := metrictest.SyntheticPair(w, h-1, 1)
	if _, err := r.Score(ctx, odd); !errors.Is(err, zenmetrics.ErrSizeMismatch) {
		t.Errorf("size mismatch: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Score(cctx, dist); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled score: %v", err)
	}
	if noPixels {
		if _, err := r.Score(ctx, &zenmetrics.Image{Width: w, Height: h, Format: zenmetrics.RGB8, Stride: 3 * w}); !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("no pixels: %v", err)
		}
	}
}

// Modes checks which modes a metric takes: Prepare of ref in each of
// refused is ErrUnsupported and Estimate declines it at 1024², and
// Estimate accepts 1024² in each of accepted.
func Modes(t *testing.T, b *cuda.Backend, m zenmetrics.Metric, ref *zenmetrics.Image, refused, accepted []zenmetrics.Mode) {
	t.Helper()
	for _, mode := range refused {
		if _, err := b.Prepare(context.Background(), m, ref, zenmetrics.Options{Mode: mode}); !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("%v: %v", mode, err)
		}
		if _, ok := b.Estimate(m, 1024, 1024, mode); ok {
			t.Errorf("Estimate accepts %v", mode)
		}
	}
	for _, mode := range accepted {
		if _, ok := b.Estimate(m, 1024, 1024, mode); !ok {
			t.Errorf("Estimate refuses %v of 1 MP", mode)
		}
	}
}

// Refused checks that side² images (a metric passes sizes past its
// kernels' int indexing or past any device's memory) are declined by
// Estimate and refused by Prepare with ErrOutOfMemory before anything is
// allocated: the device holds no more bytes after the refusal.
func Refused(t *testing.T, b *cuda.Backend, m zenmetrics.Metric, sides ...int) {
	t.Helper()
	for _, side := range sides {
		if est, ok := b.Estimate(m, side, side, zenmetrics.ModeFull); ok {
			t.Fatalf("Estimate(%d²) = %d bytes, ok", side, est)
		}
		im := &zenmetrics.Image{Width: side, Height: side, Format: zenmetrics.Gray8, Stride: side, Pix: make([]byte, side*side)}
		before := b.Device().Held()
		if _, err := b.Prepare(context.Background(), m, im, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
			t.Fatalf("Prepare(%d²): %v", side, err)
		}
		if after := b.Device().Held(); after != before {
			t.Errorf("a refused Prepare(%d²) holds %d bytes", side, after-before)
		}
	}
}

// EstimateMatchesHeld checks that a metric's memory model (estimate of
// the reference image, which says its size and pixel format) predicts
// exactly the device bytes a reference prepared with opt and its first
// scorer hold, for 1000×700 RGB8 and RGBA16 images; it returns what each
// format held, for a package's further checks.
func EstimateMatchesHeld(t *testing.T, b *cuda.Backend, m zenmetrics.Metric, opt zenmetrics.Options, estimate func(ref *zenmetrics.Image) int64) map[zenmetrics.PixelFormat]int64 {
	t.Helper()
	out := map[zenmetrics.PixelFormat]int64{}
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.RGBA16} {
		ref, dist := metrictest.Synthetic(1000, 700, 3, f)
		before := b.Device().Held()
		r, err := b.Prepare(context.Background(), m, ref, opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Score(context.Background(), dist); err != nil {
			t.Fatal(err)
		}
		held := b.Device().Held() - before
		if est := estimate(ref); held != est {
			t.Errorf("%v (map %v): held %d bytes, estimate %d", f, opt.DistMap, held, est)
		}
		out[f] = held
		r.Release()
	}
	return out
}
