package cuda

import (
	"context"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// This file is the per-reference scorer pool the metric packages share. A
// prepared reference is scored by many callers at once; each score needs
// a stream, page-locked staging and a full set of device scratch planes
// (a slot). Slots are made on demand up to a limit, kept between scores
// (allocating and freeing device memory on every score would cost more
// than the score) and freed with the reference. The pool knows nothing of
// a metric's scratch: the metric hands it the functions that make and
// free one slot and that name its upload buffer.

// SlotFuncs is what a SlotPool asks of its metric.
type SlotFuncs[S any] struct {
	// New makes a slot for uploads of up to raw bytes (NewScratch does
	// the common part); on failure it has already freed what it took.
	New func(raw int64) (S, error)
	// Free waits for the slot's stream and gives its buffers and worker
	// back to the device (FreeScratch).
	Free func(S)
	// Raw is the slot's upload buffer, which Get grows (frees and
	// allocates again) when a caller's image needs more bytes.
	Raw func(S) **Buffer
	// Check, when set, is asked before a slot beyond the first is made:
	// the first one is in the estimate Prepare checked, the others are
	// checked on their own, before anything is allocated, so that a
	// caller gets an OutOfMemoryError instead of a failed allocation.
	Check func(raw int64) error
	// Sizes, for RefBase.Init, is the list of buffer sizes a slot for
	// raw bytes allocates (the metric's memory model): when Check is
	// nil, Init sets it to Backend.CheckMemory of their AllocSizes, the
	// check every metric makes.
	Sizes func(raw int64) []int64
}

// SlotPool bounds, keeps and frees the slots of one reference.
type SlotPool[S any] struct {
	dev *Device
	fn  SlotFuncs[S]
	sem chan struct{} // one token per slot in use

	mu   sync.Mutex
	idle []S // slots not in use, the last returned at the end
	all  []S // every slot made, to free
}

// NewSlotPool makes a pool of at most limit slots in use at once; more
// callers wait in Get.
func NewSlotPool[S any](d *Device, limit int, fn SlotFuncs[S]) *SlotPool[S] {
	return &SlotPool[S]{dev: d, fn: fn, sem: make(chan struct{}, limit)}
}

// Get waits for a token (or ctx), then takes the slot returned last or
// makes one, with an upload buffer of at least raw bytes. The slot is the
// caller's until Put.
func (p *SlotPool[S]) Get(ctx context.Context, raw int64) (S, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		var zero S
		return zero, ctx.Err()
	}
	s, err := p.take(raw)
	if err != nil {
		<-p.sem
	}
	return s, err
}

func (p *SlotPool[S]) take(raw int64) (S, error) {
	var zero S
	p.mu.Lock()
	n := len(p.idle)
	var s S
	if n > 0 {
		s = p.idle[n-1]
		p.idle = p.idle[:n-1]
	}
	made := len(p.all)
	p.mu.Unlock()
	if n == 0 {
		if made > 0 && p.fn.Check != nil {
			if err := p.fn.Check(raw); err != nil {
				return zero, err
			}
		}
		s, err := p.fn.New(raw)
		if err != nil {
			return zero, err
		}
		p.mu.Lock()
		p.all = append(p.all, s)
		p.mu.Unlock()
		return s, nil
	}
	if buf := p.fn.Raw(s); (*buf).Size < raw {
		p.dev.Free(*buf)
		nb, err := p.dev.Alloc(raw)
		if err != nil {
			*buf = &Buffer{} // size 0: reallocated next time
			p.putBack(s)
			return zero, err
		}
		*buf = nb
	}
	return s, nil
}

func (p *SlotPool[S]) putBack(s S) {
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.mu.Unlock()
}

// Put returns a slot taken with Get, with its token.
func (p *SlotPool[S]) Put(s S) {
	p.putBack(s)
	<-p.sem
}

// Close frees every slot the pool made. The caller makes sure that none
// is in use (the references hold their write lock, which every score's
// read lock excludes).
func (p *SlotPool[S]) Close() {
	p.mu.Lock()
	all := p.all
	p.all, p.idle = nil, nil
	p.mu.Unlock()
	for _, s := range all {
		p.fn.Free(s)
	}
}

// NewScratch takes a worker for uploads of about raw bytes with out bytes
// of read-back, then lets fill allocate the slot's device buffers with
// alloc, which after its first failure returns nil without allocating
// (so a run of allocations is checked once). On failure everything taken
// is given back (FreeScratch) and the first error returned.
func (d *Device) NewScratch(raw, out int64, fill func(alloc func(int64) *Buffer)) (*Worker, error) {
	wk, err := d.TakeWorker(raw, out)
	if err != nil {
		return nil, err
	}
	var bufs []*Buffer
	fill(func(n int64) *Buffer { return d.AllocInto(&bufs, &err, n) })
	if err != nil {
		d.FreeScratch(wk, bufs...)
		return nil, err
	}
	return wk, nil
}

// FreeScratch waits for wk's stream (freed buffers may be handed out
// again at once, so no kernel may still use them), frees bufs and gives
// wk back to the device. wk may be nil.
func (d *Device) FreeScratch(wk *Worker, bufs ...*Buffer) {
	if wk != nil {
		_ = wk.Stream.Sync()
	}
	d.Free(bufs...)
	d.ReturnWorker(wk)
}

// AllocInto allocates size bytes and appends the buffer to *list; once
// *err is set it does nothing and returns nil, so that a run of
// allocations needs one check at its end.
func (d *Device) AllocInto(list *[]*Buffer, err *error, size int64) *Buffer {
	if *err != nil {
		return nil
	}
	b, e := d.Alloc(size)
	if e != nil {
		*err = e
		return nil
	}
	*list = append(*list, b)
	return b
}

// CheckScored validates a distorted image for a reference of w×h: a valid
// image of the reference's size, and a live ctx, in that order (the
// checks every metric's Score makes before it takes a slot).
func CheckScored(ctx context.Context, dist *zenmetrics.Image, w, h int) error {
	if err := dist.Validate(); err != nil {
		return err
	}
	if dist.Width != w || dist.Height != h {
		return &zenmetrics.SizeMismatchError{RefWidth: w, RefHeight: h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	return ctx.Err()
}
