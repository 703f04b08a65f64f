package zensim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Pipelined scores of a whole-image reference (the kit's StagingRing, as
// gpu/webgpu/dssim and ssim2 use it).
//
// Uploading the distorted image is host work: its bytes cross PCIe as the
// mapped staging buffer is written. A score fills one of pipeSlots slots
// on the calling goroutine, outside the device thread and the reference's
// lock; only then does it take both to record and submit its command
// buffer (the serial path's commands, in the same order: the same bits),
// and it waits for the read-back off the device thread. So with two
// callers on one reference (the orchestrator runs several workers per
// GPU) one fills while the other's work runs. Dawn orders the scores' use
// of the reference's scratch.

// pipeSlots is how many staging slots a reference fills ahead.
const pipeSlots = 2

// piped reports whether the reference's large uploads go through the
// ring: a whole image whose pyramid stays resident (strips upload crop by
// crop through the serial path, and a recomputed reference uploads twice
// per score).
func (r *reference) piped() bool { return len(r.l.bands) == 1 && r.keep }

// scoreRing is ScoreDetail for a piped reference and an image of at least
// webgpu.StagingMin bytes (r.mu not held).
func (r *reference) scoreRing(ctx context.Context, dist *zenmetrics.Image) (*cpuz.Result, error) {
	need := webgpu.RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.pipe.Take(ctx, r.dev, size)
	if err != nil {
		return nil, err
	}
	defer r.pipe.Put(st)
	fill := st.Fill(dist.Pix, need, size)

	out := make([]float32, nq*3*4+1)
	var rb *webgpu.Readback
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return nil, zenmetrics.ErrReleased
	}
	r.ringBytes.Store(int64(r.pipe.Made()) * st.Buf.Size())
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		b, bb := &r.l.bands[0], &r.bands[0]
		p := r.xybParams(b, dist)
		g.Write(bb.xybDist, 0, webgpu.Bytes(&p))
		e := g.Encoder()
		e.Clear(r.flag)
		if err := r.up.PutFilled(g, e, &r.own, st, need, fill); err != nil {
			e.Discard()
			return err
		}
		r.encodePyramid(e, b, bb.xybDist, bb, &r.dist)
		r.encodeStats(e, 0, bb.ref)
		e.Dispatch(r.k.reduce, uint32(3*r.l.g.S), 1, 1, r.meta, r.part, r.res)
		e.Copy(r.flag, 0, r.res, int64(nq*3*4)*4, 4)
		var err error
		if rb, err = e.ReadBack(r.res, 0, int64(len(out))*4); err != nil {
			e.Discard()
			return err
		}
		return e.Submit()
	})
	r.mu.Unlock()
	// From here on the read-back must be drained and the slot mapped
	// again whatever happens, or the ring would lose its buffer.
	if err := webgpu.AwaitPiped(ctx, r.dev, st, err, webgpu.PipedRead{RB: rb, Dst: out}); err != nil {
		return nil, err
	}
	return r.pool(out), nil
}
