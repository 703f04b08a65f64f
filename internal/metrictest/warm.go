package metrictest

import (
	"testing"
	"time"
)

// GPUWarmTime is how long WarmGPU keeps a GPU busy before a benchmark's
// timer starts. An idle GPU runs at low clocks and needs a fraction of a
// second of work to reach full speed: on the H200, zensim's first nine
// one-caller 16 MP scores after a pause waited 17.6 ms each for the GPU
// and the next ones 4.5 ms (ZENMETRICS_PIPE_TRACE), so a benchmark timed
// from a single warm-up score measured mostly the clock ramp.
const GPUWarmTime = 300 * time.Millisecond

// WarmGPU calls score until GPUWarmTime has passed (at least three times),
// failing tb on the first error; call it before the timer starts.
func WarmGPU(tb testing.TB, score func() error) {
	tb.Helper()
	t0 := time.Now()
	for n := 0; n < 3 || time.Since(t0) < GPUWarmTime; n++ {
		if err := score(); err != nil {
			tb.Fatal(err)
		}
	}
}
