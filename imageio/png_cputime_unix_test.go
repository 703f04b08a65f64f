//go:build unix

package imageio

import "syscall"

// processCPU returns the CPU time (user + system) this process has used,
// in nanoseconds. The PNG benchmarks report it per op beside ns/op: on a
// VM shared with other jobs the wall time per op swings with the load,
// while the CPU time a decode takes does not.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
