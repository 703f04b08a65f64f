package webgpu

import (
	"context"
	"sync"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
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

// stagingSlot is one mappable staging buffer and, while it is mapped, its
// bytes.
type stagingSlot struct {
	buf *Buffer
	mem []byte
}

// ssim2Pipe is a reference's pool of staging slots, made on first use.
type ssim2Pipe struct {
	mu     sync.Mutex
	slots  chan *stagingSlot
	made   int
	closed bool
}

// pipelined says whether a score of dist takes the pipelined path: whole
// images with their own scratch (strips share one and go crop by crop)
// and uploads large enough for the staging path.
func (r *ssim2Ref) pipelined(dist *zenmetrics.Image) bool {
	return ssim2Pipeline && r.ownScratch && r.carry == 0 && ssim2RawBytes(dist) >= stagingMin
}

// takeSlot returns a staging slot mapped with at least size bytes, making
// one (up to ssim2PipeSlots) or waiting for one to come back.
func (r *ssim2Ref) takeSlot(ctx context.Context, size int64) (*stagingSlot, error) {
	p := &r.pipe
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, zenmetrics.ErrReleased
	}
	if p.slots == nil {
		p.slots = make(chan *stagingSlot, ssim2PipeSlots)
	}
	var st *stagingSlot
	if len(p.slots) == 0 && p.made < ssim2PipeSlots {
		p.made++
		st = &stagingSlot{}
	}
	p.mu.Unlock()
	if st == nil {
		select {
		case st = <-p.slots:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if st.buf != nil && st.buf.Size() >= size && st.mem != nil {
		return st, nil
	}
	err := r.b.dev.Do(ctx, func(g *GPU) error {
		defer g.noteHeld()
		if st.buf != nil && st.buf.Size() < size {
			if st.mem != nil {
				st.buf.Handle().Unmap()
				st.mem = nil
			}
			st.buf.Release()
			st.buf = nil
		}
		if st.buf == nil {
			b, err := g.Acquire(size, wgpu.BufferUsageMapWrite|wgpu.BufferUsageCopySrc)
			if err != nil {
				return err
			}
			st.buf = b
		}
		if st.mem == nil {
			mem, err := mapForWrite(g, st.buf, st.buf.Size())
			if err != nil {
				return err
			}
			st.mem = mem
		}
		return nil
	})
	if err != nil {
		p.slots <- st
		return nil, err
	}
	return st, nil
}

// closeSlots stops new pipelined scores and waits for the slots in use to
// come back (a score may be filling one); the caller unmaps and frees them.
func (r *ssim2Ref) closeSlots() []*stagingSlot {
	p := &r.pipe
	p.mu.Lock()
	p.closed = true
	n := p.made
	p.mu.Unlock()
	out := make([]*stagingSlot, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, <-p.slots)
	}
	return out
}

// scorePipelined is score for r.pipelined images (r.mu not held).
//
// The device thread is held only to submit (under r.mu: the scratch and
// the uniform blocks are the reference's) and, once the GPU is done, to
// read the sums back; in between the caller polls, so another caller can
// fill and submit its score meanwhile and the GPU runs the two back to
// back (Dawn orders their use of the shared scratch).
func (r *ssim2Ref) scorePipelined(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	need := ssim2RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.takeSlot(ctx, size)
	if err != nil {
		return 0, err
	}
	defer func() { r.pipe.slots <- st }()
	t0 := time.Now()
	parallelCopy(st.mem[:need], dist.Pix[:need])
	clear(st.mem[need:size])
	fill := time.Since(t0)

	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return 0, zenmetrics.ErrReleased
	}
	host := make([]float32, len(r.sumsHost))
	var rb *Readback
	err = r.b.dev.Do(ctx, func(g *GPU) error {
		defer g.noteHeld()
		noteUploadDur(g, fill, need)
		r.pending = nil
		_, err := r.run(g, dist, false, st)
		rb, r.pending = r.pending, nil
		return err
	})
	r.mu.Unlock()
	// From here on the read-back must be drained and the slot mapped
	// again whatever happens, or the pool would lose the buffers.
	finish := func(read bool) error {
		return r.b.dev.Do(context.Background(), func(g *GPU) error {
			var err error
			if rb != nil {
				if read {
					err = ReadSlice(rb, host)
				} else {
					_ = rb.Read(nil)
				}
			}
			if st.mem == nil && st.buf != nil {
				// Its copy has finished (the read-back came after it).
				mem, merr := mapForWrite(g, st.buf, st.buf.Size())
				if merr == nil {
					st.mem = mem
				} else if err == nil {
					err = merr
				}
			}
			return err
		})
	}
	if err != nil {
		_ = finish(false)
		return 0, err
	}
	for wait := 20 * time.Microsecond; ; {
		var ready bool
		err = r.b.dev.Do(ctx, func(g *GPU) error {
			var perr error
			ready, perr = rb.Poll()
			return perr
		})
		if err != nil || ready {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Microsecond)
	}
	if err != nil {
		_ = finish(false)
		return 0, err
	}
	if err := finish(true); err != nil {
		return 0, err
	}
	return r.finishFrom(host), nil
}

// copyFilled records the copy of a filled staging slot into r.raw (made
// large enough first) as the first command of e, unmapping the slot.
func (r *ssim2Ref) copyFilled(g *GPU, e *Encoder, st *stagingSlot, dist *zenmetrics.Image) error {
	need := ssim2RawBytes(dist)
	if err := r.ensureRaw(g, need); err != nil {
		return err
	}
	st.buf.Handle().Unmap()
	st.mem = nil
	e.Copy(st.buf, 0, r.raw, 0, (need+3)&^3)
	return nil
}
