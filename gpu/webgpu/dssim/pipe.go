package dssim

import (
	"context"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Pipelined scoring of a whole-image reference (the pattern of
// gpu/webgpu/ssim2's pipe.go, on the kit's StagingRing).
//
// Uploading the distorted image is host work (the bytes cross PCIe as the
// mapped staging buffer is written). A score fills one of two staging
// slots on the calling goroutine, outside the device thread; only then
// does it take the reference's lock and the device thread to unmap, copy,
// record its whole command buffer and submit; it then waits for the
// read-back off the device thread. So with two callers on one reference
// (the orchestrator runs Backend.ConcurrentScores workers per GPU) one
// fills while the other's work runs, and the GPU runs the scores back to
// back. The commands are those of the serial path, in the same order: the
// same bits. Dawn orders the scores' use of the reference's scratch.

// pipeSlots is how many staging slots a reference fills ahead.
const pipeSlots = 2

// ringable says whether a score of dist goes through the ring: whole
// images (strips go crop by crop through the serial upload) whose upload
// takes the staging path.
func (r *reference) ringable(dist *zenmetrics.Image) bool {
	return len(r.p.bands) == 1 && webgpu.RawBytes(dist) >= webgpu.StagingMin
}

// scoreRing is Score for ringable images (r.mu not held).
func (r *reference) scoreRing(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	need := webgpu.RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.pipe.Take(ctx, r.dev, size)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	defer r.pipe.Put(st)
	fill := st.Fill(dist.Pix, need, size)

	res := make([]float32, 8*maxScales)
	var m *zenmetrics.FloatPlane
	if r.distMap {
		m = &zenmetrics.FloatPlane{Width: r.p.w, Height: r.p.h, Pix: make([]float32, r.p.w*r.p.h)}
	}
	var rb, mb *webgpu.Readback
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	r.ringBytes.Store(int64(r.pipe.Made()) * st.Buf.Size())
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		b := &r.p.bands[0]
		r.sideParams(g, b, r.bands[0].distP, dist)
		e := g.Encoder()
		if err := r.up.PutFilled(g, e, &r.own, st, need, fill); err != nil {
			e.Discard()
			return err
		}
		r.encodeSide(e, b, r.bands[0].distP, &r.dist)
		r.encodeMaps(e, 0, r.bands[0].ref)
		r.encodePool(e)
		var err error
		if rb, err = e.ReadBack(r.res, 0, int64(len(res))*4); err != nil {
			e.Discard()
			return err
		}
		if m != nil {
			if mb, err = e.ReadBack(r.bands[0].maps[0], 0, int64(len(m.Pix))*4); err != nil {
				e.Discard()
				return err
			}
		}
		return e.Submit()
	})
	r.mu.Unlock()
	// From here on the read-backs must be drained and the slot mapped
	// again whatever happens, or the ring would lose its buffer.
	if err := webgpu.AwaitPiped(ctx, r.dev, st, err, webgpu.PipedRead{RB: rb, Dst: res}, webgpu.PipedRead{RB: mb, Dst: mapPix(m)}); err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.DSSIM, Value: r.pool(res), DistMap: m}, nil
}

func mapPix(m *zenmetrics.FloatPlane) []float32 {
	if m == nil {
		return nil
	}
	return m.Pix
}
