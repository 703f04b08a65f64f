//go:build unix

package cvvdp

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time of this process so far; the
// benchmarks report it per operation next to wall time, since this machine
// is shared and wall time includes waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
