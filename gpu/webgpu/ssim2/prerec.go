package ssim2

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Pre-recorded scores: the device-thread calls on an unbanded pipelined
// score's critical path.
//
// Session 11 traced 8 processes × 200 cached 1 MP scores on an H200
// (ZENMETRICS_SSIM2_TRACE; BENCHMARKS.md). A score made three
// device-thread calls while its caller waited: the record (overlapped
// with the fill, but its answer came 1–50 µs after it), the submit with a
// first 250 µs wait slice that the GPU never beat (its work ended ~323 µs
// after Queue.Submit returned), and a second wait for the rest; the remap
// of its staging slot, a fourth call after it returned, sat in the device
// thread's queue in front of the next score's record. Each call is two
// goroutine hand-offs to and from the OS-locked device thread (an empty
// Device.Do: 33.8 µs), and the device thread's own time doubled from one
// process to the next (record 24 against 55 µs, the submit 23 against
// 49): the fast processes scored in 0.55 ms, the slow ones in 0.68.
//
// So the put-back (after the score has returned) maps the slot again and
// records the next score's commands for that slot in the same
// device-thread call; the next score on that slot whose image has the
// same layout submits them as they are: no record call, no rec-wait
// (ZENMETRICS_SSIM2_PREREC=0 turns it off). Measured in session 11 (nine
// processes each, alternated in two calls): 1 MP medians 0.56–0.66 ms
// (0.60 the median process) against 0.58–0.71 (0.62) recording at fill
// time; the rec-wait (0–54 µs) is gone.
//
// Session 11 also measured ways to wait for the GPU and to hand calls
// over that did not help, so the rest stays session 10's (a 250 µs first
// slice in the submit call, then slices); BENCHMARKS.md has the early
// submit and the device thread polling for its next call too:
//   - one first slice long enough for the GPU (2 ms) when the score is
//     alone on its device: a WaitAny that blocks until the GPU is done
//     returned ~100 µs after it (1 MP 0.63–0.83 ms against 0.59–0.64),
//     while one that times out returns on time;
//   - sleeping until shortly before the learned end of the GPU work, then
//     polling (WaitAny without a timeout): it saw the GPU done ~323 µs
//     after Queue.Submit, when the two slices did too (the second call's
//     hand-offs overlap the GPU's last ~70 µs): no change;
//   - the caller polling for the submit call's answer instead of being
//     woken: 40–60 µs slower.

// ssim2Prerec turns the pre-recorded next score on.
var ssim2Prerec = os.Getenv("ZENMETRICS_SSIM2_PREREC") != "0"

// ssim2AheadHits and ssim2AheadStale count the scores that submitted
// commands recorded ahead, and those that found them recorded for another
// layout (tests).
var ssim2AheadHits, ssim2AheadStale atomic.Int64

// nextCmds are the scores recorded ahead, one per staging slot at most.
type nextCmds struct {
	mu sync.Mutex
	m  map[*webgpu.StagingSlot]*scoreCmd
}

// layoutOf is the unpack layout of dist.
func layoutOf(dist *zenmetrics.Image) ssim2Layout {
	return ssim2Layout{format: dist.Format, stride: dist.Stride, blend: dist.Format.HasAlpha()}
}

// claimNext takes the commands recorded ahead for slot st: c when they
// were recorded for an image with dist's layout and need raw bytes,
// otherwise stale (the caller discards it on the device thread).
func (r *ssim2Ref) claimNext(st *webgpu.StagingSlot, dist *zenmetrics.Image, need int64) (c, stale *scoreCmd) {
	r.next.mu.Lock()
	pc := r.next.m[st]
	delete(r.next.m, st)
	r.next.mu.Unlock()
	if pc == nil {
		return nil, nil
	}
	if pc.need == need && pc.lay == layoutOf(dist) {
		ssim2AheadHits.Add(1)
		return pc, nil
	}
	ssim2AheadStale.Add(1)
	return nil, pc
}

// putSlotNext gives back the slot of an unbanded score of an image with
// dist's layout: after the score has returned, one device-thread call
// maps it again and records the next score's commands for it. A slot
// that could not be mapped goes back unmapped (Take maps it) with nothing
// recorded.
func (r *ssim2Ref) putSlotNext(st *webgpu.StagingSlot, dist *zenmetrics.Image) {
	meta := &zenmetrics.Image{Width: dist.Width, Height: dist.Height, Format: dist.Format, Stride: dist.Stride}
	go func() {
		_ = r.dev.Do(context.Background(), func(g *webgpu.GPU) error {
			defer g.NoteHeld() // the record takes a read-back buffer
			if err := st.Remap(g); err != nil {
				return err
			}
			c, err := r.record(g, meta, false, &filled{slot: st})
			if err != nil {
				return nil // the next score records its own
			}
			r.next.mu.Lock()
			if r.next.m == nil {
				r.next.m = make(map[*webgpu.StagingSlot]*scoreCmd)
			}
			old := r.next.m[st]
			r.next.m[st] = c
			r.next.mu.Unlock()
			if old != nil {
				old.e.Discard()
			}
			return nil
		})
		r.pipe.Put(st)
	}()
}

// dropNext discards every score recorded ahead (Release, after the
// staging ring has closed: no put-back records any more).
func (r *ssim2Ref) dropNext() {
	r.next.mu.Lock()
	cs := make([]*scoreCmd, 0, len(r.next.m))
	for _, c := range r.next.m {
		cs = append(cs, c)
	}
	r.next.m = nil
	r.next.mu.Unlock()
	if len(cs) == 0 {
		return
	}
	_ = r.dev.Do(context.Background(), func(*webgpu.GPU) error {
		for _, c := range cs {
			c.e.Discard()
		}
		return nil
	})
}
