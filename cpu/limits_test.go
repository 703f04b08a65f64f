package cpu

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
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
func TestMemBudget(t *testing.T) {
	ref := zenmetrics.NewImage(512, 384, zenmetrics.RGB8)
	for _, m := range []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli} {
		probe := New(Config{MemBudget: -1})
		need, ok := probe.WorkingSet(m, ref.Width, ref.Height, 3)
		if !ok {
			t.Fatalf("%v: no working set", m)
		}
		tight := New(Config{MemBudget: need - 1})
		var a, c runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		_, err := tight.Prepare(context.Background(), m, ref, zenmetrics.Options{})
		runtime.ReadMemStats(&c)
		var oom *zenmetrics.OutOfMemoryError
		if !errors.Is(err, zenmetrics.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Requested != need {
			t.Fatalf("%v: budget %d < need %d: error %v, want OutOfMemoryError", m, need-1, need, err)
		}
		// Bound: 64 KiB, for the error value and its message; the
		// working set refused is some 40 MB.
		if d := c.TotalAlloc - a.TotalAlloc; d > 64<<10 {
			t.Errorf("%v: refusing allocated %d bytes", m, d)
		}
		r, err := New(Config{MemBudget: need}).Prepare(context.Background(), m, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatalf("%v: budget = need: %v", m, err)
		}
		r.Release()
	}
}
