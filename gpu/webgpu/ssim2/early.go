package ssim2

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// Early submit: the device-thread call of a score alone on its device is
// queued before the fill, not after it.
//
// The device thread is an OS-locked goroutine parked between calls; a
// call wakes it through the scheduler, a futex wake of a parked thread
// (~30 µs on the H200's virtual machine: session 11's trace puts 60–80 µs
// of a 1 MP score's submit phase into the two hand-offs of its call). With
// the score's commands recorded ahead (prerec.go), nothing in the call
// depends on the fill but the unmap and Queue.Submit, so the call can be
// handed over while the caller fills: the device thread wakes meanwhile
// and spins on the fill gate, then unmaps and submits the moment the last
// byte is written. It holds the device thread for the fill (~120 µs at
// 1 MP), so only a score alone on its device does it (upband.Alone, every
// metric's pipelined scores counted), on machines with at least 4 cores
// (the spin takes one from the fill). ZENMETRICS_SSIM2_EARLY=0 turns it
// off.

// ssim2Early turns the early submit on.
var ssim2Early = os.Getenv("ZENMETRICS_SSIM2_EARLY") != "0"

// ssim2EarlyProcs is the fewest cores (GOMAXPROCS) an early submit needs
// (tests lower it); ssim2EarlyCount counts early submits (tests).
var (
	ssim2EarlyProcs = 4
	ssim2EarlyCount atomic.Int64
)

// earlyOK says whether a score recorded ahead submits early.
func (r *ssim2Ref) earlyOK() bool {
	return ssim2Early && runtime.GOMAXPROCS(0) >= ssim2EarlyProcs && upband.Alone(r.dev)
}

// fillGate tells the device-thread call of an early submit when the
// staging slot is filled. A nil gate is open.
type fillGate struct{ state atomic.Int32 } // 0 filling, 1 filled, 2 given up

// errFillAborted is the early submit's answer when its fill never ended.
var errFillAborted = errors.New("webgpu: SSIMULACRA2: staging fill given up")

// wait spins until the fill has ended (device thread): true when it
// filled the slot, false when it gave up.
func (g *fillGate) wait() bool {
	if g == nil {
		return true
	}
	for {
		switch g.state.Load() {
		case 1:
			return true
		case 2:
			return false
		}
	}
}

// scoreEarly is scorePipelined for a score whose commands c were recorded
// ahead, alone on its device: its submit call is queued first, then the
// slot is filled and the gate opened.
func (r *ssim2Ref) scoreEarly(ctx context.Context, dist *zenmetrics.Image, st *webgpu.StagingSlot, c *scoreCmd, pre *filled,
	need, size int64, host []float32, ph *ssim2Phases) (float64, error) {
	ssim2EarlyCount.Add(1)
	gate := &fillGate{}
	type submitted struct {
		rb   *webgpu.Readback
		read bool
		err  error
	}
	out := make(chan submitted, 1)
	go func() {
		r.seq.Lock()
		rb, read, err := r.submitLocked(ctx, dist, c, pre, host, ph, gate)
		r.seq.Unlock()
		out <- submitted{rb, read, err}
	}()
	filledOK := false
	defer func() {
		// Should the fill panic, the device thread must not spin on.
		if !filledOK {
			gate.state.Store(2)
		}
	}()
	pre.fill = ssim2Fill(st.Mem, dist.Pix, need, size)
	ph.Fill = pre.fill
	filledOK = true
	gate.state.Store(1)
	t1 := time.Now()
	res := <-out
	ph.Submit = time.Since(t1)
	ph.early = true
	return r.endPipelined(ctx, dist, st, res.rb, res.read, host, ph, res.err)
}
