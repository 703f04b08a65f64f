package ssim2

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIM2Pipelined scores large images (over stagingMin, so the staging
// path) on one cached reference from several goroutines at once: every
// score must be the serial path's, bit for bit (the same commands in the
// same order; only where the upload is filled differs), and a Release
// racing with them must end each in a score or ErrReleased, never a
// crash or a wrong value.
func TestSSIM2Pipelined(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	defer func(on bool) { ssim2Pipeline = on }(ssim2Pipeline)
	ref, _ := metrictest.Synthetic(720, 560, 900, zenmetrics.RGB8) // 1.2 MB raw
	var dists []*zenmetrics.Image
	for i := 0; i < 6; i++ {
		_, d := metrictest.Synthetic(720, 560, int64(901+i), zenmetrics.RGB8)
		dists = append(dists, d)
	}
	if ssim2RawBytes(ref) < webgpu.StagingMin {
		t.Fatalf("test image too small for the staging path")
	}
	ssim2Pipeline = false
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(dists))
	for i, d := range dists {
		s, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s.Value
	}
	r.Release()

	ssim2Pipeline = true
	r, err = b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.(*ssim2Ref).pipelined(dists[0]) {
		t.Fatal("the pipelined path is not taken")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One pass each: four goroutines over two staging slots
			// already wait for slots and overlap uploads with scores (a
			// second pass doubled the test's lavapipe time, ~9 s, for
			// no path not taken in the first).
			for rep := 0; rep < 1; rep++ {
				for i := range dists {
					j := (i + g) % len(dists)
					s, err := r.Score(ctx, dists[j])
					if err != nil {
						errs <- err
						return
					}
					if math.Float64bits(s.Value) != math.Float64bits(want[j]) {
						t.Errorf("dist %d: pipelined %.17g, serial %.17g", j, s.Value, want[j])
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if u := r.(*ssim2Ref).pipe.Made(); u < 1 || u > ssim2PipeSlots {
		t.Errorf("%d staging slots made", u)
	}
	r.Release()

	// Release while scores are in flight.
	r, err = b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg2 sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for i := 0; i < 4; i++ {
				s, err := r.Score(ctx, dists[i])
				if err != nil {
					if !errors.Is(err, zenmetrics.ErrReleased) {
						t.Errorf("score racing Release: %v", err)
					}
					return
				}
				if math.Float64bits(s.Value) != math.Float64bits(want[i]) {
					t.Errorf("dist %d racing Release: %.17g, want %.17g", i, s.Value, want[i])
				}
			}
		}()
	}
	r.Release()
	wg2.Wait()
	if _, err := r.Score(ctx, dists[0]); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("score after Release: %v", err)
	}
	// The device is still healthy: a fresh reference scores as before.
	s, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, dists[1], zenmetrics.Options{})
	if err != nil || math.Float64bits(s.Value) != math.Float64bits(want[1]) {
		t.Errorf("after the race: %v, %.17g want %.17g", err, s.Value, want[1])
	}
}
