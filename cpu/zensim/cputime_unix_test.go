//go:build unix

package zensim

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used. The
// benchmarks report it per operation beside the wall time, because on a
// shared machine the wall time of a single-threaded run also counts the
// time other processes held the core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
