package ssim2

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIM2Prerec scores one cached reference again and again from one
// goroutine, with the distorted image's layout changing on the way (a
// padded stride, another pixel format, back): every score must be the
// serial path's bit for bit, whether it submitted commands recorded ahead
// by the previous score's put-back (prerec.go) or found them recorded for
// another layout and recorded its own. Same-layout runs must use the
// commands recorded ahead (after the two staging slots are made, every
// take gets a slot whose put-back recorded for it), a layout change must
// find them stale, and Release must drop what is left.
func TestSSIM2Prerec(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	defer func(on, pre bool) { ssim2Pipeline, ssim2Prerec = on, pre }(ssim2Pipeline, ssim2Prerec)
	ref, d0 := metrictest.Synthetic(720, 560, 910, zenmetrics.RGB8) // 1.2 MB raw
	_, d1 := metrictest.Synthetic(720, 560, 911, zenmetrics.RGB8)
	_, d2 := metrictest.Synthetic(720, 560, 912, zenmetrics.RGBA8)
	padded := metrictest.PadStride(d1, 12)
	if ssim2RawBytes(ref) < webgpu.StagingMin {
		t.Fatalf("test image too small for the staging path")
	}
	// The order: same layout (hits), padded stride (stale, then hits),
	// RGBA (stale, then hits), back to plain RGB8 (stale, then hits).
	seq := []*zenmetrics.Image{d0, d1, d0, d1, d0, padded, padded, padded, d2, d2, d2, d1, d0, d1}
	ssim2Pipeline = false
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[*zenmetrics.Image]float64{}
	for _, d := range []*zenmetrics.Image{d0, d1, d2, padded} {
		s, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		want[d] = s.Value
	}
	r.Release()
	if math.Float64bits(want[padded]) != math.Float64bits(want[d1]) {
		t.Fatalf("padded stride %.17g, plain %.17g", want[padded], want[d1])
	}

	ssim2Pipeline, ssim2Prerec = true, true
	r, err = b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rr := r.(*ssim2Ref)
	if !rr.pipelined(d0) || rr.banded(d0) {
		t.Fatal("the unbanded pipelined path is not taken")
	}
	hits0, stale0 := ssim2AheadHits.Load(), ssim2AheadStale.Load()
	for i, d := range seq {
		s, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(s.Value) != math.Float64bits(want[d]) {
			t.Errorf("score %d: %.17g, serial %.17g", i, s.Value, want[d])
		}
	}
	hits, stale := ssim2AheadHits.Load()-hits0, ssim2AheadStale.Load()-stale0
	t.Logf("%d scores: %d submitted commands recorded ahead, %d found them stale", len(seq), hits, stale)
	// Every take after the first two gets a slot back from its put-back,
	// which recorded for the layout of the score before: scores 2–4 hit,
	// the first of each new layout is stale on its slot (and the second
	// too, on the other slot), then hits resume.
	if hits < 5 || stale < 3 {
		t.Errorf("recorded ahead: %d hits, %d stale; want ≥ 5 and ≥ 3", hits, stale)
	}
	r.Release()
	if n := len(rr.next.m); n != 0 {
		t.Errorf("%d scores recorded ahead left after Release", n)
	}
	// The device is still healthy: a fresh reference scores as before.
	s, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, d2, zenmetrics.Options{})
	if err != nil || math.Float64bits(s.Value) != math.Float64bits(want[d2]) {
		t.Errorf("after Release: %v, %.17g want %.17g", err, s.Value, want[d2])
	}
}
