package webgpu

import (
	"time"

	"golang.org/x/sys/windows"
)

// processCPU is the user+system CPU time this process has used so far (all
// its threads, a software adapter's driver threads included); ok is false
// when the OS cannot say.
func processCPU() (time.Duration, bool) {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		return 0, false
	}
	// FILETIME counts 100 ns ticks.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(k) + ticks(u)) * 100), true
}
