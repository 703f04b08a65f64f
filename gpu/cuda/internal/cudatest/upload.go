package cudatest

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/launch"
)

// The fixtures the launch-plan and emulation tests share: fake device
// buffers with the device's rounding, and the replay of an overlapped
// upload (Worker.UploadOverlapped), whose ready callback queues the
// conversion of the rows each chunk completes.

// NewFake is the fake allocator with the device's rounding (cuda.AllocSize),
// so that buffer sizes, and the estimates checked against them, are the
// device's.
func NewFake() *cudaemu.FakeAlloc { return &cudaemu.FakeAlloc{Round: cuda.AllocSize} }

// ChunkEnds are the prefixes an overlapped upload of total bytes reports,
// in chunks of chunk bytes (the last one is total).
func ChunkEnds(total, chunk int64) []int64 {
	var out []int64
	for off := int64(0); off < total; off += chunk {
		out = append(out, min(off+chunk, total))
	}
	return out
}

// Rows is an image's overlapped upload as a launch-plan test replays it:
// H rows Stride bytes apart of Row bytes each, arriving in chunks of
// Chunk bytes. Y1Arg is the argument in which a conversion launch names
// the end of the rows it converts.
type Rows struct {
	H                  int
	Stride, Row, Chunk int64
	Y1Arg              int
}

// Total is the bytes of the upload: Stride·(H−1) + Row.
func (u Rows) Total() int64 { return u.Stride*int64(u.H-1) + u.Row }

// Record records one side of a preparation or score as the host queues
// it: ready, made by start on the recorder, called with each prefix of
// u's upload (ChunkEnds), checking that every launch it queues converts
// only rows whose bytes have all arrived; then tail's launches. It hands
// every launch, in order, to check (the metric's own checks).
func Record(t *testing.T, name string, u Rows, start func(q launch.Launcher) func(end int64) error, tail func(q launch.Launcher) error, check func(i int, l cudaemu.Launch)) {
	t.Helper()
	var r cudaemu.Recorder
	ready := start(&r)
	for _, end := range ChunkEnds(u.Total(), u.Chunk) {
		n := len(r.L)
		if err := ready(end); err != nil {
			t.Fatalf("%s: ready(%d): %v", name, end, err)
		}
		for _, l := range r.L[n:] {
			if y1 := l.Args[u.Y1Arg].(int); u.Stride*int64(y1-1)+u.Row > end {
				t.Errorf("%s: %s of row %d queued with %d bytes arrived", name, l.K.Name, y1-1, end)
			}
		}
	}
	if err := tail(&r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i, l := range r.L {
		check(i, l)
	}
}

// Wrote marks bufs as holding data (uploaded before the launches).
func (c *Launches) Wrote(bufs ...*cuda.Buffer) {
	for _, b := range bufs {
		c.Written[b.Ptr] = true
	}
}
