package butteraugli

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// MeasureMemory reports what a run really held (our buffer accounting):
// for a one-shot full Butteraugli score of an opaque RGB8 image it is the
// byte model's prediction for that case, within the pool's rounding.
func TestMeasureMemoryMatchesModel(t *testing.T) {
	b := webgpu.NewBackendOn(gputest.Device(t))
	const w, h = 320, 240
	ref, dist := metrictest.SyntheticPair(w, h, 11)
	ctx := context.Background()
	peak, nv, err := b.MeasureMemory(ctx, func() error {
		_, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.Butteraugli, ref, dist, zenmetrics.Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	model := bfEstimate(w, h, 1, 3*w*h)
	if r := float64(peak) / float64(model); r < 0.9 || r > 1.1 {
		t.Errorf("measured %d bytes, model %d (ratio %.3f)", peak, model, r)
	}
	t.Logf("butteraugli %dx%d rgb8: measured peak %.2f MiB, model %.2f MiB, nvml Δ %d", w, h,
		float64(peak)/(1<<20), float64(model)/(1<<20), nv)
}
