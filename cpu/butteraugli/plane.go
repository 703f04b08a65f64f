package butteraugli

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// plane is a single-channel float32 image, rows packed without padding.
// A plane may hold only some rows of its h, which is how the streamed pair
// path (stream.go) keeps a window of rows of a stage instead of the whole
// image, while every row function reads and writes it by image row as it
// does a whole plane: p starts at row y0 (0 for a whole plane), or, when
// ring > 0, row y is at row y mod ring of p.
type plane struct {
	w, h int
	p    []float32
	y0   int
	ring int
}

func newPlane(w, h int) plane { return plane{w: w, h: h, p: make([]float32, w*h)} }

func (p plane) row(y int) []float32 {
	i := y - p.y0
	if p.ring > 0 {
		i = y % p.ring
	}
	o := i * p.w
	return p.p[o : o+p.w : o+p.w]
}

// image3 is three planes of one size (linear RGB or XYB).
type image3 [3]plane

func newImage3(w, h int) image3 { return image3{newPlane(w, h), newPlane(w, h), newPlane(w, h)} }

// workers runs row-parallel loops. Every loop in this package writes each
// output row from inputs that are complete before the loop starts, so the
// split into row ranges never changes a single bit of the result; only the
// p-norm sums cross rows, and those are kept per row and added in row order.
type workers struct{ n int }

func newWorkers(threads int) workers {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return workers{n: threads}
}

// rows calls fn on disjoint row ranges covering [0, h).
func (wk workers) rows(h int, fn func(y0, y1 int)) {
	if h <= 0 {
		return
	}
	n := wk.n
	if n <= 1 || h < 16 {
		fn(0, h)
		return
	}
	// Blocks of a few rows, handed out dynamically for load balance.
	block := h / (n * 8)
	if block < 4 {
		block = 4
	}
	nblocks := (h + block - 1) / block
	if n > nblocks {
		n = nblocks
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var perr atomic.Value
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					perr.CompareAndSwap(nil, panicBox{v})
				}
			}()
			for {
				b := int(next.Add(1) - 1)
				if b >= nblocks {
					return
				}
				y0 := b * block
				y1 := y0 + block
				if y1 > h {
					y1 = h
				}
				fn(y0, y1)
			}
		}()
	}
	wg.Wait()
	if v := perr.Load(); v != nil {
		// Re-raised on the calling goroutine, where the public entry
		// point's zenmetrics.Recover turns it into an error.
		panic(v.(panicBox).v)
	}
}

// span is rows for the rows [s, e) of a plane: fn gets disjoint absolute
// row ranges covering them.
func (wk workers) span(s, e int, fn func(y0, y1 int)) {
	if e <= s {
		return
	}
	wk.rows(e-s, func(a, b int) { fn(s+a, s+b) })
}

// all runs the given independent jobs, up to wk.n at a time.
func (wk workers) all(jobs ...func()) {
	if wk.n <= 1 || len(jobs) == 1 {
		for _, j := range jobs {
			j()
		}
		return
	}
	var wg sync.WaitGroup
	var perr atomic.Value
	wg.Add(len(jobs))
	for _, j := range jobs {
		go func() {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					perr.CompareAndSwap(nil, panicBox{v})
				}
			}()
			j()
		}()
	}
	wg.Wait()
	if v := perr.Load(); v != nil {
		panic(v.(panicBox).v)
	}
}

type panicBox struct{ v any }
