package ssim2

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// Host side of a pipelined score (pipe.go): filling the staging buffer and
// waiting for the result.
//
// At 1 MP the GPU part of a score is ~0.4 ms on an H200 while the whole
// score took ~1.9 ms: the rest is host work. The fill copies the distorted
// image's bytes into mapped, write-combined staging memory; the kit's copy
// splits it into 4 MiB pieces, so a 1 MP RGB8 image (3 MiB) was one
// goroutine's memcpy. ssim2Fill splits it into pieces of ssim2FillChunk
// bytes over up to GOMAXPROCS goroutines.

// ssim2FillChunk is the bytes one goroutine copies into the staging buffer
// (ZENMETRICS_SSIM2_FILL_CHUNK overrides it for measurements).
var ssim2FillChunk = envInt("ZENMETRICS_SSIM2_FILL_CHUNK", 512<<10)

// How a pipelined score waits for the GPU (ssim2Wait).
//
// The kit's WaitReady polls the read-back in short device-thread calls with
// sleeps of 20–200 µs between them; measured on an H200 (one caller, 1 MP)
// its wait took 1.2 ms for ~0.45 ms of GPU work: an idle Go process sleeps
// far longer than asked (the runtime parks in the network poller, whose
// timeout is coarse). Blocking the device thread in the read-back instead
// took 0.44 ms, and the whole score 1.70 → 0.86 ms; but a blocked device
// thread would keep a second caller from submitting its score meanwhile,
// which is what pipelining is for. So the default waits in slices: a
// device-thread call blocks in WaitAny on the queue's work-done future for
// at most ssim2WaitSlice (Dawn wakes it when the GPU is done, as the
// blocking read-back does), then lets other callers' device work in, and
// waits again.
const (
	ssim2WaitSlices = iota // default: timed WaitAny slices
	ssim2WaitPoll          // ZENMETRICS_SSIM2_WAIT=poll: the kit's WaitReady
	ssim2WaitBlock         // ZENMETRICS_SSIM2_WAIT=block: the read-back blocks
)

// ssim2Wait is how pipelined scores wait (the environment may pick another
// for measurements).
var ssim2Wait = map[string]int{"poll": ssim2WaitPoll, "block": ssim2WaitBlock}[os.Getenv("ZENMETRICS_SSIM2_WAIT")]

// ssim2WaitSlice is the longest one device-thread call waits for the GPU.
const ssim2WaitSlice = 250 * time.Microsecond

// ssim2WorkDone returns a future that completes when the GPU has finished
// everything submitted so far (device thread).
func ssim2WorkDone(g *webgpu.GPU) wgpu.Future {
	_, _, q := g.Raw()
	return q.OnSubmittedWorkDone(wgpu.CallbackModeWaitAnyOnly, func(wgpu.QueueWorkDoneStatus, string) {})
}

// ssim2WaitDone waits for f in device-thread calls of at most
// ssim2WaitSlice each.
func ssim2WaitDone(ctx context.Context, d *webgpu.Device, f wgpu.Future) error {
	if f.ID == 0 {
		return errors.New("webgpu: SSIMULACRA2: no work-done future to wait on")
	}
	for {
		var ready bool
		err := d.Do(ctx, func(g *webgpu.GPU) error {
			inst, _, _ := g.Raw()
			info := []wgpu.FutureWaitInfo{{Future: f}}
			st := inst.WaitAny(info, uint64(ssim2WaitSlice))
			switch {
			case st == wgpu.WaitStatusSuccess && info[0].Completed != 0:
				ready = true
			case st == wgpu.WaitStatusSuccess || st == wgpu.WaitStatusTimedOut:
			default:
				return fmt.Errorf("webgpu: SSIMULACRA2: waiting for the GPU: WaitAny: %s", st)
			}
			return nil
		})
		if err != nil || ready {
			return err
		}
	}
}

// ssim2Trace prints each pipelined score's host phases to stderr
// (ZENMETRICS_SSIM2_TRACE=1; measurements only).
var ssim2Trace = os.Getenv("ZENMETRICS_SSIM2_TRACE") != ""

// ssim2HBlurPair compiles hblur4 with PAIR (two steps per iteration, the
// input blocks of a 32-byte sector requested back to back; bit-identical);
// ZENMETRICS_SSIM2_PAIR=0 turns it off for measurements. Read when the
// kernels compile.
var ssim2HBlurPair = os.Getenv("ZENMETRICS_SSIM2_PAIR") != "0"

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// ssim2Fill copies pix[:need] into mem and zeroes mem[need:size], in
// pieces of ssim2FillChunk bytes on up to GOMAXPROCS goroutines, and
// returns the time it took.
func ssim2Fill(mem, pix []byte, need, size int64) time.Duration {
	t0 := time.Now()
	n := int(need)
	chunk := max(ssim2FillChunk, 64<<10)
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers <= 1 {
		copy(mem[:n], pix[:n])
	} else {
		per := (n + workers - 1) / workers
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			lo, hi := w*per, min(n, (w+1)*per)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(mem[lo:hi], pix[lo:hi])
			}()
		}
		wg.Wait()
	}
	clear(mem[need:size])
	return time.Since(t0)
}

// ssim2Phases is one pipelined score's host timeline (ssim2Trace).
type ssim2Phases struct {
	t0                       time.Time
	take, fill, submit, wait time.Duration
	finish                   time.Duration
}

func (p *ssim2Phases) print(w, h int) {
	if !ssim2Trace {
		return
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	fmt.Fprintf(os.Stderr, "ssim2 %dx%d: take %.0f fill %.0f submit %.0f wait %.0f finish %.0f total %.0f us\n", w, h,
		us(p.take), us(p.fill), us(p.submit), us(p.wait), us(p.finish), us(time.Since(p.t0)))
}
