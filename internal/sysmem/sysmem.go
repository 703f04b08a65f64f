// Package sysmem reports how much memory this process may use, for the
// default memory budget of the CLIs and the CPU backend: the physical
// memory, or a smaller cgroup limit (a Kubernetes or Slurm job's memory
// limit) where there is one. capability probes the same physical figure
// for its profile; this package sits lower so the backends can use it.
package sysmem

import "sync"

var (
	once  sync.Once
	total int64
)

// Total is the memory available to the process in bytes: the smaller of
// the physical memory and the cgroup limit (Linux), 0 when unknown.
func Total() int64 {
	once.Do(func() { total = probe() })
	return total
}

// unknownBudget is the default budget where Total is unknown: within
// what any machine that runs a batch has, large enough for the CPU scoring
// of a 50 MP pair.
const unknownBudget = 8 << 30

// DefaultBudget is the default memory budget: three quarters of Total,
// leaving room for the Go runtime's own overhead (the heap may grow to
// about twice the live data between collections unless a memory limit is
// set), the OS and other processes; 8 GiB when Total is unknown.
func DefaultBudget() int64 {
	t := Total()
	if t <= 0 {
		return unknownBudget
	}
	return t / 4 * 3
}
