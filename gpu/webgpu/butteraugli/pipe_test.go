package butteraugli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// pipeEnv sets the host-path switches for a test and restores them after:
// every image pipelined (bfPipeMin 0), bands as bands says (band work,
// the plan and the hook as the test leaves them until then).
func pipeEnv(t *testing.T, bands string) {
	t.Helper()
	on, env, lo, plan, work := bfPipeOn, bfBandsEnv, bfPipeMin, bfBandPlan, bfBandWork
	t.Cleanup(func() {
		bfPipeOn, bfBandsEnv, bfPipeMin, bfBandPlan, bfBandHook, bfBandWork = on, env, lo, plan, nil, work
	})
	bfPipeOn, bfBandsEnv, bfPipeMin = true, bands, 0
}

// pipedRef prepares ref as a whole-image reference whose scores take the
// pipelined path (Prepare's; prepareButteraugli alone leaves strips').
func pipedRef(t *testing.T, dev *webgpu.Device, ref *zenmetrics.Image, opt zenmetrics.Options) *butteraugliRef {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	r.pipe.enable()
	return r
}

// plainScore is dist's score on a fresh reference on the plain path.
func plainScore(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options) zenmetrics.Score {
	t.Helper()
	defer func(on bool) { bfPipeOn = on }(bfPipeOn)
	bfPipeOn = false
	return bfScoreGPU(t, dev, ref, dist, opt)
}

// TestButteraugliPipelinedMatchesPlain scores odd-sized images on the
// pipelined path, unbanded and in 2, 3 and 4 row bands (the last band
// uneven; odd heights put the half level's odd last row in the last
// band), 8- and 16-bit, gray, a padded stride, and with alpha (two
// backgrounds: never banded), with the map and a p-norm, one reference
// scoring several layouts in turn (the unpack blocks are rewritten at
// submit), and checks scores and maps against the plain path bit for bit.
func TestButteraugliPipelinedMatchesPlain(t *testing.T) {
	dev := gputest.Device(t)
	opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
	for _, tc := range []struct {
		w, h      int
		bands     string
		wantBands int
	}{
		{37, 29, "", 1},
		{61, 515, "on", 2},
		{45, 777, "3", 3},
		{33, 1031, "4", 4},
		{29, 511, "on", 1}, // one row short of two bands
	} {
		pipeEnv(t, tc.bands)
		ref, _ := metrictest.Synthetic(tc.w, tc.h, int64(tc.h), zenmetrics.RGB8)
		r := pipedRef(t, dev, ref, opt)
		_, d8 := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+1, zenmetrics.RGB8)
		_, d16 := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+2, zenmetrics.RGB16)
		_, dg := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+3, zenmetrics.Gray8)
		_, da := metrictest.Synthetic(tc.w, tc.h, int64(tc.h)+4, zenmetrics.RGBA8)
		for i, d := range []*zenmetrics.Image{d8, d16, metrictest.PadStride(d8, 13), dg, da, d8, ref} {
			name := fmt.Sprintf("%dx%d bands=%q #%d %v stride %d", tc.w, tc.h, tc.bands, i, d.Format, d.Stride)
			if want := tc.wantBands; d.Format.HasAlpha() {
				want = 1
				if n := r.bandCount(d); n != want {
					t.Fatalf("%s: %d bands, want %d", name, n, want)
				}
			} else if n := r.bandCount(d); n != want {
				t.Fatalf("%s: %d bands, want %d", name, n, want)
			}
			if !r.pipelined(d, 0, tc.h) {
				t.Fatalf("%s: not pipelined", name)
			}
			s, err := r.Score(context.Background(), d)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bfSame(t, name, plainScore(t, dev, ref, d, opt), s)
		}
		r.Release()
	}
}

// TestButteraugliBandThreshold moves the band plan's bytes per band
// around an image's raw size: one byte more than half of it is one band,
// half of it is two, and both score the plain path's bits.
func TestButteraugliBandThreshold(t *testing.T) {
	dev := gputest.Device(t)
	ref, dist := metrictest.Synthetic(53, 613, 7, zenmetrics.RGB8)
	need := bfRawBytes(dist)
	want := plainScore(t, dev, ref, dist, zenmetrics.Options{DistMap: true})
	for _, tc := range []struct {
		bytes int64
		bands int
	}{{need/2 + 1, 1}, {need / 2, 2}, {need/3 + 1, 2}, {need / 3, 2}} { // 613 rows: room for two
		pipeEnv(t, "")
		bfBandPlan.Bytes = tc.bytes
		r := pipedRef(t, dev, ref, zenmetrics.Options{DistMap: true})
		if n := r.bandCount(dist); n != tc.bands {
			t.Fatalf("%d bytes per band: %d bands, want %d", tc.bytes, n, tc.bands)
		}
		s, err := r.Score(context.Background(), dist)
		if err != nil {
			t.Fatal(err)
		}
		bfSame(t, fmt.Sprintf("%d bytes per band", tc.bytes), want, s)
		r.Release()
	}
}

// TestButteraugliPipelinedConcurrent scores from several goroutines on one
// reference at once: banded and unbanded images, alpha, and strides that
// replace the upload buffer under other callers' recorded commands (which
// must record again, band work included), in bands of the real plan and
// in 4 bands on multiples of 2 rows (TestButteraugliBandWork: windows
// that end inside opsin tiles). Every score must be the plain path's.
func TestButteraugliPipelinedConcurrent(t *testing.T) {
	for _, tc := range []struct {
		w, h, align int
		bands       string
		pads        []int // padded strides, in multiples of what the bands need (alignedStride)
	}{
		{47, 521, 256, "on", []int{5, 64}},
		{128, 101, 2, "4", []int{1, 2}},
	} {
		pipeEnv(t, tc.bands)
		bfBandPlan.Align = tc.align
		dev := gputest.Device(t)
		opt := zenmetrics.Options{DistMap: true, PNorm: 3}
		ref, d0 := metrictest.Synthetic(tc.w, tc.h, 11, zenmetrics.RGB8)
		_, d1 := metrictest.Synthetic(tc.w, tc.h, 12, zenmetrics.RGBA16)
		d0 = alignedStride(d0, tc.align, 0)
		dists := []*zenmetrics.Image{d0, d1}
		for _, p := range tc.pads {
			if tc.align == 256 {
				dists = append(dists, metrictest.PadStride(d0, p)) // bands on multiples of 256 rows: any stride
			} else {
				dists = append(dists, alignedStride(d0, tc.align, p))
			}
		}
		want := make([]zenmetrics.Score, len(dists))
		for i, d := range dists {
			want[i] = plainScore(t, dev, ref, d, opt)
		}
		r := pipedRef(t, dev, ref, opt)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 4; i++ {
					k := (w + i) % len(dists)
					s, err := r.Score(context.Background(), dists[k])
					if err != nil {
						t.Error(err)
						return
					}
					bfSame(t, fmt.Sprintf("%dx%d worker %d score %d (image %d)", tc.w, tc.h, w, i, k), want[k], s)
				}
			}()
		}
		wg.Wait()
		if n := r.bandCount(d0); r.pipe.bands[n] == nil || r.pipe.bands[n].head == nil {
			t.Errorf("%dx%d: no band work in %d bands", tc.w, tc.h, n)
		}
		r.Release()
	}
}

// released fails the test unless r.Release returns within 20 s: it waits
// for every staging slot in use, so a slot an error path forgot hangs it.
func released(t *testing.T, r *butteraugliRef) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		r.Release()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Release hangs: a staging slot was not given back")
	}
}

// TestButteraugliPipelinedErrors cancels scores and fails them mid-
// pipeline (a context cancelled before the score, or after the bands and
// the record, before the final submit; the reference released there): the
// error comes back, later scores are still the plain path's, and every
// staging slot comes back (Release would wait for it).
func TestButteraugliPipelinedErrors(t *testing.T) {
	dev := gputest.Device(t)
	opt := zenmetrics.Options{DistMap: true}
	ref, dist := metrictest.Synthetic(41, 600, 21, zenmetrics.RGB8)
	want := plainScore(t, dev, ref, dist, opt)
	for _, bands := range []string{"0", "on"} {
		pipeEnv(t, bands)
		r := pipedRef(t, dev, ref, opt)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.Score(ctx, dist); !errors.Is(err, context.Canceled) {
			t.Fatalf("bands=%s: cancelled before: %v", bands, err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		bfBandHook = func(*butteraugliRef) { cancel() }
		if _, err := r.Score(ctx, dist); !errors.Is(err, context.Canceled) {
			t.Fatalf("bands=%s: cancelled mid-pipeline: %v", bands, err)
		}
		bfBandHook = nil
		for i := 0; i < 3; i++ { // more scores than slots: a slot kept by an error path runs out
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			s, err := r.Score(ctx, dist)
			cancel()
			if err != nil {
				t.Fatalf("bands=%s: score %d after cancel: %v", bands, i, err)
			}
			bfSame(t, fmt.Sprintf("bands=%s after cancel %d", bands, i), want, s)
		}
		bfBandHook = func(r *butteraugliRef) {
			r.mu.Lock()
			r.released = true // what Release does first
			r.mu.Unlock()
		}
		if _, err := r.Score(context.Background(), dist); !errors.Is(err, zenmetrics.ErrReleased) {
			t.Fatalf("bands=%s: released mid-pipeline: %v", bands, err)
		}
		bfBandHook = nil
		r.mu.Lock()
		r.released = false
		r.mu.Unlock()
		released(t, r)
	}
}

// TestButteraugliStripsMatchPipelined runs the strips-equal-the-whole-
// image test with the whole image's score pipelined in bands.
func TestButteraugliStripsMatchPipelined(t *testing.T) {
	pipeEnv(t, "on")
	TestButteraugliStripsMatchFull(t)
}
