package cudatest

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
)

// Held is the bytes the buffers fa allocated hold (with cuda.AllocSize's
// rounding, as NewFake's allocator rounds): what a memory model must
// equal, since Prepare checks the model and then allocates the buffers.
func Held(fa *cudaemu.FakeAlloc) int64 {
	var n int64
	for _, b := range fa.Bufs {
		n += b.Size
	}
	return n
}

// BudgetPlan is what StripBudgets needs of a metric's strip plan.
type BudgetPlan struct {
	Bands int  // bands of the plan
	Rows  int  // rows of its tallest crop
	Keep  bool // whether the reference's planes stay resident
	// Memory is the plan's modelled memory, Held what its reference's
	// and one slot's buffers hold when allocated (Held of a fake).
	Memory, Held int64
}

// StripBudgets checks a metric's strip planner under falling budgets,
// fracs of full: plan(budget) must make a plan whose memory fits the
// budget, with no fewer bands than the plan of the budget before (a
// smaller budget never buys a coarser plan), whose buffers hold exactly
// its model (Prepare checks the model against the free memory, then
// allocates the buffers). The plans are logged.
func StripBudgets(t *testing.T, full int64, fracs []float64, plan func(budget int64) (BudgetPlan, error)) {
	t.Helper()
	last := 1
	for _, frac := range fracs {
		budget := int64(frac * float64(full))
		p, err := plan(budget)
		if err != nil {
			t.Fatalf("budget %.2f: %v", frac, err)
		}
		if p.Memory > budget || p.Bands < last {
			t.Errorf("budget %.2f of %d: %d bands (keep %v) use %d", frac, full, p.Bands, p.Keep, p.Memory)
		}
		last = p.Bands
		if p.Held != p.Memory {
			t.Errorf("budget %.2f: buffers hold %d, the model says %d", frac, p.Held, p.Memory)
		}
		t.Logf("budget %.2f of %d MiB: %d bands of %d crop rows, keep %v, %d MiB", frac, full>>20, p.Bands, p.Rows, p.Keep, p.Memory>>20)
	}
}

// StripEstimates checks a metric's strip estimate (estimateStrips: the
// memory of the plan within a budget, and whether there is one): within
// budget it proposes a plan of at most budget, within 1 MiB none, so
// that Estimate(ModeStrip) declines and the ladder goes on to the CPU.
func StripEstimates(t *testing.T, est func(budget int64) (int64, bool), budget int64) {
	t.Helper()
	if b, ok := est(budget); !ok || b > budget {
		t.Errorf("estimateStrips within %d: %d %v", budget, b, ok)
	}
	if _, ok := est(1 << 20); ok {
		t.Error("estimateStrips within 1 MiB accepted")
	}
}

// StripOneBand checks that plan, given full, the memory of a plan of one
// band as tall as the image, takes exactly that: one band with the
// reference kept (a budget for the whole image buys the whole image, and
// the policy prefers the resident reference).
func StripOneBand(t *testing.T, full int64, plan func(budget int64) (BudgetPlan, error)) {
	t.Helper()
	p, err := plan(full)
	if err != nil || p.Bands != 1 || !p.Keep {
		t.Fatalf("the one-band memory: %v, %+v", err, p)
	}
}
