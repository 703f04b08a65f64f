package cuda

import (
	"context"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// This file is the skeleton every metric's prepared reference shares:
// the lock that lets scores run together but not with Release, the slot
// pool, the device buffers the reference keeps, the end of a prepare
// (allocate, queue the reference's work in a slot, wait, release on
// failure) and the start and end of a score (the checks every Score
// makes, a slot, a read-back). The metric embeds RefBase (StripBase for
// strips) and hands it small callbacks for what is its own: which
// buffers, which kernels, how to pool the results.

// Slot is what RefBase needs of a metric's slot: its worker, whose stream
// Build waits for.
type Slot interface {
	Worker() *Worker
}

// RefBase is the part of a prepared reference that every metric has. B,
// Dev and Slots are set by Init; Bufs are the buffers Build allocated,
// freed by Release.
type RefBase[S Slot] struct {
	B     *Backend
	Dev   *Device
	Slots *SlotPool[S]
	Bufs  []*Buffer

	mu       sync.RWMutex
	released bool
}

// Init sets the backend, its device and a slot pool of at most limit
// slots (SlotPool) made and freed by fn; fn.Sizes, when set without
// fn.Check, becomes the check of the slots beyond the first.
func (r *RefBase[S]) Init(b *Backend, limit int, fn SlotFuncs[S]) {
	r.B, r.Dev = b, b.Device()
	if fn.Check == nil && fn.Sizes != nil {
		sizes := fn.Sizes
		fn.Check = func(raw int64) error { return b.CheckMemory(AllocSizes(sizes(raw))) }
	}
	r.Slots = NewSlotPool(r.Dev, limit, fn)
}

// Build is the end of a prepare, after the checks and the kernels' load:
// alloc allocates the reference's buffers with its argument (which keeps
// each in Bufs and, after the first failure, allocates nothing and
// returns nil, so that one check follows the run), then queue queues the
// reference's work in a slot for uploads of raw bytes, and Build waits
// for the slot's stream and checks ctx. A nil queue takes no slot (a
// reference that keeps nothing on the device but its buffers). On any
// failure the reference is released (its slots and buffers freed) and
// the first error returned.
func (r *RefBase[S]) Build(ctx context.Context, raw int64, alloc func(alloc func(n int64) *Buffer), queue func(s S) error) (err error) {
	defer func() {
		if err != nil {
			r.Release(nil)
		}
	}()
	alloc(func(n int64) *Buffer { return r.Dev.AllocInto(&r.Bufs, &err, n) })
	if err != nil || queue == nil {
		return err
	}
	return r.InSlot(ctx, raw, func(s S) error {
		if err := queue(s); err != nil {
			return err
		}
		if err := s.Worker().Stream.Sync(); err != nil {
			return err
		}
		return ctx.Err()
	})
}

// InSlot runs f with a slot for uploads of up to raw bytes (SlotPool.Get,
// which waits for one or for ctx) and gives the slot back after.
func (r *RefBase[S]) InSlot(ctx context.Context, raw int64, f func(s S) error) error {
	s, err := r.Slots.Get(ctx, raw)
	if err != nil {
		return err
	}
	defer r.Slots.Put(s)
	return f(s)
}

// Scoring runs score, a Score's work, with the reference held against
// Release, after the checks every Score makes: ErrReleased after Release,
// then CheckScored(ctx, dist, w, h). A panic becomes the returned error
// (zenmetrics.Recover), as a Backend's methods promise.
func (r *RefBase[S]) Scoring(ctx context.Context, dist *zenmetrics.Image, w, h int, score func() error) (err error) {
	defer zenmetrics.Recover(&err)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return zenmetrics.ErrReleased
	}
	if err := CheckScored(ctx, dist, w, h); err != nil {
		return err
	}
	return score()
}

// Scored is Scoring with score run in a slot for uploads of raw(dist)
// bytes, the common case.
func (r *RefBase[S]) Scored(ctx context.Context, dist *zenmetrics.Image, w, h int, raw func(*zenmetrics.Image) int64, score func(s S) error) error {
	return r.Scoring(ctx, dist, w, h, func() error { return r.InSlot(ctx, raw(dist), score) })
}

// Release frees the reference's slots and buffers once, after the running
// scores, then calls drop (when set) for the metric to drop its own views
// of them. Later scores get ErrReleased.
func (r *RefBase[S]) Release(drop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	r.Slots.Close()
	r.Dev.Free(r.Bufs...)
	r.Bufs = nil
	if drop != nil {
		drop()
	}
}

// StripBase is RefBase for a strip reference (ModeStrip): with Host, the
// reference's pixels kept on the host when a plan recomputes the
// reference's strips at every score.
type StripBase[S Slot] struct {
	RefBase[S]
	Host *zenmetrics.Image
}

// KeepHost keeps a tightly packed copy of ref as Host: a score reads its
// pixels again, after the caller may have reused its own buffer.
func (r *StripBase[S]) KeepHost(ref *zenmetrics.Image) {
	r.Host = zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
	for y := range ref.Height {
		copy(r.Host.Row(y), ref.Row(y))
	}
}

// Scored is RefBase.Scored for a plan whose tallest crop has rows rows:
// the slot's upload buffer takes such a crop of dist and, when the
// reference is recomputed, of Host.
func (r *StripBase[S]) Scored(ctx context.Context, dist *zenmetrics.Image, w, h, rows int, score func(s S) error) error {
	raw := func(dist *zenmetrics.Image) int64 {
		n := CropRaw(dist, rows)
		if r.Host != nil {
			n = max(n, CropRaw(r.Host, rows))
		}
		return n
	}
	return r.RefBase.Scored(ctx, dist, w, h, raw, score)
}

// Release is RefBase.Release, dropping Host too.
func (r *StripBase[S]) Release(drop func()) {
	r.RefBase.Release(func() {
		r.Host = nil
		if drop != nil {
			drop()
		}
	})
}

// CropRaw is the bytes a crop of im's first rows rows uploads (RawBytes
// of the crop): a strip slot's upload buffer is sized to the tallest.
func CropRaw(im *zenmetrics.Image, rows int) int64 {
	return RawBytes(&zenmetrics.Image{Width: im.Width, Height: rows, Stride: im.Stride, Format: im.Format})
}
