package ssim2

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// ssim2StripScore scores in strips of the given band height with the
// reference strategy forced, and returns the score and the strip count.
func ssim2StripScore(t *testing.T, b *webgpu.Backend, ref, dist *zenmetrics.Image, band int, keep bool) (float64, int) {
	t.Helper()
	forceKeep = &keep
	defer func() { forceKeep = nil }()
	r, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref,
		zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: band})
	if err != nil {
		t.Fatalf("prepare strips: %v", err)
	}
	defer r.Release()
	sr, ok := r.(*ssim2StripRef)
	if !ok {
		t.Fatalf("strip prepare returned %T", r)
	}
	n, kept := sr.Strips()
	if kept != keep {
		t.Fatalf("kept = %v, want %v", kept, keep)
	}
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score strips: %v", err)
	}
	return s.Value, n
}

// Strips against the full image: |Δ| ≤ 0.02 (the bound), and in
// fact ≤ 1e-5: with the recursion state carried the maps are the full
// image's and only the summation order differs (~1e-7; restarting the
// recursion in the halo gave up to 0.11 here). Kept and recomputed
// references bit-identical to each other, identical images exactly 100;
// odd heights (partial rows at the coarse scales), alpha (two backgrounds)
// and 16-bit gray.
func TestSSIM2StripsMatchFull(t *testing.T) {
	b := webgpu.NewBackendOn(gputest.Device(t))
	maxd := 0.0
	for _, tc := range []struct {
		w, h, band, minStrips int
		f                     zenmetrics.PixelFormat
	}{
		{203, 1100, 128, 5, zenmetrics.RGB8}, // odd sizes, crops of 448 rows
		{160, 900, 256, 3, zenmetrics.RGBA8}, // alpha: two backgrounds
		{96, 700, 32, 10, zenmetrics.Gray16}, // 32-row bands: crops mostly halo
	} {
		ref, dist := metrictest.Synthetic(tc.w, tc.h, int64(tc.w+tc.h), tc.f)
		full := gpuSSIM2(t, b, ref, dist)
		var vals [2]float64
		for i, keep := range []bool{true, false} {
			v, n := ssim2StripScore(t, b, ref, dist, tc.band, keep)
			if n < tc.minStrips {
				t.Fatalf("%dx%d band %d: %d strips, want at least %d", tc.w, tc.h, tc.band, n, tc.minStrips)
			}
			d := math.Abs(v - full)
			maxd = math.Max(maxd, d)
			if d > 0.02 || math.IsNaN(v) {
				t.Errorf("%dx%d %v keep=%v: strips %.9f full %.9f |Δ| %.3g > 0.02", tc.w, tc.h, tc.f, keep, v, full, d)
			} else if d > 1e-5 {
				// Within the bound, but the carried recursion gives
				// the full image's maps: only summation order should differ.
				t.Errorf("%dx%d %v keep=%v: strips %.9f full %.9f |Δ| %.3g > 1e-5", tc.w, tc.h, tc.f, keep, v, full, d)
			}
			vals[i] = v
			t.Logf("%dx%d %v band %d: %d strips keep=%v: %.9f (full %.9f) |Δ| %.2e", tc.w, tc.h, tc.f, tc.band, n, keep, v, full, d)
		}
		if math.Float64bits(vals[0]) != math.Float64bits(vals[1]) {
			t.Errorf("%dx%d %v: kept %.12f vs recomputed %.12f", tc.w, tc.h, tc.f, vals[0], vals[1])
		}
		if same, _ := ssim2StripScore(t, b, ref, ref, tc.band, true); same != 100 {
			t.Errorf("%dx%d %v: identical images score %.10f in strips, want exactly 100", tc.w, tc.h, tc.f, same)
		}
	}
	t.Logf("max |Δ| strips vs full: %.2e", maxd)
}

// A cached strip reference gives, for each of several distorted images,
// the one-shot strip score bit for bit, and differs from the full score by
// the same small amount.
func TestSSIM2StripCached(t *testing.T) {
	b := webgpu.NewBackendOn(gputest.Device(t))
	ctx := context.Background()
	ref, d1 := metrictest.SyntheticPair(150, 700, 21)
	_, d2 := metrictest.SyntheticPair(150, 700, 22)
	opt := zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: 96}
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if n, _, _ := webgpu.StripInfo(r); n < 3 {
		t.Fatalf("%d strips, the test needs several", n)
	}
	for _, d := range []*zenmetrics.Image{d1, d2, d1} {
		c, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		once, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, d, opt)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(c.Value) != math.Float64bits(once.Value) {
			t.Errorf("cached strip score %.12f, one-shot %.12f", c.Value, once.Value)
		}
		if full := gpuSSIM2(t, b, ref, d); math.Abs(c.Value-full) > 0.02 {
			t.Errorf("cached strips %.9f vs full %.9f", c.Value, full)
		}
	}
	if _, err := r.Score(ctx, ref); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if _, err := r.Score(ctx, d1); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Errorf("after Release: %v", err)
	}
}

// The planner: a budget below the full estimate gives strips whose
// predicted bytes fit it; kept reference state where it fits at bands
// cheap enough, recomputed where it does not; out of memory when not one
// strip fits; the binding limit alone cuts bands too.
func TestPlanSSIM2Strips(t *testing.T) {
	const w, h = 1000, 6000
	full := ssim2Estimate(w, h, 1, 3*w*h)
	sawKept, sawRec := false, false
	for _, frac := range []float64{1.2, 1.5, 2, 4, 8} {
		budget := int64(float64(full) / frac)
		p, err := planSSIM2Strips(w, h, 1, 3, budget, 1<<30, 0)
		if err != nil {
			t.Fatalf("budget 1/%g: %v", frac, err)
		}
		if p.bytes > budget || len(p.strips) < 2 {
			t.Errorf("budget 1/%g (%d): %d strips, predicted %d bytes", frac, budget, len(p.strips), p.bytes)
		}
		if p.keep && p.bytes != p.keptBytes || !p.keep && p.bytes != p.recBytes {
			t.Errorf("budget 1/%g: keep %v but bytes %d (kept %d, recomputed %d)", frac, p.keep, p.bytes, p.keptBytes, p.recBytes)
		}
		sawKept, sawRec = sawKept || p.keep, sawRec || !p.keep
		t.Logf("budget 1/%g of full (%.1f MiB): %d strips of %d-row crops (%d rows), keep %v, predicted %.1f MiB",
			frac, float64(budget)/(1<<20), len(p.strips), p.maxCrop, p.cropRows, p.keep, float64(p.bytes)/(1<<20))
	}
	if !sawKept || !sawRec {
		t.Errorf("budgets from 1/1.2 to 1/8 of full: kept seen %v, recomputed seen %v; want both", sawKept, sawRec)
	}
	if _, err := planSSIM2Strips(w, h, 1, 3, 1<<20, 1<<30, 0); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("1 MiB budget: %v, want out of memory", err)
	}
	// Binding limit of 600 rows of one channel's float pyramid (bounded
	// by 6 B/px, planSSIM2Strips), memory unknown: crops of at most 600
	// rows, kept.
	p, err := planSSIM2Strips(w, h, 1, 3, -1, 600*6*w, 0)
	if err != nil || p.maxCrop > 600 || !p.keep || len(p.strips) < 2 {
		t.Errorf("binding-limited: %d strips of %d rows, keep %v, err %v", len(p.strips), p.maxCrop, p.keep, err)
	}
	// A forced band: kept unless the budget refuses it.
	if p, err := planSSIM2Strips(w, h, 1, 3, -1, 1<<30, 256); err != nil || !p.keep || len(p.strips) != 24 {
		t.Errorf("forced 256-row bands: %d strips, keep %v, err %v", len(p.strips), p.keep, err)
	}
	if p, err := planSSIM2Strips(w, h, 1, 3, full/8, 1<<30, 256); err != nil || p.keep {
		t.Errorf("forced 256-row bands under 1/8 of full: keep %v, err %v", p.keep, err)
	}
}

// A VRAM budget below the full estimate makes Estimate refuse full images
// and Prepare return out of memory, while strips fit under it and score
// the full image's value; the measured peak stays within the prediction.
func TestSSIM2BudgetForcesStrips(t *testing.T) {
	dev := gputest.Device(t)
	b := webgpu.NewBackendOn(dev)
	const w, h = 300, 3000
	ref, dist := metrictest.SyntheticPair(w, h, 7)
	ctx := context.Background()
	full, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.SSIMULACRA2, ref, dist, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fullBytes, ok := b.Estimate(zenmetrics.SSIMULACRA2, w, h, zenmetrics.ModeFull)
	if !ok {
		t.Fatal("full estimate refused without a budget")
	}
	budget := fullBytes / 3
	b.SetVRAMBudget(budget)
	defer b.SetVRAMBudget(0)
	if _, ok := b.Estimate(zenmetrics.SSIMULACRA2, w, h, zenmetrics.ModeFull); ok {
		t.Error("full estimate accepted above the budget")
	}
	stripBytes, ok := b.Estimate(zenmetrics.SSIMULACRA2, w, h, zenmetrics.ModeStrip)
	if !ok || stripBytes > budget {
		t.Errorf("strip estimate %d, %v under a budget of %d", stripBytes, ok, budget)
	}
	if _, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{}); !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Errorf("full prepare above the budget: %v, want out of memory", err)
	}
	var s zenmetrics.Score
	var n int
	var kept bool
	peak, _, err := b.MeasureMemory(ctx, func() error {
		r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip})
		if err != nil {
			return err
		}
		defer r.Release()
		n, kept, _ = webgpu.StripInfo(r)
		s, err = r.Score(ctx, dist)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Errorf("%d strip(s) under a third of the full budget", n)
	}
	if d := math.Abs(s.Value - full.Value); d > 0.02 {
		t.Errorf("budget strips %.9f, full %.9f", s.Value, full.Value)
	}
	// The plan for this RGB8 image (Estimate assumes RGBA16 with alpha).
	p, err := planSSIM2Strips(w, h, 1, 3, b.Available(), dev.Limits().MaxStorageBufferBindingSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	if peak > p.bytes*11/10 {
		t.Errorf("measured peak %d bytes, predicted %d", peak, p.bytes)
	}
	t.Logf("budget %.1f MiB: %d strips (kept %v), %.9f vs full %.9f (|Δ| %.2e); predicted %.2f MiB (Estimate, RGBA16 worst case %.2f), measured peak %.2f MiB, full %.2f MiB",
		float64(budget)/(1<<20), n, kept, s.Value, full.Value, math.Abs(s.Value-full.Value),
		float64(p.bytes)/(1<<20), float64(stripBytes)/(1<<20), float64(peak)/(1<<20), float64(fullBytes)/(1<<20))
}

// Kept vs recomputed reference state: time per Score of a cached strip
// reference and device bytes held (2048² too with ZENMETRICS_BIG=1). Logs
// the numbers the strategy choice rests on; checks only that both agree.
func TestSSIM2StripKeptVsRecomputed(t *testing.T) {
	if testing.Short() {
		t.Skip("timing skipped with -short")
	}
	dev := gputest.Device(t)
	b := webgpu.NewBackendOn(dev)
	sizes := []struct{ side, band int }{{1024, 256}}
	if os.Getenv("ZENMETRICS_BIG") == "1" {
		sizes = append(sizes, struct{ side, band int }{2048, 512})
	}
	for _, tc := range sizes {
		ref, dist := metrictest.SyntheticPair(tc.side, tc.side, 3)
		opt := zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: tc.band}
		var vals [2]float64
		for i, keep := range []bool{true, false} {
			forceKeep = &keep
			ctx := context.Background()
			m, err := webgpu.StartMeter(ctx, dev)
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, opt)
			if err != nil {
				t.Fatal(err)
			}
			n, _, _ := webgpu.StripInfo(r)
			if _, err := r.Score(ctx, dist); err != nil { // warm-up
				t.Fatal(err)
			}
			const runs = 3
			var best time.Duration
			for range runs {
				t0 := time.Now()
				s, err := r.Score(ctx, dist)
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(t0); best == 0 || d < best {
					best = d
				}
				vals[i] = s.Value
			}
			r.Release()
			held, _, err := m.Finish(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d² in %d strips (band %d), keep=%v: best Score %v of %d, peak held %.1f MiB", tc.side, n, tc.band, keep,
				best.Round(time.Millisecond), runs, float64(held)/(1<<20))
		}
		forceKeep = nil
		if math.Float64bits(vals[0]) != math.Float64bits(vals[1]) {
			t.Errorf("%d²: kept %.12f vs recomputed %.12f", tc.side, vals[0], vals[1])
		}
	}
}

// 64 MP on lavapipe (128 MiB bindings: a full plane would be 256 MiB):
// strips chosen by the backend score it, against the CPU reference when
// ZENMETRICS_BIG_CPU=1 too. Slow on 2 cores; ZENMETRICS_BIG=1.
func TestSSIM2Strips64MP(t *testing.T) {
	if os.Getenv("ZENMETRICS_BIG") != "1" {
		t.Skip("set ZENMETRICS_BIG=1 for the 64 MP strip test")
	}
	dev := gputest.Device(t)
	b := webgpu.NewBackendOn(dev)
	const side = 8192
	ref, dist := metrictest.SyntheticPair(side, side, 64)
	ctx := context.Background()
	_, fullOK := b.Estimate(zenmetrics.SSIMULACRA2, side, side, zenmetrics.ModeFull)
	est, ok := b.Estimate(zenmetrics.SSIMULACRA2, side, side, zenmetrics.ModeStrip)
	if !ok {
		t.Fatal("strip estimate refused at 64 MP")
	}
	m, err := webgpu.StartMeter(ctx, dev)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip})
	if err != nil {
		t.Fatal(err)
	}
	tp := time.Since(t0)
	s, err := r.Score(ctx, dist)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Since(t0) - tp
	n, kept, _ := webgpu.StripInfo(r)
	r.Release()
	held, nv, err := m.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(s.Value) || s.Value <= 0 || s.Value >= 100 {
		t.Errorf("64 MP: score %v", s.Value)
	}
	t.Logf("64 MP: full possible here: %v; %d strips (kept %v); prepare %v, score %v; %.9f; predicted %.0f MiB, measured peak %.0f MiB (nvml Δ %d)",
		fullOK, n, kept, tp.Round(time.Millisecond), ts.Round(time.Millisecond), s.Value,
		float64(est)/(1<<20), float64(held)/(1<<20), nv)
	if os.Getenv("ZENMETRICS_BIG_CPU") == "1" {
		t1 := time.Now()
		want, err := ssim2.Score(ref, dist, ssim2.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(s.Value - want); d > 0.02 {
			t.Errorf("64 MP strips %.9f vs CPU %.9f", s.Value, want)
		}
		t.Logf("64 MP: CPU reference %.9f (%v), |Δ| strips vs CPU %.2e", want, time.Since(t1).Round(time.Second), math.Abs(s.Value-want))
	}
}
