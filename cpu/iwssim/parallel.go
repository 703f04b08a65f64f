package iwssim

import (
	"sync"
	"sync/atomic"
)

// parallelFor runs fn over [0, n) cut into chunks of at most grain items,
// on up to threads goroutines (worker ids 0..threads−1, so callers can index
// per-worker buffers). With threads ≤ 1 it runs on the calling goroutine.
// Which worker runs a chunk never changes what is computed for an index, so
// results do not depend on the thread count. A worker's panic is re-raised
// on the calling goroutine, where the entry points turn it into an error.
func parallelFor(threads, n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	threads = min(threads, chunks)
	if threads <= 1 {
		for lo := 0; lo < n; lo += grain {
			fn(0, lo, min(lo+grain, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicVal atomic.Value
	work := func(worker int) {
		defer func() {
			if v := recover(); v != nil {
				panicVal.CompareAndSwap(nil, panicBox{v})
			}
		}()
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			lo := c * grain
			fn(worker, lo, min(lo+grain, n))
		}
	}
	wg.Add(threads - 1)
	for w := 1; w < threads; w++ {
		go func(w int) {
			defer wg.Done()
			work(w)
		}(w)
	}
	work(0)
	wg.Wait()
	if v := panicVal.Load(); v != nil {
		panic(v.(panicBox).v)
	}
}

type panicBox struct{ v any }

// rowGrain picks a chunk of rows holding some tens of thousands of samples.
func rowGrain(w int) int {
	return max(32768/max(w, 1), 1)
}
