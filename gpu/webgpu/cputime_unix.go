//go:build darwin || linux || freebsd || netbsd || openbsd

package webgpu

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used so far (all
// its threads, a software adapter's driver threads included); ok is false
// when the OS cannot say.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
