package batch

import (
	"context"
	"sync"
)

// budget bounds the bytes of decoded images held by the run. References
// stay held until the last of their pairs is done, so a pair whose
// reference is held must not wait forever behind pairs that cannot fit:
// a request is granted when it fits, or when no distorted image is held
// at all (only references), so the run always moves, at worst one pair
// over the budget. Unlike a FIFO semaphore, any waiter that fits goes.
type budget struct {
	mu        sync.Mutex
	size      int64
	cur, refs int64 // bytes held, of which by references
	dists     int   // distorted images held
	wake      chan struct{}
}

func newBudget(size int64) *budget { return &budget{size: size, wake: make(chan struct{})} }

// acquire takes refBytes for a reference and distBytes for a distorted
// image, waiting until they fit.
func (b *budget) acquire(ctx context.Context, refBytes, distBytes int64) error {
	for {
		b.mu.Lock()
		if b.cur+refBytes+distBytes <= b.size || b.dists == 0 {
			b.cur += refBytes + distBytes
			b.refs += refBytes
			b.dists++
			b.mu.Unlock()
			return nil
		}
		w := b.wake
		b.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// releaseDist returns a distorted image's bytes.
func (b *budget) releaseDist(n int64) {
	b.mu.Lock()
	b.cur -= n
	b.dists--
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// releaseRef returns a reference's bytes.
func (b *budget) releaseRef(n int64) {
	b.mu.Lock()
	b.cur -= n
	b.refs -= n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
