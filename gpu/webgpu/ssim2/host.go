package ssim2

import (
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
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
var ssim2FillChunk = upband.EnvInt("ZENMETRICS_SSIM2_FILL_CHUNK", 512<<10)

// How a pipelined score waits for the GPU (ssim2Wait).
//
// The kit's WaitReady polls the read-back in short device-thread calls;
// once it polled with sleeps of 20–200 µs between them, and measured on
// an H200 (one caller, 1 MP) its wait took 1.2 ms for ~0.45 ms of GPU
// work: an idle Go process sleeps far longer than asked. Blocking the
// device thread in the read-back instead took 0.44 ms, and the whole
// score 1.70 → 0.86 ms; but a blocked device thread would keep a second
// caller from submitting its score meanwhile, which is what pipelining is
// for. So the default waits in slices: a device-thread call blocks in
// WaitAny on the read-back's map for at most ssim2WaitSlice (Dawn wakes
// it when the GPU is done), then lets other callers' device work in, and
// waits again; the call that sees the map done copies the sums out at
// once. (Until now the slices waited on the queue's work-done future and
// a second device-thread call read the sums and remapped the staging
// slot: ~100 µs of a 0.73 ms score at 1 MP on the H200, the "finish"
// phase, which ZENMETRICS_SSIM2_WAIT=poll and ZENMETRICS_SSIM2_REMAP=now
// bring back for A/B measurements.)
const (
	ssim2WaitSlices = iota // default: timed WaitAny slices, the last one reads
	ssim2WaitPoll          // ZENMETRICS_SSIM2_WAIT=poll: the kit's WaitReady, then a read
	ssim2WaitBlock         // ZENMETRICS_SSIM2_WAIT=block: the read-back blocks
)

// ssim2Wait is how pipelined scores wait (the environment may pick another
// for measurements).
var ssim2Wait = map[string]int{"poll": ssim2WaitPoll, "block": ssim2WaitBlock}[os.Getenv("ZENMETRICS_SSIM2_WAIT")]

// ssim2WaitSlice is the longest one device-thread call waits for the GPU.
const ssim2WaitSlice = 250 * time.Microsecond

// ssim2TailSpin is how long the first wait slice of a score goes on
// polling after its timed wait when the score is the only pipelined one in
// flight (ssim2InFlight): at 1 MP on the H200 the GPU is done ~285 µs
// after the submit, just past the slice, and the wait's second
// device-thread call cost two hand-offs. Session 12 (H200, processes
// alternated): per-process medians 0.51–0.52 ms with it against 0.53–0.59
// without in one call, equal (0.50–0.56 / 0.50–0.58) in another.
// ZENMETRICS_SSIM2_TAILSPIN (µs) sets it for A/B measurements; 0 turns it
// off.
var ssim2TailSpin = func() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("ZENMETRICS_SSIM2_TAILSPIN")); err == nil && v >= 0 {
		return time.Duration(v) * time.Microsecond
	}
	return 120 * time.Microsecond
}()

// ssim2InFlight counts the pipelined scores, banded or not, from their
// submit to their read-back, over every reference of the process: with
// another score in flight the GPU is busy with it and the device thread is
// better let go. Banded scores never spin (their GPU tail after the last
// band is longer than the spin).
var ssim2InFlight atomic.Int32

// ssim2Overlap records a pipelined score's command buffer on the device
// thread while the caller fills the staging slot, instead of after
// (ZENMETRICS_SSIM2_OVERLAP=off for A/B measurements). At 1 MP on the
// H200 the fill took ~115 µs and the submit phase, which recorded ~20
// dispatches, finished and submitted them, ~250 µs.
var ssim2Overlap = os.Getenv("ZENMETRICS_SSIM2_OVERLAP") != "off"

// ssim2RemapLater maps a pipelined score's staging slot again after the
// score has returned, on its own goroutine (pipe.go's putSlot);
// ZENMETRICS_SSIM2_REMAP=now does it before returning, as before.
var ssim2RemapLater = os.Getenv("ZENMETRICS_SSIM2_REMAP") != "now"

// ssim2Trace prints each pipelined score's host phases to stderr
// (ZENMETRICS_SSIM2_TRACE=1; measurements only).
var ssim2Trace = os.Getenv("ZENMETRICS_SSIM2_TRACE") != ""

// ssim2HBlurPair compiles hblur4 with PAIR (two steps per iteration, the
// input blocks of a 32-byte sector requested back to back; bit-identical);
// ZENMETRICS_SSIM2_PAIR=0 turns it off for measurements. Read when the
// kernels compile.
var ssim2HBlurPair = os.Getenv("ZENMETRICS_SSIM2_PAIR") != "0"

// ssim2Fill copies pix[:need] into mem and zeroes mem[need:size], in
// pieces of ssim2FillChunk bytes on up to GOMAXPROCS goroutines
// (upband.Fill), and returns the time it took.
func ssim2Fill(mem, pix []byte, need, size int64) time.Duration {
	return upband.Fill(mem, pix, need, size, ssim2FillChunk)
}

// ssim2Phases is one pipelined score's host timeline (ssim2Trace;
// upband.Phases says what each phase is); legacy marks a banded score
// with the legacy band work (ZENMETRICS_SSIM2_BANDWORK=0, bandwork.go),
// whose line is named "ssim2-legacy" so that the two can be told apart.
type ssim2Phases struct {
	upband.Phases
	legacy bool
	ahead  bool // the score submitted commands recorded ahead (prerec.go)
}

func (p *ssim2Phases) print(w, h int) {
	if !ssim2Trace {
		return
	}
	name := "ssim2"
	if p.legacy {
		name = "ssim2-legacy"
	}
	if p.ahead {
		name += "-ahead"
	}
	p.Print(name, w, h)
}
