package cudatest

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
)

// Replay runs a metric's recorded work in the emulator in the order a
// device would: the launches are recorded into Rec, and every upload
// first replays what was recorded before it (the kernels queued so far
// run before the copy lands, as StripUpload and a stream's order make
// them), then lands its bytes. The emulated strip tests of every metric
// drive their queues through it.
type Replay struct {
	Run  *cudaemu.Session
	Rec  cudaemu.Recorder
	done int
}

// NewReplay starts a session of emu over bufs (cudaemu.Emulator.Session).
func NewReplay(t testing.TB, emu *cudaemu.Emulator, bufs []*cuda.Buffer) *Replay {
	return &Replay{Run: emu.Session(t, bufs)}
}

// Flush replays the launches recorded since the last Flush.
func (r *Replay) Flush() {
	r.Run.Replay(r.Rec.L[r.done:])
	r.done = len(r.Rec.L)
}

// Upload is a plain upload (Worker.Upload's shape): the launches
// recorded so far, then src into dst.
func (r *Replay) Upload(dst *cuda.Buffer, src []byte) error {
	r.Flush()
	r.Run.Upload(dst, src)
	return nil
}

// Chunked is an overlapped upload (StripUpload.Upload's shape): as
// Upload, then ready at the end of every chunk of chunk bytes
// (ChunkEnds), as the chunks of a real one become visible to the
// kernels' stream; an odd chunk makes the unpacks see partial rows.
func (r *Replay) Chunked(chunk int64) func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error {
	return func(dst *cuda.Buffer, src []byte, ready func(end int64) error) error {
		_ = r.Upload(dst, src)
		for _, end := range ChunkEnds(int64(len(src)), chunk) {
			if err := ready(end); err != nil {
				return err
			}
		}
		return nil
	}
}
