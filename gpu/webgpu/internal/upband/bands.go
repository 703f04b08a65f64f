package upband

import (
	"context"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Bands uploads one image in row bands, each through its own staging slot
// (ring b for band b: a mapped buffer cannot be submitted, so band b+1
// cannot be written into the buffer band b is copied from). After band b
// is filled, Early submits it from another goroutine while band b+1 is
// filled; the last band is left to the caller's final command buffer,
// which Last may start recording (on the device thread) while the last
// band fills. The metric keeps its own locks and its own records: the
// hooks run in the order a score needs them, and an error anywhere stops
// the upload with every band submit in flight waited for, so the caller
// only gives the slots back (PutSlot) and drops its own record.
type Bands struct {
	Dev   *webgpu.Device
	Rings []webgpu.StagingRing // at least one per band
	Chunk int                  // Fill's piece size
	// Early submits band b (filled, not the last) with slot st, on its
	// own goroutine; it unmaps st on the device thread before the submit.
	Early func(b int, st *webgpu.StagingSlot) error
	// Before, when set, runs once before the first Early (a metric's lock
	// that orders its banded scores' submits; the caller releases it).
	Before func()
	// Last, when set, runs once the last band's slot is taken, before its
	// fill, with every band's slot (the slice is the caller's to keep).
	Last func(slots []*webgpu.StagingSlot)
}

// Upload takes a slot per band, fills band b with pix[cuts[b]:cuts[b+1]]
// and, but for the last, hands it to Early; it returns once the last band
// is filled and every Early has returned. It books Take, Fill and RecWait
// (the wait for an Early still running after the next fill) in ph. The
// slots taken come back even on error: give each to PutSlot with its ring.
func (p *Bands) Upload(ctx context.Context, pix []byte, cuts []int64, ph *Phases) ([]*webgpu.StagingSlot, error) {
	n := len(cuts) - 1
	slots := make([]*webgpu.StagingSlot, 0, n)
	var pending <-chan error // the band submit in flight
	wait := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending
		pending = nil
		return err
	}
	started := false
	for b := 0; b < n; b++ {
		lo, hi := cuts[b], cuts[b+1]
		size := (hi - lo + 3) &^ 3
		t, maps := time.Now(), p.Rings[b].Maps()
		st, err := p.Rings[b].Take(ctx, p.Dev, size)
		ph.Take += time.Since(t)
		if p.Rings[b].Maps() != maps {
			ph.TakeMaps++
		}
		if err != nil {
			_ = wait()
			return slots, err
		}
		slots = append(slots, st)
		if b == n-1 && p.Last != nil {
			p.Last(append([]*webgpu.StagingSlot(nil), slots...))
		}
		ph.Fill += Fill(st.Mem, pix[lo:], hi-lo, size, p.Chunk)
		t = time.Now()
		err = wait()
		ph.RecWait += time.Since(t)
		if err != nil {
			return slots, err
		}
		if b == n-1 {
			break
		}
		if !started && p.Before != nil {
			p.Before()
		}
		started = true
		ch := make(chan error, 1)
		go func(b int, st *webgpu.StagingSlot) {
			ch <- p.Early(b, st)
		}(b, st)
		pending = ch
	}
	return slots, nil
}
