package webgpu

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// How a distorted image's 8/16-bit bytes reach the GPU, shared by every
// metric. Small images go through queue.writeBuffer. From stagingMin on,
// they are written into a persistent mapped staging buffer (filled on
// several goroutines) and copied on the GPU: on an H200 that took a 16 MP
// upload from writeBuffer's ~4 GB/s path (Dawn's own staging copies) to a
// few ms, e.g. a 16 MP Butteraugli score from 48.8 to 10.6 ms.

// stagingMin is the raw size from which uploads use the staging buffer.
const stagingMin = 1 << 20

// UploadStats is the host side of the uploads of images' 8/16-bit bytes
// through the shared upload path (queue.writeBuffer below stagingMin;
// from it, waiting for the persistent staging buffer to map, filling it on
// several goroutines and unmapping it). Total is the wall time of those
// host calls, measured with time.Since from their start to their return.
// It does not include the GPU-side copy from the staging buffer into the
// storage buffer: that command is recorded at the start of the score's own
// command buffer and executes (and is timed) as part of the score. Nor the
// unpacking of the bytes into float planes, which is a scoring kernel.
//
// Count, Total and Bytes are the uploads made while scoring (Reference.Score
// and anything else not inside Backend.Prepare): the distorted image, and
// for a strip reference that recomputes its reference per score the
// reference crops too (one upload per strip and image). Ref* are the
// uploads made inside Backend.Prepare, which a caller books as preparation.
// Bytes counts the image bytes sent, not the 4-byte padding.
type UploadStats struct {
	Count int64         `json:"count"`
	Total time.Duration `json:"total_ns"`
	Bytes int64         `json:"bytes"`

	RefCount int64         `json:"ref_count"`
	RefTotal time.Duration `json:"ref_total_ns"`
	RefBytes int64         `json:"ref_bytes"`
}

// Sub is s − t, field by field: the uploads between two snapshots.
func (s UploadStats) Sub(t UploadStats) UploadStats {
	return UploadStats{Count: s.Count - t.Count, Total: s.Total - t.Total, Bytes: s.Bytes - t.Bytes,
		RefCount: s.RefCount - t.RefCount, RefTotal: s.RefTotal - t.RefTotal, RefBytes: s.RefBytes - t.RefBytes}
}

// uploadCounters accumulate UploadStats for one device. They are atomics
// because the device thread writes them while any goroutine may read them
// (Backend.UploadStats does not wait for the device).
type uploadCounters struct {
	n, ns, bytes          atomic.Int64
	refN, refNs, refBytes atomic.Int64
}

// uploadMap holds the counters of each device (*Device → *uploadCounters),
// kept here rather than on Device so that the upload path owns its own
// accounting. An entry is a few words; it outlives a closed device as
// statsMap's does.
var uploadMap sync.Map

func uploads(d *Device) *uploadCounters {
	if c, ok := uploadMap.Load(d); ok {
		return c.(*uploadCounters)
	}
	c, _ := uploadMap.LoadOrStore(d, &uploadCounters{})
	return c.(*uploadCounters)
}

func (c *uploadCounters) snapshot() UploadStats {
	return UploadStats{Count: c.n.Load(), Total: time.Duration(c.ns.Load()), Bytes: c.bytes.Load(),
		RefCount: c.refN.Load(), RefTotal: time.Duration(c.refNs.Load()), RefBytes: c.refBytes.Load()}
}

// preparingKey marks the context of Backend.Prepare: uploads made by Do
// closures running under it are references being prepared.
type preparingKey struct{}

// withPreparing returns ctx marked as preparing a reference.
func withPreparing(ctx context.Context) context.Context {
	return context.WithValue(ctx, preparingKey{}, true)
}

// noteUpload books one upload of n bytes that started at t0 (device
// thread: g.ctx is the running Do call's context).
func noteUpload(g *GPU, t0 time.Time, n int64) {
	d := time.Since(t0)
	c := uploads(g.d)
	if g.ctx != nil && g.ctx.Value(preparingKey{}) != nil {
		c.refN.Add(1)
		c.refNs.Add(int64(d))
		c.refBytes.Add(n)
		return
	}
	c.n.Add(1)
	c.ns.Add(int64(d))
	c.bytes.Add(n)
}

// noteUploadDur books one upload of n bytes whose host side took d (for
// uploads filled off the device thread: pipelined SSIMULACRA2 scores).
func noteUploadDur(g *GPU, d time.Duration, n int64) {
	c := uploads(g.d)
	c.n.Add(1)
	c.ns.Add(int64(d))
	c.bytes.Add(n)
}

// mapForWrite maps staging (MapWrite|CopySrc) for writing and returns its
// first size bytes. Device thread.
func mapForWrite(g *GPU, staging *Buffer, size int64) ([]byte, error) {
	var (
		status wgpu.MapAsyncStatus
		msg    string
	)
	h := staging.Handle()
	f := h.MapAsync(wgpu.MapModeWrite, 0, uintptr(size), wgpu.CallbackModeWaitAnyOnly, func(st wgpu.MapAsyncStatus, m string) {
		status, msg = st, m
	})
	if err := waitFuture(g.d.inst, f, "mapAsync"); err != nil {
		return nil, err
	}
	if status != wgpu.MapAsyncStatusSuccess {
		if lost := g.d.lostErr(); lost != nil {
			return nil, lost
		}
		return nil, fmt.Errorf("webgpu: mapAsync (write): %s: %s", status, msg)
	}
	ptr := h.GetMappedRange(0, uintptr(size))
	if ptr == nil {
		h.Unmap()
		return nil, fmt.Errorf("webgpu: GetMappedRange returned NULL")
	}
	return unsafe.Slice((*byte)(ptr), size), nil
}

// writeRaw uploads pix[:need] into raw with queue.writeBuffer; a tail that
// is not a multiple of 4 bytes (WebGPU's copy alignment) is padded.
func writeRaw(g *GPU, raw *Buffer, pix []byte, need int64) {
	defer noteUpload(g, time.Now(), need)
	body := need &^ 3
	if body > 0 {
		g.Write(raw, 0, pix[:body])
	}
	if tail := need - body; tail > 0 {
		var t [4]byte
		copy(t[:], pix[body:need])
		g.Write(raw, body, t[:])
	}
}

// fillStaging maps staging (at least size bytes, MapWrite|CopySrc) for
// writing, copies pix[:need] into it and zeroes the rest up to size, unmaps
// it, and records on e the copy of size bytes into raw.
//
// The host side (map wait, fill, unmap) is booked in the device's
// UploadStats when it succeeds; the copy recorded on e is the score's.
func fillStaging(g *GPU, e *Encoder, staging, raw *Buffer, pix []byte, need, size int64) error {
	t0 := time.Now()
	dst, err := mapForWrite(g, staging, size)
	if err != nil {
		return err
	}
	parallelCopy(dst[:need], pix[:need])
	clear(dst[need:])
	staging.Handle().Unmap()
	noteUpload(g, t0, need)
	e.Copy(staging, 0, raw, 0, size)
	return nil
}

// parallelCopy copies src to dst (same length) in pieces of at least
// copyChunk bytes on up to GOMAXPROCS goroutines. The destination is
// usually mapped, write-combined staging memory, which one core fills far
// below the bus's speed: SSIMULACRA2's pipelined fill of a 48 MiB image
// took 1.55 ms on an H200 host in 512 KiB pieces on all cores
// (gpu/webgpu/ssim2/host.go), where this copy used 4 MiB pieces on at
// most 8 goroutines.
func parallelCopy(dst, src []byte) {
	const chunk = copyChunk
	n := len(src)
	if n <= chunk {
		copy(dst, src)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo := w * per
		hi := min(n, lo+per)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// copyChunk is the smallest piece parallelCopy hands one goroutine.
const copyChunk = 512 << 10
