package cvvdp

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Pipelined scoring of a whole-image reference, on the kit's
// StagingRing (as gpu/webgpu/dssim and ssim2 do).
//
// Uploading the distorted image is host work: the bytes cross to the
// device as a mapped staging buffer is written. A score of an image of at
// least webgpu.StagingMin bytes fills one of two staging slots on the
// calling goroutine, outside the device thread and the reference's lock;
// only then does it take the lock and the device thread to unmap the
// slot, copy it into the raw buffer, record its command buffer, read-backs
// included, and submit; it waits for the read-back off the device thread.
// With two callers on one reference (the orchestrator runs
// Backend.ConcurrentScores workers per GPU), one fills while the other's
// work runs. The commands are the serial path's, in the same order, on
// the same buffers (queue order keeps the scores apart): the same bits.

// pipeSlots is how many staging slots a reference fills ahead.
const pipeSlots = 2

// ringable says whether a score of dist goes through the ring: whole
// images whose upload takes the staging path.
func (r *reference) ringable(dist *zenmetrics.Image) bool {
	return r.st == nil && webgpu.RawBytes(dist) >= webgpu.StagingMin
}

// runRing is run for ringable images (r.mu not held).
func (r *reference) runRing(ctx context.Context, dist *zenmetrics.Image) ([]float32, []float32, error) {
	need := webgpu.RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.pipe.Take(ctx, r.dev, size)
	if err != nil {
		return nil, nil, err
	}
	defer r.pipe.Put(st)
	fill := st.Fill(dist.Pix, need, size)

	out := make([]float32, nCh*sumRows(r.plan.H))
	var dm []float32
	if r.heat != nil {
		dm = make([]float32, r.w*r.h)
	}
	var rbSums, rbMap *webgpu.Readback
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return nil, nil, zenmetrics.ErrReleased
	}
	r.ringBytes.Store(int64(r.pipe.Made()) * st.Buf.Size())
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		r.setImage(g, dist)
		e := g.Encoder()
		if err := r.up.PutFilled(g, e, &r.own, st, need, fill); err != nil {
			e.Discard()
			return err
		}
		r.encodeDist(e)
		var err error
		if rbSums, err = e.ReadBack(r.sums, 0, 4*int64(len(out))); err != nil {
			e.Discard()
			return err
		}
		if dm != nil {
			mb := r.encodeMap(e)
			if rbMap, err = e.ReadBack(mb, 0, 4*int64(len(dm))); err != nil {
				e.Discard()
				return err
			}
		}
		return e.Submit()
	})
	r.mu.Unlock()
	// From here on the read-backs are drained and the slot mapped again
	// whatever happens, or the ring would lose its buffer.
	if err := webgpu.AwaitPiped(ctx, r.dev, st, err, webgpu.PipedRead{RB: rbSums, Dst: out}, webgpu.PipedRead{RB: rbMap, Dst: dm}); err != nil {
		return nil, nil, err
	}
	return out, dm, nil
}
