package capability

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// orderBackend is a scriptBackend that also logs "name side" per score.
type orderBackend struct {
	scriptBackend
	log *[]string
	mu  *sync.Mutex
}

func (o *orderBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	o.mu.Lock()
	*o.log = append(*o.log, fmt.Sprintf("%s %d", o.name, ref.Width))
	o.mu.Unlock()
	return o.scriptBackend.Prepare(ctx, m, ref, opt)
}

// The full-image cells of every size run before any strip cell past the
// priming, so a tight limit cuts strips, not the largest full cells the
// chooser's CUDA-against-WebGPU choice needs.
func TestBenchFullCellsFirst(t *testing.T) {
	clock := newFakeClock()
	var log []string
	var mu sync.Mutex
	cost := func(_ int, px int64) time.Duration { return time.Duration(px) * 10 * time.Millisecond / 4096 }
	mk := func(name string) *orderBackend {
		return &orderBackend{scriptBackend: scriptBackend{name: name, clock: clock, cost: cost}, log: &log, mu: &mu}
	}
	full, strip := mk("full"), mk("strip")
	// 64²: 10 ms a run, 128²: 40 ms, 256²: 160 ms; each cell a warm-up,
	// settling and up to five runs. 1.3 s holds the full target's three
	// cells (≈ 1.06 s) and the strip target's 64², not its larger ones;
	// size by size, the strip 128² cell ran before full 256², which the
	// limit then cut.
	rep := scriptBench(t, clock, []int{64, 128, 256}, []BenchTarget{
		{Class: ClassGPUFull, Backend: full, Lane: "gpu0", Mode: zenmetrics.ModeFull},
		{Class: ClassGPUStrip, Backend: strip, Lane: "gpu0", Mode: zenmetrics.ModeStrip},
	}, func(c *BenchConfig) {
		c.TimeLimit = 1300 * time.Millisecond
		c.Settle = SettleConfig{Ramp: time.Millisecond, Cap: 50 * time.Millisecond}
	})
	got := map[string]BenchResult{}
	for _, r := range rep.Results {
		got[fmt.Sprintf("%s %d", r.Class, r.Side)] = r
	}
	if r := got["gpu_full 256"]; r.NsPerPx <= 0 {
		t.Errorf("full 256² not measured: %+v", r)
	}
	if r := got["gpu_strip 256"]; !strings.HasPrefix(r.Skipped, "time limit") {
		t.Errorf("strip 256² should be cut by the limit: %+v", r)
	}
	// Past the priming (one task per target at the smallest size), no
	// strip task runs before the last full one.
	lastFull, firstStrip := -1, len(log)
	for i, e := range log[2:] {
		switch {
		case strings.HasPrefix(e, "full"):
			lastFull = i
		case strings.HasPrefix(e, "strip") && i < firstStrip:
			firstStrip = i
		}
	}
	if lastFull > firstStrip {
		t.Errorf("a strip task (%d) ran before the last full one (%d): %v", firstStrip, lastFull, log)
	}
}

// A GPU target over DominatedFactor times the fastest at two sizes in a
// row is not benched at larger sizes; one within it always is.
func TestBenchSkipsDominated(t *testing.T) {
	for _, c := range []struct {
		slow    float64
		skipped bool
	}{{10, true}, {3, false}} {
		clock := newFakeClock()
		per := func(f float64) func(int, int64) time.Duration {
			return func(_ int, px int64) time.Duration { return time.Duration(f * float64(px)) }
		}
		fast := &scriptBackend{name: "cuda", clock: clock, cost: per(1)}
		slow := &scriptBackend{name: "webgpu", clock: clock, cost: per(c.slow)}
		rep := scriptBench(t, clock, []int{32, 64, 128, 256}, []BenchTarget{
			{Class: ClassGPUFull, Backend: slow, Lane: "gpu0"},
			{Class: ClassCUDAFull, Backend: fast, Lane: "gpu0"},
		}, func(cfg *BenchConfig) {
			cfg.TimeLimit = time.Hour
			cfg.Settle = SettleConfig{Ramp: time.Microsecond, Cap: time.Millisecond}
		})
		for _, r := range rep.Results {
			dom := strings.HasPrefix(r.Skipped, "dominated")
			want := c.skipped && r.Class == ClassGPUFull && r.Side >= 128
			if dom != want || (!dom && r.NsPerPx <= 0) {
				t.Errorf("%.0f× slower: %s %d²: skipped %q, ns/px %.2f; want dominated %v", c.slow, r.Class, r.Side, r.Skipped, r.NsPerPx, want)
			}
		}
	}
}

// Priming (compiling every metric's kernels) up to PrimeAllowance is not
// counted against the limit: a cold kernel cache does not cost the
// largest cells. Past the allowance it counts again.
func TestBenchPrimeAllowance(t *testing.T) {
	for _, c := range []struct {
		prime, allowance time.Duration
		largest          bool // the 128² cell measured
	}{
		{1500 * time.Millisecond, 0, true}, // the default 2 s covers it
		{1500 * time.Millisecond, -1, false},
		{5 * time.Second, 0, false}, // 3 s of it counts
		{5 * time.Second, 5 * time.Second, true},
	} {
		clock := newFakeClock()
		// The first task (the priming) takes c.prime; then 64²: 10 ms a
		// run, 128²: 40 ms, the two cells ≈ 0.1 and 0.3 s. A 1.7 s limit
		// holds both after no counted priming, not after 1.5 s of it.
		gpu := &scriptBackend{name: "gpu", clock: clock, cost: func(n int, px int64) time.Duration {
			if n == 0 {
				return c.prime
			}
			return time.Duration(px) * 10 * time.Millisecond / 4096
		}}
		rep := scriptBench(t, clock, []int{64, 128}, []BenchTarget{{Class: ClassGPUFull, Backend: gpu}}, func(cfg *BenchConfig) {
			cfg.TimeLimit = 1700 * time.Millisecond
			cfg.PrimeAllowance = c.allowance
			cfg.Settle = SettleConfig{Ramp: time.Millisecond, Cap: 50 * time.Millisecond}
		})
		for _, r := range rep.Results {
			if r.Side == 128 && (r.NsPerPx > 0) != c.largest {
				t.Errorf("priming %v, allowance %v: 128² measured %v, want %v (%+v)", c.prime, c.allowance, r.NsPerPx > 0, c.largest, r)
			}
		}
	}
}
