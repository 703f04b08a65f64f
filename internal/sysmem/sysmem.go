// Package sysmem reports how much memory this process may use, for the
// default memory budget of the CLIs and the CPU backend: the physical
// memory, or a smaller cgroup limit (a Kubernetes or Slurm job's memory
// limit) where there is one. capability probes the same physical figure
// for its profile; this package sits lower so the backends can use it.
package sysmem

import "sync"

var (
	once             sync.Once
	total, available int64
)

// Total is the memory the process may use in bytes: the smaller of the
// physical memory and the cgroup limit (Linux), 0 when unknown.
func Total() int64 {
	once.Do(func() { total, available = probe() })
	return total
}

// Available is the memory free for new allocations when the process
// started (Linux MemAvailable, lowered to what the cgroup limit leaves;
// Windows ullAvailPhys), 0 when unknown.
func Available() int64 {
	Total()
	return available
}

// unknownBudget is the default budget where Total is unknown: within
// what any machine that runs a batch has, large enough for the CPU scoring
// of a 50 MP pair.
const unknownBudget = 8 << 30

// DefaultBudget is the default memory budget: three quarters of Total,
// leaving room for the OS and the runtime's overhead, and at most nine
// tenths of what was Available at start, so that a machine shared with
// other processes is not overcommitted (the kernel's OOM killer would end
// the run where the budget meant to refuse a pair); 8 GiB when Total is
// unknown. The CLIs also set it as the Go runtime's soft memory limit
// (SoftLimit), so that the heap stays near the live data the budget
// predicts instead of growing to twice it between collections.
func DefaultBudget() int64 {
	t := Total()
	if t <= 0 {
		return unknownBudget
	}
	b := t / 4 * 3
	if a := Available(); a > 0 {
		b = min(b, a/10*9)
	}
	return b
}

// SoftLimit is the Go runtime memory limit (debug.SetMemoryLimit) for a
// process working under budget: the budget plus an eighth and 64 MiB for
// what the prediction does not count (goroutine stacks, the runtime's own
// structures, small allocations). It is a guard that makes the collector
// work harder near the budget, not the mechanism: the budget refuses a
// pair before allocating, because a failed allocation aborts a Go program.
func SoftLimit(budget int64) int64 {
	if budget <= 0 {
		return -1
	}
	return budget + budget/8 + 64<<20
}
