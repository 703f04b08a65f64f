package dssim

import "github.com/zenmetrics-go/zenmetrics/internal/parallel"

// pool runs row ranges on up to threads goroutines. Every stage writes each
// output row from complete inputs in one goroutine, and the only reduction
// (the pooled SSIM sums) is kept per row and added in row order, so results
// are bit-identical for any thread count.
type pool struct{ threads int }

// rows calls fn over [0, h) cut into chunks of rows with some tens of
// thousands of pixels each (rows of w pixels). worker (0 to threads−1)
// lets fn index per-worker buffers.
func (p *pool) rows(h, w int, fn func(worker, y0, y1 int)) {
	parallel.For(p.threads, h, parallel.RowGrain(w), fn)
}
