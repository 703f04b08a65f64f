package ssim2

import (
	"sync"
	"sync/atomic"
)

// parallelFor runs fn over [0, n) cut into chunks of at most grain items,
// on up to threads goroutines (worker ids 0..threads-1, so callers can index
// per-worker scratch). With threads ≤ 1 everything runs on the calling
// goroutine. The split never changes what is computed for an index, so
// results do not depend on the thread count.
func parallelFor(threads, n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	if threads > chunks {
		threads = chunks
	}
	if threads <= 1 {
		fn(0, 0, n)
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
	// Re-raise a worker's panic on the calling goroutine, where the public
	// entry points recover it into an error.
	if v := panicVal.Load(); v != nil {
		panic(v.(panicBox).v)
	}
}

type panicBox struct{ v any }

// rowGrain picks a chunk size of rows so that each chunk has some tens of
// thousands of pixels of work.
func rowGrain(w int) int {
	g := 32768 / max(w, 1)
	return max(g, 1)
}
