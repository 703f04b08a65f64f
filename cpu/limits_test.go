package cpu

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
)

// TestButteraugliTooSmall: two unrelated 1×5000 images (libjxl's tool
// prints 0 for them) are refused with ErrBadInput, and Estimate says no.
func TestButteraugliTooSmall(t *testing.T) {
	b := New(Config{})
	defer b.Close()
	for _, sz := range [][2]int{{1, 5000}, {5000, 1}, {7, 7}} {
		ref := zenmetrics.NewImage(sz[0], sz[1], zenmetrics.RGB8)
		for i := range ref.Pix {
			ref.Pix[i] = byte(i * 7)
		}
		_, err := b.Prepare(context.Background(), zenmetrics.Butteraugli, ref, zenmetrics.Options{})
		var ts *zenmetrics.TooSmallError
		if !errors.Is(err, zenmetrics.ErrBadInput) || !errors.As(err, &ts) || ts.MinWidth != 8 || ts.MinHeight != 8 {
			t.Errorf("%v: Prepare error %v, want a TooSmallError (8×8) matching ErrBadInput", sz, err)
		}
		if _, ok := b.Estimate(zenmetrics.Butteraugli, sz[0], sz[1], zenmetrics.ModeFull); ok {
			t.Errorf("%v: Estimate ok for an image Prepare refuses", sz)
		}
	}
	// 8×8 is scored.
	ref := zenmetrics.NewImage(8, 8, zenmetrics.RGB8)
	r, err := b.Prepare(context.Background(), zenmetrics.Butteraugli, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatalf("8×8: %v", err)
	}
	r.Release()
}

// TestMemBudget: a reference whose working set exceeds MemBudget is
// refused with ErrOutOfMemory before anything proportional to it is
// allocated; the same reference prepares under a budget that fits.
// Butteraugli and SSIMULACRA2 over the budget are scored in strips when a
// strip fits, with the full image's scores (Butteraugli: tolerance 0, see
// cpu/butteraugli's strip.go; SSIMULACRA2: 1e-6, the GPU strips' contract,
// though cpu/ssim2's strips are bit-identical too, see its strip.go).
func TestMemBudget(t *testing.T) {
	ref := zenmetrics.NewImage(256, 600, zenmetrics.RGB8)
	dist := zenmetrics.NewImage(256, 600, zenmetrics.RGB8)
	for i := range ref.Pix {
		ref.Pix[i] = byte(i * 7 % 251)
		dist.Pix[i] = byte(i * 7 % 253)
	}
	ctx := context.Background()
	images := 2 * int64(len(ref.Pix))
	for _, c := range []struct {
		m      zenmetrics.Metric
		budget func(full int64) int64 // budget for a refusal
	}{
		// Not even the least strip working set fits.
		{zenmetrics.SSIMULACRA2, func(int64) int64 { return images + ssim2.MinStripBytes(256, 600) - 1 }},
		// Not even a 2-row strip (EstimateBytes of 2+2·84 rows) fits.
		{zenmetrics.Butteraugli, func(int64) int64 { return images + 150*256*200 }},
	} {
		full, ok := New(Config{MemBudget: -1}).WorkingSet(c.m, ref.Width, ref.Height, 3)
		if !ok {
			t.Fatalf("%v: no working set", c.m)
		}
		tight := New(Config{MemBudget: c.budget(full)})
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		_, err := tight.Prepare(ctx, c.m, ref, zenmetrics.Options{})
		runtime.ReadMemStats(&b)
		var oom *zenmetrics.OutOfMemoryError
		if !errors.Is(err, zenmetrics.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Free != c.budget(full) {
			t.Fatalf("%v: budget %d < need %d: error %v, want OutOfMemoryError", c.m, c.budget(full), full, err)
		}
		// Bound: 64 KiB, for the error value and its message; the
		// working set refused is some 30 MB.
		if d := b.TotalAlloc - a.TotalAlloc; d > 64<<10 {
			t.Errorf("%v: refusing allocated %d bytes", c.m, d)
		}
		r, err := New(Config{MemBudget: full}).Prepare(ctx, c.m, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatalf("%v: budget = need: %v", c.m, err)
		}
		r.Release()
	}
	// One byte short of the full working set, and just above the smallest
	// strip: strips, with the full image's scores.
	for _, m := range []zenmetrics.Metric{zenmetrics.Butteraugli, zenmetrics.SSIMULACRA2} {
		full, _ := New(Config{MemBudget: -1}).WorkingSet(m, ref.Width, ref.Height, 3)
		budgets := []int64{full - 1}
		if m == zenmetrics.SSIMULACRA2 {
			budgets = append(budgets, images+ssim2.MinStripBytes(256, 600))
		}
		whole := New(Config{MemBudget: -1})
		opt := zenmetrics.Options{PNorm: 2}
		want, err := zenmetrics.ScoreOnce(ctx, whole, m, ref, dist, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, budget := range budgets {
			short := New(Config{})
			short.SetMemBudget(budget)
			n, _ := short.WorkingSet(m, ref.Width, ref.Height, 3)
			if n >= full || n > budget {
				t.Errorf("%v budget %d: strip working set %d, full %d", m, budget, n, full)
			}
			r, err := short.Prepare(ctx, m, ref, opt)
			if err != nil {
				t.Fatalf("%v budget %d (full %d): %v, want strips", m, budget, full, err)
			}
			band, ok := r.(interface{ Band() int })
			if !ok {
				r.Release()
				t.Fatalf("%v budget %d: %T, want a strip reference", m, budget, r)
			}
			got, err := r.Score(ctx, dist)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v budget %d (full %d): band %d, working set %d, strips %.10f, full %.10f", m, budget, full,
				band.Band(), n, got.Value, want.Value)
			switch m {
			case zenmetrics.Butteraugli:
				if got.Value != want.Value || got.Extras["pnorm3"] != want.Extras["pnorm3"] || got.Extras["pnorm"] != want.Extras["pnorm"] {
					t.Errorf("strips %v %v, full %v %v", got.Value, got.Extras, want.Value, want.Extras)
				}
			case zenmetrics.SSIMULACRA2:
				if !(math.Abs(got.Value-want.Value) <= 1e-6) {
					t.Errorf("SSIMULACRA2 strips %.10f, full %.10f", got.Value, want.Value)
				}
			}
		}
	}
}
