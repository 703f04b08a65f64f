package ssim2

import (
	"context"
	"errors"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// Pipelined scoring of a cached SSIMULACRA2 reference.
//
// A score's upload of the distorted image is host work (the bytes cross
// PCIe as the staging buffer is written: ~1.9 ms for 16 MP on an H200),
// and the device thread would otherwise do it while the GPU idles, then
// idle itself while the GPU scores. Here a score fills one of two staging
// buffers that sit mapped between scores, on the calling goroutine and
// outside the device thread; only then does it take the reference's lock
// and the device thread to unmap and submit (the command buffer, copy
// included, was recorded meanwhile). It then waits for the result in
// short device-thread calls, reads the sums back in the call that sees
// the GPU done, and maps its buffer again after returning (the copy out
// of it has finished by then, so the map is immediate). So when two goroutines score on one reference — the
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

// ssim2BandSlots is the staging slots per band of a banded score: two,
// like the whole-image ring. A banded 16 MP score spends 0.35–0.55 ms of
// its ~4.1 ms taking its four slots (the remap of a slot after its score,
// putSlot, has not always finished when the next score wants it); a third
// slot per band, tried on the H200 (session 8, alternated in one binary),
// changed nothing (4.08–4.09 against 4.00–4.14 ms, the take the same), so
// the wait is not for a slot still in use. ZENMETRICS_SSIM2_BANDSLOTS
// (2–4) is kept for that measurement.
var ssim2BandSlots = min(4, max(2, upband.EnvInt("ZENMETRICS_SSIM2_BANDSLOTS", ssim2PipeSlots)))

// filled is a pipelined score's upload: the staging slot its bytes are in
// and the host time filling it took.
type filled struct {
	slot *webgpu.StagingSlot
	fill time.Duration
}

// ssim2PipeMin is the smallest upload (raw bytes) that takes the
// pipelined path: the staging path's threshold. Tests lower it, so that
// banded scores of small images (many bands, odd sizes) run quickly.
var ssim2PipeMin int64 = webgpu.StagingMin

// pipelined says whether a score of dist takes the pipelined path: whole
// images with their own scratch (strips share one and go crop by crop)
// and uploads large enough for the staging path.
func (r *ssim2Ref) pipelined(dist *zenmetrics.Image) bool {
	return ssim2Pipeline && r.ownScratch && r.carry == 0 && ssim2RawBytes(dist) >= ssim2PipeMin
}

// scorePipelined is score for r.pipelined images (r.mu not held).
//
// The device thread is held only to submit (under r.mu: the scratch and
// the uniform blocks are the reference's) and, once the GPU is done, to
// read the sums back; in between the caller polls, so another caller can
// fill and submit its score meanwhile and the GPU runs the two back to
// back (Dawn orders their use of the shared scratch).
//
// The host work around the GPU's is kept off the score's critical path
// (host.go has the measurements that led here): the command buffer is
// recorded and finished on the device thread while this goroutine fills
// the staging slot (ssim2Overlap), so the submit is a queue write at most,
// an unmap and Queue.Submit; the wait reads the sums back in the same
// device-thread call that sees the GPU done (ssim2WaitSlices); and the
// slot is mapped again for the next score after this one has returned
// (ssim2RemapLater). Large images upload in row bands (band.go).
func (r *ssim2Ref) scorePipelined(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	if r.banded(dist) {
		return r.scoreBanded(ctx, dist)
	}
	ph := ssim2Phases{Phases: upband.Phases{T0: time.Now()}}
	defer ph.print(dist.Width, dist.Height)
	need := ssim2RawBytes(dist)
	size := (need + 3) &^ 3
	st, err := r.pipe.Take(ctx, r.dev, size)
	if err != nil {
		return 0, err
	}
	ph.Take = time.Since(ph.T0)
	pre := &filled{slot: st}
	var c *scoreCmd
	if ssim2Prerec {
		var stale *scoreCmd
		if c, stale = r.claimNext(st, dist, need); stale != nil {
			upband.DiscardLater(r.dev, &stale, discardCmd)
		}
		ph.ahead = c != nil
	}
	var rec <-chan recorded
	if c == nil && ssim2Overlap {
		rec = r.recordAsync(ctx, dist, pre)
	}
	pre.fill = ssim2Fill(st.Mem, dist.Pix, need, size)
	ph.Fill = pre.fill
	if rec != nil {
		t := time.Now()
		res := <-rec
		c, err = res.C, res.Err
		ph.Record, ph.RecWait = res.Took, time.Since(t)
		if err != nil {
			r.putSlot(&r.pipe, st)
			return 0, err
		}
	}
	t1 := time.Now()
	ssim2InFlight.Add(1)
	defer ssim2InFlight.Add(-1)
	r.seq.Lock()
	host := make([]float32, len(r.sumsHost))
	rb, read, err := r.submitLocked(ctx, dist, c, pre, host, &ph)
	r.seq.Unlock()
	ph.Submit = time.Since(t1)
	if err != nil {
		// The slot may still be mapped (nothing submitted) or not: putSlot
		// maps it again either way (waiting for the GPU if it must).
		r.putSlot(&r.pipe, st)
		return 0, err
	}
	t2 := time.Now()
	if !read {
		err = r.awaitSums(ctx, rb, host)
	}
	ph.Wait = time.Since(t2)
	t3 := time.Now()
	if ssim2Prerec && ssim2RemapLater {
		r.putSlotNext(st, dist)
	} else {
		r.putSlot(&r.pipe, st)
	}
	ph.Finish = time.Since(t3)
	if err != nil {
		return 0, err
	}
	return r.finishFrom(host), nil
}

// recorded is recordAsync's answer: the recorded score and how long the
// device thread took to record it.
type recorded = upband.Recorded[*scoreCmd]

// recordAsync records a pipelined score of dist on the device thread
// while the caller goes on (filling pre's slot); the answer comes on the
// channel. The record does not need r.mu: it reads the reference's fixed
// state and the upload buffer, which only the device thread changes, and
// submit sees when a later score replaced that buffer (errStale).
func (r *ssim2Ref) recordAsync(ctx context.Context, dist *zenmetrics.Image, pre *filled) <-chan recorded {
	return upband.RecordAsync(ctx, r.dev, func(g *webgpu.GPU) (*scoreCmd, error) {
		return r.record(g, dist, false, pre)
	}, discardCmd)
}

// submitLocked submits a recorded score c (nil: record it now) under r.mu
// and returns its read-back, and whether its sums are already in host
// (firstSlice). A stale record is recorded again. The slot's bytes are in
// place (pre.fill is set).
func (r *ssim2Ref) submitLocked(ctx context.Context, dist *zenmetrics.Image, c *scoreCmd, pre *filled, host []float32, ph *ssim2Phases) (*webgpu.Readback, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		if c != nil {
			_ = r.dev.Do(context.Background(), func(*webgpu.GPU) error { c.e.Discard(); return nil })
		}
		return nil, false, zenmetrics.ErrReleased
	}
	var rb *webgpu.Readback // device thread only, until Do has returned nil
	used, read := false, false
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		used = true
		t := time.Now()
		if c != nil {
			err := r.submit(g, c, pre)
			if err != errStale {
				rb = c.rb
				if err == nil {
					read, err = ph.firstSlice(t, rb, host)
				}
				return err
			}
		}
		c, err := r.record(g, dist, false, pre)
		if err != nil {
			return err
		}
		rb = c.rb
		if err := r.submit(g, c, pre); err != nil {
			return err
		}
		read, err = ph.firstSlice(t, rb, host)
		return err
	})
	if err != nil {
		r.abandon(&rb, &used, &c)
		return nil, false, err
	}
	return rb, read, nil
}

// abandon cleans up after a failed submit call: it drains a submitted
// read-back (*rb) or drops a recorded command buffer never submitted (*c,
// unless *used). The call may not have run, or may still be running (Do
// returned early on ctx), so the cleanup runs on the device thread after
// it and reads the variables there, through the pointers, as it left
// them.
func (r *ssim2Ref) abandon(rb **webgpu.Readback, used *bool, c **scoreCmd) {
	_ = r.dev.Do(context.Background(), func(*webgpu.GPU) error {
		if *rb != nil {
			_ = (*rb).Read(nil)
		} else if !*used && *c != nil {
			(*c).e.Discard()
		}
		return nil
	})
}

// firstSlice is the first wait of a score just submitted, in the same
// device-thread call (one round trip less; the device thread would block
// in the wait's first call anyway): with ssim2WaitSlices it waits up to
// ssim2WaitSlice for rb and, if the GPU is done by then, reads the sums
// into host and reports true.
// It books the time since t0 (the submit) and its own in ph.
func (ph *ssim2Phases) firstSlice(t0 time.Time, rb *webgpu.Readback, host []float32) (bool, error) {
	if ssim2Wait != ssim2WaitSlices {
		ph.Queue = time.Since(t0)
		return false, nil
	}
	spin := time.Duration(0)
	if ph.Bands <= 1 && ssim2InFlight.Load() == 1 {
		spin = ssim2TailSpin
	}
	return ph.FirstSlice(t0, rb, ssim2WaitSlice, spin, func() error { return webgpu.ReadSlice(rb, host) })
}

// awaitSums waits for rb and reads it into host; whatever happens rb is
// drained. With ssim2WaitSlices (the default) one device-thread call that
// finds the GPU done reads the sums at once (one device round trip less
// than waiting and then reading).
func (r *ssim2Ref) awaitSums(ctx context.Context, rb *webgpu.Readback, host []float32) error {
	read := false
	readSums := func(g *webgpu.GPU) error {
		read = true
		return webgpu.ReadSlice(rb, host)
	}
	if ssim2Wait == ssim2WaitSlices {
		return upband.AwaitSlices(ctx, r.dev, rb, ssim2WaitSlice, readSums, func(*webgpu.GPU) error { return rb.Read(nil) })
	}
	var err error
	switch ssim2Wait {
	case ssim2WaitPoll:
		if err = webgpu.WaitReady(ctx, r.dev, rb); err == nil {
			err = r.dev.Do(context.Background(), readSums)
		}
	default:
		err = r.dev.Do(context.Background(), readSums)
	}
	if err != nil {
		// Drain the read-back unless it was read (the device thread runs
		// calls in order, so this sees what an abandoned call did).
		_ = r.dev.Do(context.Background(), func(*webgpu.GPU) error {
			if !read {
				read = true
				_ = rb.Read(nil)
			}
			return nil
		})
	}
	return err
}

// putSlot maps st again and gives it back to ring. With ssim2RemapLater
// (the default) that happens on another goroutine after the caller has
// its score: the map is a device-thread round trip that the next score
// on this slot needs, not this one (with two slots, the next score takes
// the other slot while this one is mapped). A slot that could not be
// mapped goes back unmapped: Take maps it.
func (r *ssim2Ref) putSlot(ring *webgpu.StagingRing, st *webgpu.StagingSlot) {
	upband.PutSlot(r.dev, ring, st, ssim2RemapLater)
}

// scoreCmd is one score's recorded and finished command buffer, not yet
// submitted (record, submit).
type scoreCmd struct {
	e    *webgpu.Encoder
	rb   *webgpu.Readback
	raw  *webgpu.Buffer // r.up.Raw when recorded: the upload its commands read
	lay  ssim2Layout    // dist's layout: the unpackDist blocks must hold it at submit
	need int64          // dist's raw bytes
}

// record records one score of dist (device thread): the upload (with pre
// only the copy out of its staging slot, which may still be mapped and
// being filled: pipe.go records while the caller fills), every pass's
// chain, the reduction and the read-back, and finishes the command
// buffer. Nothing reaches the queue: submit does, so a recorded score can
// wait while other scores are submitted. On error nothing is left to
// discard.
func (r *ssim2Ref) record(g *webgpu.GPU, dist *zenmetrics.Image, timed bool, pre *filled) (*scoreCmd, error) {
	k, err := kernels(g)
	if err != nil {
		return nil, err
	}
	e := g.Encoder()
	need := ssim2RawBytes(dist)
	if pre != nil {
		err = r.up.CopyFilled(g, e, &r.held, pre.slot, 0, (need+3)&^3, need)
	} else {
		err = r.up.Put(g, e, &r.held, dist)
	}
	if err != nil {
		e.Discard()
		return nil, err
	}
	c := &scoreCmd{e: e, raw: r.up.Raw, need: need, lay: layoutOf(dist)}
	for _, p := range r.passes {
		r.encodeChain(e, k, p, false, timed)
	}
	if timed {
		e.TimedPass("reduce")
	}
	r.encodeReduce(e, k)
	if c.rb, err = e.ReadBack(r.sums, 0, int64(r.nTerms)*8); err != nil {
		e.Discard()
		return nil, err
	}
	if err := e.Finish(); err != nil {
		e.Discard()
		return nil, err
	}
	return c, nil
}

// errStale is submit's answer for a score recorded against an upload
// buffer that another score has since replaced (a larger stride): the
// caller records it again.
var errStale = errors.New("webgpu: SSIMULACRA2: recorded score is stale")

// submit hands a recorded score to the queue (device thread): the
// unpackDist blocks are written first when dist's layout differs from the
// last score's (a queue write, so ordered before this submit and after
// any earlier one), and with pre its staging slot is unmapped. A stale
// record (errStale) is discarded.
func (r *ssim2Ref) submit(g *webgpu.GPU, c *scoreCmd, pre *filled) error {
	if c.raw != r.up.Raw {
		c.e.Discard()
		return errStale
	}
	if c.lay != r.distKey {
		for _, p := range r.passes {
			g.Write(p.unpackDist, 0, r.unpackParams(c.lay, p.bg).bytes())
		}
		r.distKey = c.lay
	}
	if pre != nil {
		pre.slot.Unmap(g, c.need, pre.fill)
	}
	return c.e.Submit()
}
