package webgpu

import (
	"strings"
	"testing"
	"time"
)

// TestWatchdogClocks checks which clock ends a wait: a software adapter's
// wait survives any wall time while this process's CPU time stays under
// the limit (a loaded machine), ends once the CPU time passes it (a kernel
// that never finishes), and has a wall backstop; a hardware wait ends on
// the wall clock alone. The clocks are fakes, so nothing here is timed.
func TestWatchdogClocks(t *testing.T) {
	var wall, cpu time.Duration
	clk := func(p *time.Duration) func() time.Duration { return func() time.Duration { return *p } }

	soft := newWatchdog(true, clk(&wall), clk(&cpu))
	wall, cpu = 20*time.Minute, 40*time.Second // cold lavapipe JIT at a 1/30 share of the CPU
	if why := soft.expired(); why != "" {
		t.Fatalf("software wait stopped while its CPU time was under the limit: %s", why)
	}
	cpu = waitLimit
	if why := soft.expired(); !strings.Contains(why, "CPU time") {
		t.Fatalf("software wait past its CPU limit: %q", why)
	}
	wall, cpu = softWallLimit, 0
	soft = newWatchdog(true, clk(&wall), clk(&cpu))
	wall = 2 * softWallLimit // a driver waiting on nothing
	if why := soft.expired(); !strings.Contains(why, "software adapter") {
		t.Fatalf("software wait past the wall backstop: %q", why)
	}

	wall, cpu = 0, 0
	hard := newWatchdog(false, clk(&wall), clk(&cpu))
	wall, cpu = waitLimit-time.Second, time.Hour // CPU time is not a hardware GPU's clock
	if why := hard.expired(); why != "" {
		t.Fatalf("hardware wait stopped early: %s", why)
	}
	wall = waitLimit
	if why := hard.expired(); why != "not done after 2 minutes" {
		t.Fatalf("hardware wait past 2 minutes: %q", why)
	}
}

// TestProcessCPU checks the CPU clock moves forward with work done here.
func TestProcessCPU(t *testing.T) {
	c0, ok := processCPU()
	if !ok {
		t.Skip("no process CPU clock on this OS")
	}
	x := 0.0
	for n := 0; n < 5000; n++ { // ~1 ms of work each: seconds in all, while a clock tick is at most 10 ms
		for i := 0; i < 1e6; i++ {
			x += float64(i)
		}
		if c, _ := processCPU(); c > c0 {
			return
		}
	}
	t.Fatalf("the process CPU clock did not move (%v) over ~5 s of work (%g)", c0, x)
}
