// Package upband is the host path the WebGPU metrics share for pipelined
// scores of a cached reference: the distorted image is written into mapped
// staging slots (webgpu.StagingRing) on the caller's goroutines while the
// device thread records the score, large images in row bands whose copy
// (and whatever per-row work the metric can start) is submitted as soon as
// each band is filled, overlapped with the fill of the next. It holds no
// metric code: a metric says what to record and submit per band through
// hooks, and keeps its own locks. gpu/webgpu/ssim2/SSIM2_PERF.md and
// BENCHMARKS.md have the H200 measurements that shaped it.
package upband

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// EnvInt is the positive integer in environment variable name, else def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Plan is how a metric splits an upload into row bands.
type Plan struct {
	Bytes int64 // raw bytes per band the default aims at
	Max   int   // most bands
	// Align is the rows band starts are a multiple of: a band's windows of
	// the raw upload (rows × stride bytes) and of float planes (rows ×
	// width × 4 bytes) must start on WebGPU's storage-binding offset
	// alignment, at most 256 bytes on any device, so 256 rows always do.
	Align int
}

// Count is how many bands an image h rows high with need raw bytes
// uploads in (1: unbanded). env is the metric's switch: "off" (never
// band), "on" (every image with room for two bands or more, at least
// two), a number (that many, at most Max, where there is room) or ""
// (one band per Bytes, at most Max, none below two).
func (p Plan) Count(h int, need int64, env string) int {
	n := int(min(need/p.Bytes, int64(p.Max)))
	switch env {
	case "off":
		return 1
	case "on":
		n = max(n, 2)
	case "":
	default:
		if v, err := strconv.Atoi(env); err == nil {
			n = min(v, p.Max)
		}
	}
	n = min(n, h/p.Align)
	return max(n, 1)
}

// Rows is the band boundaries of n bands over h rows: n+1 rows from 0 to
// h, the inner ones multiples of Align near i·h/n (each band at least
// Align rows when h ≥ n·Align).
func (p Plan) Rows(h, n int) []int {
	rows := make([]int, n+1)
	for i := 1; i < n; i++ {
		rows[i] = i * h / n / p.Align * p.Align
	}
	rows[n] = h
	return rows
}

// Cuts is the byte offsets of the bands rows of an image with this row
// stride and need raw bytes: cuts[b] to cuts[b+1] is band b's bytes, the
// last band ending at the image's last byte (its last row may be short).
func Cuts(rows []int, stride int, need int64) []int64 {
	cuts := make([]int64, len(rows))
	for i, y := range rows {
		cuts[i] = int64(y) * int64(stride)
	}
	cuts[len(cuts)-1] = need
	return cuts
}

// Fill copies pix[:need] into mem and zeroes mem[need:size], in pieces of
// chunk bytes (at least 64 KiB) on up to GOMAXPROCS goroutines, and
// returns the time it took. On a device-local, host-visible staging
// buffer (an H200's) this is the PCIe transfer: one goroutine's memcpy
// does not saturate the link.
func Fill(mem, pix []byte, need, size int64, chunk int) time.Duration {
	t0 := time.Now()
	n := int(need)
	chunk = max(chunk, 64<<10)
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

// PutSlot maps st again and gives it back to ring. With later that
// happens on another goroutine, after the caller has its score: the map
// is a device-thread round trip the next score on this slot needs, not
// this one. A slot that could not be mapped goes back unmapped (Take maps
// it).
func PutSlot(dev *webgpu.Device, ring *webgpu.StagingRing, st *webgpu.StagingSlot, later bool) {
	put := func() {
		_ = dev.Do(context.Background(), st.Remap)
		ring.Put(st)
	}
	if later {
		go put()
		return
	}
	put()
}

// Phases is one pipelined score's host timeline (a metric's trace switch),
// in the order of the critical path: Take (a mapped staging slot), Fill
// (writing it), RecWait (waiting, after the fill, for the command buffer
// recorded meanwhile; Record is how long the device thread took to record
// it, overlapped with the fill), Submit (the device-thread call that
// unmaps and submits and then waits the first slice for the GPU: of it,
// Queue is the time up to Queue.Submit's return, Slice that first wait),
// Wait (the later slices and the read-back) and Finish (giving the slot
// back). Banded scores add Bands (how many) and Early (the device-thread
// time of the bands' submits, overlapped with later fills) and TakeMaps;
// their Fill, Take and RecWait sum over the bands.
type Phases struct {
	T0                       time.Time
	Take, Fill, Submit, Wait time.Duration
	Finish                   time.Duration
	Record, RecWait          time.Duration
	Queue, Slice             time.Duration
	// Ready is when the first wait saw the GPU done, from its start (0:
	// it did not).
	Ready time.Duration
	Bands int
	Early time.Duration
	// TakeMaps counts a banded score's takes whose slot had to be mapped
	// there (StagingRing.Maps; concurrent callers of one ring may blur
	// it): the rest of Take waited for a slot to come back.
	TakeMaps int
}

// Print writes the timeline of a score of a w×h image to stderr, as
// "name WxH: take ... us (...)".
func (p *Phases) Print(name string, w, h int) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	band := ""
	if p.Bands > 1 {
		band = fmt.Sprintf(" bands %d early %.0f takemaps %d", p.Bands, us(p.Early), p.TakeMaps)
	}
	fmt.Fprintf(os.Stderr, "%s %dx%d: take %.0f fill %.0f rec-wait %.0f submit %.0f wait %.0f finish %.0f total %.0f us (record %.0f queue %.0f slice %.0f ready %.0f%s)\n", name, w, h,
		us(p.Take), us(p.Fill), us(p.RecWait), us(p.Submit), us(p.Wait), us(p.Finish), us(time.Since(p.T0)),
		us(p.Record), us(p.Queue), us(p.Slice), us(p.Ready), band)
}

// FirstSlice is the first wait of a score just submitted, in the same
// device-thread call (one round trip less; the device thread would block
// in the wait's first call anyway): it waits up to slice for rb and, if
// the GPU is done by then, calls read (which reads rb and any other
// read-back of the score) and reports true. It books the time since t0
// (the submit) as Queue, its own as Slice and, when it saw the GPU done,
// that moment (from the start of the wait) as Ready. Device thread.
//
// spin > 0: when the slice ends with the GPU not done, it polls (WaitAny
// without a timeout) for up to spin more before giving up, which saves the
// wait's next device-thread call and its two hand-offs when the GPU is
// nearly done (a WaitAny that the GPU wakes returns late, one that times
// out returns on time, so the slice itself is not made longer).
func (p *Phases) FirstSlice(t0 time.Time, rb *webgpu.Readback, slice, spin time.Duration, read func() error) (bool, error) {
	return p.firstSlice(t0, rb.PollFor, slice, spin, read)
}

// firstSlice is FirstSlice with the read-back's poll passed in (tests).
func (p *Phases) firstSlice(t0 time.Time, poll func(time.Duration) (bool, error), slice, spin time.Duration, read func() error) (bool, error) {
	t := time.Now()
	p.Queue = t.Sub(t0)
	defer func() { p.Slice = time.Since(t) }()
	ready, err := poll(slice)
	for end := t.Add(slice + spin); err == nil && !ready && spin > 0 && time.Now().Before(end); {
		ready, err = poll(0)
	}
	if err != nil || !ready {
		return false, err
	}
	p.Ready = time.Since(t)
	return true, read()
}

// AwaitSlices waits for rb in device-thread calls that each block up to
// slice (Dawn wakes the call when the GPU is done; between calls other
// callers' device work gets in), and calls read in the call that sees rb
// ready. On error nothing was read; drain (device thread) then runs after
// any call still running, to drain rb and the score's other read-backs.
func AwaitSlices(ctx context.Context, dev *webgpu.Device, rb *webgpu.Readback, slice time.Duration, read, drain func(g *webgpu.GPU) error) error {
	done := false
	var err error
	for err == nil && !done {
		err = dev.Do(ctx, func(g *webgpu.GPU) error {
			ready, err := rb.PollFor(slice)
			if err != nil || !ready {
				return err
			}
			done = true
			return read(g)
		})
	}
	if err != nil {
		_ = dev.Do(context.Background(), func(g *webgpu.GPU) error {
			if !done {
				done = true
				return drain(g)
			}
			return nil
		})
	}
	return err
}
