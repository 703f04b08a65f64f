package capability

import (
	"testing"
	"time"
)

// Two GPU targets too close to tell apart in their own cells get a runoff,
// timed alternately, and the routing follows it: here WebGPU's cell ran
// fast and noisy (median 1.0 ns/px, ±20 %) while CUDA's ran a steady
// 1.05, but WebGPU is really 1.6 (as on the H200, where a quick cell of
// 1.24 ±15 % was 1.68 in a thorough bench). A clear winner gets none.
func TestBenchRunoffSettlesCloseCalls(t *testing.T) {
	for _, c := range []struct {
		cuda   float64 // CUDA's ns/px
		runoff bool
	}{{1.05, true}, {2.0, false}} {
		clock := newFakeClock()
		cuda := &scriptBackend{name: "cuda", clock: clock}
		cuda.cost = func(_ int, px int64) time.Duration { return time.Duration(c.cuda * float64(px)) }
		noisy := []float64{1.0, 1.3, 0.9, 1.25, 0.95}
		webgpu := &scriptBackend{name: "webgpu", clock: clock, cost: func(n int, px int64) time.Duration {
			cuda.mu.Lock()
			later := cuda.n > 1 // CUDA's cell has begun (its first score primes)
			cuda.mu.Unlock()
			if later {
				return time.Duration(1.6 * float64(px))
			}
			return time.Duration(noisy[n%len(noisy)] * float64(px))
		}}
		rep := scriptBench(t, clock, []int{256}, []BenchTarget{
			{Class: ClassGPUFull, Backend: webgpu, Lane: "gpu0"},
			{Class: ClassCUDAFull, Backend: cuda, Lane: "gpu0"},
		}, func(cfg *BenchConfig) {
			cfg.TimeLimit = time.Hour
			cfg.Settle = SettleConfig{Cap: -1}
		})
		got := map[string]BenchResult{}
		for _, r := range rep.Results {
			got[r.Class] = r
		}
		w, cu := got[ClassGPUFull], got[ClassCUDAFull]
		if !c.runoff {
			if w.Runoff != 0 || cu.Runoff != 0 {
				t.Errorf("clear winner (CUDA %.2f): runoff ran: %+v %+v", c.cuda, w, cu)
			}
			continue
		}
		if w.Runoff != RunoffRuns || cu.Runoff != RunoffRuns || len(w.Runs) != len(cu.Runs) {
			t.Fatalf("close call: want %d runoff runs each: WebGPU %d of %d runs, CUDA %d of %d", RunoffRuns, w.Runoff, len(w.Runs), cu.Runoff, len(cu.Runs))
		}
		if w.NsPerPx <= cu.NsPerPx {
			t.Errorf("after the runoff WebGPU %.3f ns/px is still ahead of CUDA %.3f", w.NsPerPx, cu.NsPerPx)
		}
	}
}
