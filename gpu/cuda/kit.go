package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// This file is the small kit the metric packages share: a staged upload
// of interleaved 8/16-bit pixels through page-locked double buffers, and a
// worker (stream + staging + a small read-back buffer) per concurrent
// scorer.

// RawBytes is the bytes an image occupies from its first sample to its
// last: stride·(h−1) + w·bytes per pixel. Uploads copy exactly these, and
// kernels index rows by the stride.
func RawBytes(im *zenmetrics.Image) int64 {
	if im.Height <= 0 {
		return 0
	}
	return int64(im.Stride)*int64(im.Height-1) + int64(im.Width)*int64(im.Format.BytesPerPixel())
}

// stageChunk is the size of one staging buffer: large enough that a copy
// runs at the DMA engine's speed, small enough that filling the next one
// on the CPU overlaps the copy of this one.
const stageChunk = 8 << 20

// Worker is one scorer's stream with its staging: two page-locked chunks
// (filled alternately, so the CPU copies chunk i+1 while the DMA engine
// moves chunk i) and a page-locked read-back area.
type Worker struct {
	Dev    *Device
	Stream *Stream
	Copy   *Stream // UploadOverlapped's copies, beside Stream's kernels
	stage  [2]*HostBuffer
	done   [2]*Event
	used   [2]bool
	chunk  int64
	Out    *HostBuffer // read-back area (OutBytes)
}

// NewWorker makes a worker for uploads of about upBytes (its staging
// chunks are that large, between 64 KiB and 8 MiB) with outBytes of
// page-locked read-back space.
func NewWorker(d *Device, upBytes, outBytes int64) (*Worker, error) {
	w := &Worker{Dev: d, chunk: min(max(upBytes, 64<<10), stageChunk)}
	var err error
	if w.Stream, err = d.NewStream(); err != nil {
		return nil, err
	}
	if w.Copy, err = d.NewStream(); err != nil {
		w.Close()
		return nil, err
	}
	for i := range w.stage {
		if w.stage[i], err = d.HostAlloc(w.chunk); err != nil {
			w.Close()
			return nil, err
		}
		if w.done[i], err = d.NewEvent(); err != nil {
			w.Close()
			return nil, err
		}
	}
	if w.Out, err = d.HostAlloc(outBytes); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Close waits for the stream and frees everything.
func (w *Worker) Close() {
	for _, st := range []*Stream{w.Stream, w.Copy} {
		if st != nil {
			_ = st.Sync()
			st.Destroy()
		}
	}
	for i := range w.stage {
		w.done[i].Destroy()
	}
	w.Dev.FreeHost(w.stage[0], w.stage[1], w.Out)
}

// Upload queues the copy of src into dst (from offset 0) through the two
// staging chunks. It returns once the last chunk is queued: the caller's
// src may be reused then, and the stream's later work sees the data.
// Pixels of a PinnedImage are copied in place instead, without staging:
// those must stay untouched until the stream has passed the copy (a
// Score returns after that).
func (w *Worker) Upload(dst *Buffer, src []byte) error {
	n := int64(len(src))
	if n > dst.Size {
		return fmt.Errorf("%w: cuda: upload of %d bytes into %d", zenmetrics.ErrBadInput, n, dst.Size)
	}
	if p, ok := pinnedPtr(src); ok {
		// A PinnedImage's pixels: the DMA engine reads them in place.
		return w.Stream.uploadPtr(dst, 0, p, n)
	}
	for off, i := int64(0), 0; off < n; off, i = off+w.chunk, i+1 {
		k := i & 1
		if w.used[k] {
			if err := w.done[k].Sync(); err != nil {
				return err
			}
		}
		m := min(w.chunk, n-off)
		parallelCopy(w.stage[k].Bytes[:m], src[off:off+m])
		if err := w.Stream.Upload(dst, off, w.stage[k], 0, m); err != nil {
			return err
		}
		if err := w.done[k].Record(w.Stream); err != nil {
			return err
		}
		w.used[k] = true
	}
	return nil
}

// UploadOverlapped is Upload with the copies on the worker's Copy stream,
// so that kernels on Stream run while later chunks travel: after each
// chunk is queued, Stream is made to wait for it and ready is called with
// the bytes of src now available to Stream's later work (a prefix), for
// the caller to queue the kernels those bytes allow.
func (w *Worker) UploadOverlapped(dst *Buffer, src []byte, ready func(end int64) error) error {
	n := int64(len(src))
	if n > dst.Size {
		return fmt.Errorf("%w: cuda: upload of %d bytes into %d", zenmetrics.ErrBadInput, n, dst.Size)
	}
	p, direct := pinnedPtr(src)
	for off, i := int64(0), 0; off < n; off, i = off+w.chunk, i+1 {
		k := i & 1
		m := min(w.chunk, n-off)
		if direct {
			// A PinnedImage: chunks go straight from its pixels, with
			// no host copy and so no wait for a staging chunk.
			if err := w.Copy.uploadPtr(dst, off, unsafe.Add(p, off), m); err != nil {
				return err
			}
		} else {
			if w.used[k] {
				if err := w.done[k].Sync(); err != nil {
					return err
				}
			}
			parallelCopy(w.stage[k].Bytes[:m], src[off:off+m])
			if err := w.Copy.Upload(dst, off, w.stage[k], 0, m); err != nil {
				return err
			}
		}
		if err := w.done[k].Record(w.Copy); err != nil {
			return err
		}
		w.used[k] = true
		if err := w.Stream.Wait(w.done[k]); err != nil {
			return err
		}
		if err := ready(off + m); err != nil {
			return err
		}
	}
	return nil
}

// Span is the first N bytes of a device buffer, for ReadBack.
type Span struct {
	Buf *Buffer
	N   int64
}

// ReadBack is the end of a score: it queues the download of spans into
// Out, back to back from offset 0, waits for Stream and returns those
// bytes of Out (valid until the worker's next read-back).
func (w *Worker) ReadBack(spans ...Span) ([]byte, error) {
	var off int64
	for _, s := range spans {
		if err := w.Stream.Download(w.Out, off, s.Buf, 0, s.N); err != nil {
			return nil, err
		}
		off += s.N
	}
	if err := w.Stream.Sync(); err != nil {
		return nil, err
	}
	return w.Out.Bytes[:off], nil
}

// Float64s decodes the n little-endian doubles at the start of b, as the
// kernels write them.
func Float64s(b []byte, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// Float32s decodes the n little-endian floats at the start of b (a
// read-back map).
func Float32s(b []byte, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// parallelCopy copies with a few goroutines for large chunks: one core's
// memcpy into page-locked memory runs well below the DMA engine's speed.
func parallelCopy(dst, src []byte) {
	const part = 2 << 20
	if len(src) < 2*part {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for off := 0; off < len(src); off += part {
		end := min(off+part, len(src))
		wg.Add(1)
		go func(a, b int) {
			defer wg.Done()
			copy(dst[a:b], src[a:b])
		}(off, end)
	}
	wg.Wait()
}
