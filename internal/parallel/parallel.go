// Package parallel is the one worker pool of the CPU metric references.
//
// Every CPU metric splits its rows (or planes, or scales) over goroutines
// the same way: chunks handed out in index order from an atomic counter,
// worker ids 0..threads-1 so a callback can index per-worker scratch, and a
// worker's panic raised again on the calling goroutine, where each
// metric's entry points recover it into an error. Which goroutine runs a
// chunk never changes what is computed for an index; as long as callbacks
// write only their own outputs (and keep any reduction per index, summed
// in index order afterwards), results are bit-identical for every thread
// count. That is the contract the metrics' determinism tests check.
package parallel

import (
	"sync"
	"sync/atomic"
)

// For runs fn over [0, n) cut into chunks of at most grain items on up to
// threads goroutines. With one thread (or one chunk) it makes a single
// call fn(0, 0, n) on the calling goroutine, so single-threaded callers
// pay no chunking at all.
func For(threads, n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if min(threads, chunks) <= 1 {
		fn(0, 0, n)
		return
	}
	run(threads, n, grain, fn)
}

// Chunks is For, but also cuts [0, n) into chunks of grain on one
// goroutine, for callers whose callback keeps per-chunk state or output
// (so the chunk boundaries must not depend on the thread count).
func Chunks(threads, n, grain int, fn func(worker, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if min(threads, chunks) <= 1 {
		for lo := 0; lo < n; lo += grain {
			fn(0, lo, min(lo+grain, n))
		}
		return
	}
	run(threads, n, grain, fn)
}

// Each runs fn(worker, i) for every i in [0, n), in order on one
// goroutine, on up to threads goroutines otherwise.
func Each(threads, n int, fn func(worker, i int)) {
	Chunks(threads, n, 1, func(worker, lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(worker, i)
		}
	})
}

// RowGrain is a chunk of rows of width w holding some tens of thousands of
// samples: enough work per chunk to hide the hand-out, small enough to
// balance two to sixteen cores.
func RowGrain(w int) int {
	return max(32768/max(w, 1), 1)
}

type panicBox struct{ v any }

// run hands the chunks of [0, n) to min(threads, chunks) goroutines, the
// caller's among them, and re-raises the first worker panic on the caller.
func run(threads, n, grain int, fn func(worker, lo, hi int)) {
	chunks := (n + grain - 1) / grain
	threads = min(threads, chunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Value
	work := func(worker int) {
		defer func() {
			if v := recover(); v != nil {
				panicked.CompareAndSwap(nil, panicBox{v})
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
		go func() {
			defer wg.Done()
			work(w)
		}()
	}
	work(0)
	wg.Wait()
	if v := panicked.Load(); v != nil {
		panic(v.(panicBox).v)
	}
}
