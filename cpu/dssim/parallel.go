package dssim

import (
	"sync"
	"sync/atomic"
)

// pool runs row ranges on up to threads goroutines. Every stage writes each
// output row from complete inputs in one goroutine, and the only reduction
// (the pooled SSIM sums) is kept per row and added in row order, so results
// are bit-identical for any thread count.
type pool struct{ threads int }

// rows calls fn over [0, h) cut into chunks of rows with some tens of
// thousands of pixels each (rows of w pixels). worker (0 to threads−1)
// lets fn index per-worker buffers.
func (p *pool) rows(h, w int, fn func(worker, y0, y1 int)) {
	grain := max(32768/max(w, 1), 1)
	chunks := (h + grain - 1) / grain
	threads := min(p.threads, chunks)
	if threads <= 1 {
		if h > 0 {
			fn(0, 0, h)
		}
		return
	}
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
			y0 := c * grain
			fn(worker, y0, min(y0+grain, h))
		}
	}
	wg.Add(threads - 1)
	for i := 1; i < threads; i++ {
		go func() {
			defer wg.Done()
			work(i)
		}()
	}
	work(0)
	wg.Wait()
	// A worker's panic is raised again on the calling goroutine, where the
	// public entry points turn it into an error.
	if v := panicked.Load(); v != nil {
		panic(v.(panicBox).v)
	}
}

type panicBox struct{ v any }
