package butteraugli

import (
	"fmt"
	"os"
	"time"
)

// bfTrace prints each score's host phases to stderr
// (ZENMETRICS_BA_TRACE=1; measurements only), so that the host part of a
// cached score can be told from the GPU part (Bench, PassProfile): on a
// 16 MP image the upload fills 48 MiB of mapped staging memory, which on a
// discrete GPU is the PCIe transfer itself.
var bfTrace = os.Getenv("ZENMETRICS_BA_TRACE") != ""

// A pipelined score (pipe.go) prints upband.Phases' line instead, the
// same fields as SSIMULACRA2's ZENMETRICS_SSIM2_TRACE (take, fill,
// rec-wait, submit, wait, finish; record, queue, slice; bands, early).
// A banded score's early is its band submits' device-thread time, the
// head windows they record included (window.go); the reference prints
// each band count's band rows and window ends once, when it makes their
// uniforms (traceHeads).

// bfPhases is one score's host timeline (bfTrace): take (waiting for the
// device thread), fill (the distorted image into the raw buffer: mapping
// and filling the staging buffer, or a queue write), submit (recording
// and Queue.Submit), wait (until the 32-byte result is mapped: the GPU's
// work) and finish (the distance map's read-back, if any, and the rest of
// the device-thread call). Zero value: off.
type bfPhases struct {
	on                               bool
	t0, last                         time.Time
	take, fill, submit, wait, finish time.Duration
}

func newPhases() bfPhases {
	if !bfTrace {
		return bfPhases{}
	}
	now := time.Now()
	return bfPhases{on: true, t0: now, last: now}
}

// lap books the time since the previous lap into d.
func (p *bfPhases) lap(d *time.Duration) {
	if !p.on {
		return
	}
	now := time.Now()
	*d += now.Sub(p.last)
	p.last = now
}

// print writes the timeline of a score of rows [lo, hi) of a w×h image.
func (p *bfPhases) print(w, h, lo, hi int) {
	if !p.on {
		return
	}
	p.lap(&p.finish)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	win := ""
	if lo != 0 || hi != h {
		win = fmt.Sprintf(" rows %d-%d", lo, hi)
	}
	fmt.Fprintf(os.Stderr, "butteraugli %dx%d%s: take %.0f fill %.0f submit %.0f wait %.0f finish %.0f total %.0f us\n",
		w, h, win, us(p.take), us(p.fill), us(p.submit), us(p.wait), us(p.finish), us(time.Since(p.t0)))
}
