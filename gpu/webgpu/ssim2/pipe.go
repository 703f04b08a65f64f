package ssim2

import (
	"context"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// Pipelined scoring of a cached SSIMULACRA2 reference.
//
// A score's upload of the distorted image is host work (the bytes cross
// PCIe as the staging buffer is written: ~1.9 ms for 16 MP on an H200),
// and the device thread would otherwise do it while the GPU idles, then
// idle itself while the GPU scores. Here a score fills one of two staging
// buffers that sit mapped between scores, on the calling goroutine and
// outside the device thread; only then does it take the reference's lock
// and the device thread to unmap, copy and submit. It then polls for the
// result off the device thread, reads the sums back and maps its buffer
// again (the copy out of it has finished by then, so the map is
// immediate). So when two goroutines score on one reference — the
// orchestrator runs ConcurrentScores workers per GPU — one fills its
// buffer and submits while the other's work runs on the GPU, and the GPU
// runs the scores back to back. Scores are the same bits as the serial
// path (the same commands in the same order).

// ssim2Pipeline turns the pipelined path on (tests compare it with the
// serial one).
var ssim2Pipeline = true

// ssim2PipeSlots is how many staging buffers a reference fills ahead: one
// scoring on the GPU and one being filled.
const ssim2PipeSlots = 2

// filled is a pipelined score's upload: the staging slot its bytes are in
// and the host time filling it took.
type filled struct {
	slot *webgpu.StagingSlot
	fill time.Duration
}

// pipelined says whether a score of dist takes the pipelined path: whole
// images with their own scratch (strips share one and go crop by crop)
// and uploads large enough for the staging path.
func (r *ssim2Ref) pipelined(dist *zenmetrics.Image) bool {
	return ssim2Pipeline && r.ownScratch && r.carry == 0 && ssim2RawBytes(dist) >= webgpu.StagingMin
}

// scorePipelined is score for r.pipelined images (r.mu not held).
//
// The device thread is held only to submit (under r.mu: the scratch and
// the uniform blocks are the reference's) and, once the GPU is done, to
// read the sums back; in between the caller polls, so another caller can
// fill and submit its score meanwhile and the GPU runs the two back to
// back (Dawn orders their use of the shared scratch).
func (r *ssim2Ref) scorePipelined(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	ph := ssim2Phases{t0: time.Now()}
	defer ph.print(dist.Width, dist.Height)
	need := ssim2RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.pipe.Take(ctx, r.dev, size)
	if err != nil {
		return 0, err
	}
	defer r.pipe.Put(st)
	ph.take = time.Since(ph.t0)
	pre := &filled{slot: st, fill: ssim2Fill(st.Mem, dist.Pix, need, size)}
	ph.fill = pre.fill
	t1 := time.Now()

	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return 0, zenmetrics.ErrReleased
	}
	host := make([]float32, len(r.sumsHost))
	var rb *webgpu.Readback
	var done wgpu.Future
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		r.pending = nil
		_, err := r.run(g, dist, false, pre)
		rb, r.pending = r.pending, nil
		if err == nil && ssim2Wait == ssim2WaitSlices {
			done = ssim2WorkDone(g)
		}
		return err
	})
	r.mu.Unlock()
	t2 := time.Now()
	ph.submit = t2.Sub(t1)
	// From here on the read-back must be drained and the slot mapped
	// again whatever happens, or the pool would lose the buffers.
	finish := func(read bool) error {
		return r.dev.Do(context.Background(), func(g *webgpu.GPU) error {
			var err error
			if rb != nil {
				if read {
					err = webgpu.ReadSlice(rb, host)
				} else {
					_ = rb.Read(nil)
				}
			}
			// Its copy has finished (the read-back came after it).
			if merr := st.Remap(g); merr != nil && err == nil {
				err = merr
			}
			// The work is done: let the work-done future complete (its
			// callback is registered until then) if the wait did not.
			if done.ID != 0 {
				inst, _, _ := g.Raw()
				inst.WaitAny([]wgpu.FutureWaitInfo{{Future: done}}, 0)
			}
			return err
		})
	}
	if err != nil {
		_ = finish(false)
		return 0, err
	}
	switch ssim2Wait {
	case ssim2WaitSlices:
		if err := ssim2WaitDone(ctx, r.dev, done); err != nil {
			_ = finish(false)
			return 0, err
		}
		done = wgpu.Future{}
	case ssim2WaitPoll:
		if err := webgpu.WaitReady(ctx, r.dev, rb); err != nil {
			_ = finish(false)
			return 0, err
		}
	}
	t3 := time.Now()
	ph.wait = t3.Sub(t2)
	if err := finish(true); err != nil {
		return 0, err
	}
	ph.finish = time.Since(t3)
	return r.finishFrom(host), nil
}
