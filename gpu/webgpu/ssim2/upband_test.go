package ssim2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// serialScores scores dists on a fresh reference on the serial path (one
// command buffer, no staging ring, no bands).
func serialScores(t *testing.T, b *webgpu.Backend, ref *zenmetrics.Image, dists []*zenmetrics.Image) []float64 {
	t.Helper()
	defer func(on bool) { ssim2Pipeline = on }(ssim2Pipeline)
	ssim2Pipeline = false
	r, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []float64
	for _, d := range dists {
		s, err := r.Score(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s.Value)
	}
	return out
}

// TestSSIM2BandedUpload scores pipelined images uploaded in row bands
// (band.go) and checks every score against the serial path bit for bit:
// odd and even widths (the row kernel and hblur4), 2, 3, 4 and 5 bands
// (uneven: the last band takes the rest), 8- and 16-bit samples, a padded
// stride, and both pyramid layouts (one buffer for the three channels, or
// one each: one hblur dispatch per channel group), with the band work
// (bandwork.go) and the legacy bands (ZENMETRICS_SSIM2_BANDWORK=0).
// Heights just below and at two legacy bands' minimum check where banding
// starts (the band work's cuts are 32 rows, so 511 rows take two bands).
func TestSSIM2BandedUpload(t *testing.T) {
	b := ssim2Backend(t)
	defer func(env string, pyr int, work bool) {
		ssim2BandsEnv, forcePyrBuffers, ssim2BandWork = env, pyr, work
	}(ssim2BandsEnv, forcePyrBuffers, ssim2BandWork)
	cases := []bandedCase{
		{452, 801, zenmetrics.RGB8, "3", 3, 3, 0, 0},
		{451, 800, zenmetrics.RGB8, "on", 2, 2, 0, 0},
		{451, 800, zenmetrics.RGB8, "on", 2, 2, 13, 3},
		{600, 1030, zenmetrics.RGB16, "4", 4, 4, 0, 0},
		{700, 511, zenmetrics.RGB8, "on", 2, 1, 0, 0},
		{700, 512, zenmetrics.RGB8, "on", 2, 2, 0, 0},
		{700, 800, zenmetrics.RGB8, "off", 1, 1, 0, 0},
		{452, 801, zenmetrics.RGB8, "5", 5, 3, 0, 3},
	}
	if testing.Short() {
		cases = cases[:3]
	}
	for i, tc := range cases {
		for _, work := range []bool{true, false} {
			if !work && testing.Short() && i == 1 {
				continue
			}
			want := tc.want
			if !work {
				want = tc.legacy
			}
			t.Run(fmt.Sprintf("%dx%d_%s_b%s_pad%d_pyr%d_work%v", tc.w, tc.h, tc.f, tc.bands, tc.pad, tc.pyr, work), func(t *testing.T) {
				ssim2BandWork = work
				bandedUpload(t, b, tc, want)
			})
		}
	}
}

// bandedCase is one case of TestSSIM2BandedUpload.
type bandedCase struct {
	w, h   int
	f      zenmetrics.PixelFormat
	bands  string // ZENMETRICS_SSIM2_BANDS
	want   int    // bands taken with the band work
	legacy int    // bands taken by the legacy bands
	pad    int
	pyr    int // forcePyrBuffers
}

// bandedUpload runs tc: two distorted images (and a padded one), scored
// twice each in want bands, against the serial path bit for bit.
func bandedUpload(t *testing.T, b *webgpu.Backend, tc bandedCase, want int) {
	ctx := context.Background()
	forcePyrBuffers = tc.pyr
	ref, d0 := metrictest.Synthetic(tc.w, tc.h, 77, tc.f)
	_, d1 := metrictest.Synthetic(tc.w, tc.h, 78, tc.f)
	dists := []*zenmetrics.Image{d0, d1}
	if tc.pad > 0 {
		dists = append(dists, metrictest.PadStride(d0, tc.pad))
	}
	serial := serialScores(t, b, ref, dists)
	ssim2BandsEnv = tc.bands
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	sr := r.(*ssim2Ref)
	if !sr.pipelined(d0) {
		t.Fatalf("%d raw bytes: not pipelined", ssim2RawBytes(d0))
	}
	if n := sr.bandCount(d0); n != want || sr.banded(d0) != (want > 1) || sr.bandWork() != ssim2BandWork {
		t.Fatalf("%d bands (banded %v, work %v), want %d", n, sr.banded(d0), sr.bandWork(), want)
	}
	for rep := 0; rep < 2; rep++ {
		for i, d := range dists {
			s, err := r.Score(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(s.Value) != math.Float64bits(serial[i]) {
				t.Errorf("rep %d dist %d: banded %.17g, serial %.17g", rep, i, s.Value, serial[i])
			}
		}
	}
}

// TestSSIM2BandedConcurrent scores banded and unbanded images on one
// reference from several goroutines at once: the bands of one score must
// not interleave with another score's commands on the shared scratch
// (r.seq), and images whose stride needs a larger upload buffer replace
// it while other scores are recorded or half submitted (errStale, the
// final's stale re-record). Every score must be the serial path's. With
// the band work, and (not -short) the legacy bands.
func TestSSIM2BandedConcurrent(t *testing.T) {
	b := ssim2Backend(t)
	defer func(env string, work bool) { ssim2BandsEnv, ssim2BandWork = env, work }(ssim2BandsEnv, ssim2BandWork)
	for _, work := range []bool{true, false} {
		if !work && testing.Short() {
			continue
		}
		t.Run(fmt.Sprintf("work%v", work), func(t *testing.T) {
			ssim2BandWork = work
			bandedConcurrent(t, b)
		})
	}
}

// bandedConcurrent is TestSSIM2BandedConcurrent in one band mode.
func bandedConcurrent(t *testing.T, b *webgpu.Backend) {
	ctx := context.Background()
	ref, d0 := metrictest.Synthetic(452, 801, 91, zenmetrics.RGB8)
	_, d1 := metrictest.Synthetic(452, 801, 92, zenmetrics.RGB8)
	dists := []*zenmetrics.Image{d0, metrictest.PadStride(d1, 4), d1, metrictest.PadStride(d0, 64)}
	want := serialScores(t, b, ref, dists)
	// 3 bands for every image: the stride changes the raw size, not the
	// count.
	ssim2BandsEnv = "3"
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range dists {
				j := (i + g) % len(dists)
				s, err := r.Score(ctx, dists[j])
				if err != nil {
					t.Error(err)
					return
				}
				if math.Float64bits(s.Value) != math.Float64bits(want[j]) {
					t.Errorf("goroutine %d dist %d: %.17g, serial %.17g", g, j, s.Value, want[j])
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d banded scores re-recorded after the upload buffer was replaced", ssim2StaleBands.Load())
}

// TestSSIM2BandedStale replaces the upload buffer between a banded score's
// early bands and its final submit (as another caller's image with a
// larger stride would): the final must be recorded again with every band
// copied into the new buffer, and the score stay the serial one; with the
// band work and the legacy bands.
func TestSSIM2BandedStale(t *testing.T) {
	b := ssim2Backend(t)
	defer func(env string, work bool) { ssim2BandsEnv, ssim2BandHook, ssim2BandWork = env, nil, work }(ssim2BandsEnv, ssim2BandWork)
	for _, work := range []bool{true, false} {
		t.Run(fmt.Sprintf("work%v", work), func(t *testing.T) {
			ssim2BandWork = work
			bandedStale(t, b)
		})
	}
}

// bandedStale is TestSSIM2BandedStale in one band mode.
func bandedStale(t *testing.T, b *webgpu.Backend) {
	ctx := context.Background()
	ref, d0 := metrictest.Synthetic(452, 801, 93, zenmetrics.RGB8)
	want := serialScores(t, b, ref, []*zenmetrics.Image{d0})
	ssim2BandsEnv = "3"
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	grow := int64(8 << 10)
	ssim2BandHook = func(r *ssim2Ref) {
		err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
			old := r.up.Raw
			grow += 8 << 10
			if err := r.up.Ensure(g, &r.held, ssim2RawBytes(d0)+grow); err != nil {
				return err
			}
			if r.up.Raw == old {
				return fmt.Errorf("upload buffer not replaced")
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	stale := ssim2StaleBands.Load()
	for rep := 0; rep < 2; rep++ {
		s, err := r.Score(ctx, d0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(s.Value) != math.Float64bits(want[0]) {
			t.Errorf("rep %d: %.17g after the upload buffer was replaced, serial %.17g", rep, s.Value, want[0])
		}
	}
	if n := ssim2StaleBands.Load() - stale; n != 2 {
		t.Errorf("%d stale re-records, want 2", n)
	}
}

// TestSSIM2BandedReleaseCancel ends banded scores (the band work and the
// legacy bands) between their early bands and their final submit
// (ssim2BandHook): a cancelled context ends the score in its error and
// the reference then scores as before; a Release ends it in ErrReleased
// (the slots still out come back, so Release returns); and Release racing
// banded scores from several goroutines ends each in the serial score or
// ErrReleased, with the device healthy after.
func TestSSIM2BandedReleaseCancel(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	defer func(env string, min int64, work bool) {
		ssim2BandsEnv, ssim2PipeMin, ssim2BandWork, ssim2BandHook = env, min, work, nil
	}(ssim2BandsEnv, ssim2PipeMin, ssim2BandWork)
	ssim2PipeMin = 1
	ref, d0 := metrictest.Synthetic(200, 520, 95, zenmetrics.RGB8)
	_, d1 := metrictest.Synthetic(200, 520, 96, zenmetrics.RGB8)
	dists := []*zenmetrics.Image{d0, d1}
	want := serialScores(t, b, ref, dists)
	ssim2BandsEnv = "4"
	prepare := func(t *testing.T, bands int) *ssim2Ref {
		t.Helper()
		r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sr := r.(*ssim2Ref)
		if !sr.banded(d0) || sr.bandCount(d0) != bands || sr.bandWork() != ssim2BandWork {
			t.Fatalf("banded %v in %d bands (work %v), want %d", sr.banded(d0), sr.bandCount(d0), sr.bandWork(), bands)
		}
		return sr
	}
	for _, work := range []bool{true, false} {
		bands := 4
		if !work {
			bands = 2 // 256-row cuts
		}
		t.Run(fmt.Sprintf("work%v", work), func(t *testing.T) {
			ssim2BandWork = work
			r := prepare(t, bands)
			defer r.Release()
			cctx, cancel := context.WithCancel(ctx)
			ssim2BandHook = func(*ssim2Ref) { cancel() }
			if _, err := r.Score(cctx, d0); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled before the final submit: %v", err)
			}
			ssim2BandHook = nil
			for i, d := range dists {
				if s, err := r.Score(ctx, d); err != nil || math.Float64bits(s.Value) != math.Float64bits(want[i]) {
					t.Errorf("dist %d after a cancelled score: %v, %.17g want %.17g", i, err, s.Value, want[i])
				}
			}

			ssim2BandHook = func(r *ssim2Ref) {
				go r.Release()
				for released := false; !released; time.Sleep(50 * time.Microsecond) {
					r.mu.Lock()
					released = r.released
					r.mu.Unlock()
				}
			}
			if _, err := r.Score(ctx, d1); !errors.Is(err, zenmetrics.ErrReleased) {
				t.Errorf("released before the final submit: %v", err)
			}
			ssim2BandHook = nil

			r2 := prepare(t, bands)
			var wg sync.WaitGroup
			var scored, ended atomic.Int32
			for g := 0; g < 3; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						j := (i + g) % len(dists)
						s, err := r2.Score(ctx, dists[j])
						if err != nil {
							if !errors.Is(err, zenmetrics.ErrReleased) {
								t.Errorf("score racing Release: %v", err)
							}
							ended.Add(1)
							return
						}
						scored.Add(1)
						if math.Float64bits(s.Value) != math.Float64bits(want[j]) {
							t.Errorf("dist %d racing Release: %.17g, want %.17g", j, s.Value, want[j])
						}
					}
				}()
			}
			time.Sleep(time.Duration(len(dists)) * 20 * time.Millisecond)
			r2.Release()
			wg.Wait()
			t.Logf("racing Release: %d scores, %d goroutines ended by it", scored.Load(), ended.Load())
			s, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, d1, zenmetrics.Options{})
			if err != nil || math.Float64bits(s.Value) != math.Float64bits(want[1]) {
				t.Errorf("after the race: %v, %.17g want %.17g", err, s.Value, want[1])
			}
		})
	}
}
