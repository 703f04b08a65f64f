package zensim

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimate: Estimate is exactly what a prepared reference holds on the
// device (webgpu.ReferenceBytes, the kit's accounting of every buffer)
// for the worst-case RGBA16 upload it reserves, from 1 MiB on (the 420×390
// case) with the pipelined scores' staging slots (less those that no score
// needed), in full mode and in strips, and a score does not grow it after
// two concurrent ones; sizes below 8 and other modes are declined.
func TestEstimate(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	for _, c := range []struct {
		w, h int
		mode zenmetrics.Mode
	}{
		{8, 8, zenmetrics.ModeFull}, {333, 257, zenmetrics.ModeFull}, {420, 390, zenmetrics.ModeFull},
		{333, 257, zenmetrics.ModeStrip}, {420, 390, zenmetrics.ModeStrip},
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, 1, zenmetrics.RGBA16)
		est, ok := b.Estimate(zenmetrics.Zensim, c.w, c.h, c.mode)
		if !ok {
			t.Fatalf("%dx%d %v: Estimate declined", c.w, c.h, c.mode)
		}
		r, err := b.Prepare(ctx, zenmetrics.Zensim, ref, zenmetrics.Options{Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		// Two scores at once, then one more: the pipelined slots of a whole
		// image (pipe.go) are made as concurrent scores need them, up to
		// the pipeSlots the model counts.
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := r.Score(ctx, dist); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		held := webgpu.ReferenceBytes(r)
		if _, err := r.Score(ctx, dist); err != nil {
			t.Fatal(err)
		}
		after := webgpu.ReferenceBytes(r)
		zr := r.(*reference)
		unmade := int64(0) // slots the model counts that no score needed
		if raw := worstRaw(c.w, zr.l.maxRows); zr.piped() && raw >= webgpu.StagingMin {
			unmade = int64(pipeSlots-zr.pipe.Made()) * round4(raw)
		}
		r.Release()
		t.Logf("%dx%d %v: Estimate %d, held %d (%d ring slots not made)", c.w, c.h, c.mode, est, held, unmade)
		if after != held {
			t.Errorf("%dx%d %v: a score grew the reference from %d to %d bytes", c.w, c.h, c.mode, held, after)
		}
		if held+unmade != est {
			t.Errorf("%dx%d %v: Estimate %d, reference holds %d + %d unmade slots", c.w, c.h, c.mode, est, held, unmade)
		}
	}
	for _, c := range []struct {
		w, h int
		m    zenmetrics.Mode
	}{{7, 100, zenmetrics.ModeFull}, {100, 7, zenmetrics.ModeStrip}, {400, 400, zenmetrics.ModeStripPair}} {
		if _, ok := b.Estimate(zenmetrics.Zensim, c.w, c.h, c.m); ok {
			t.Errorf("Estimate %dx%d %v accepted", c.w, c.h, c.m)
		}
	}
}
