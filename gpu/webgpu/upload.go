package webgpu

import (
	"fmt"
	"runtime"
	"sync"
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

// writeRaw uploads pix[:need] into raw with queue.writeBuffer; a tail that
// is not a multiple of 4 bytes (WebGPU's copy alignment) is padded.
func writeRaw(g *GPU, raw *Buffer, pix []byte, need int64) {
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
func fillStaging(g *GPU, e *Encoder, staging, raw *Buffer, pix []byte, need, size int64) error {
	var (
		status wgpu.MapAsyncStatus
		msg    string
	)
	h := staging.Handle()
	f := h.MapAsync(wgpu.MapModeWrite, 0, uintptr(size), wgpu.CallbackModeWaitAnyOnly, func(st wgpu.MapAsyncStatus, m string) {
		status, msg = st, m
	})
	if err := waitFuture(g.d.inst, f, "mapAsync"); err != nil {
		return err
	}
	if status != wgpu.MapAsyncStatusSuccess {
		if lost := g.d.lostErr(); lost != nil {
			return lost
		}
		return fmt.Errorf("webgpu: mapAsync (write): %s: %s", status, msg)
	}
	ptr := h.GetMappedRange(0, uintptr(size))
	if ptr == nil {
		h.Unmap()
		return fmt.Errorf("webgpu: GetMappedRange returned NULL")
	}
	dst := unsafe.Slice((*byte)(ptr), size)
	parallelCopy(dst[:need], pix[:need])
	clear(dst[need:])
	h.Unmap()
	e.Copy(staging, 0, raw, 0, size)
	return nil
}

// parallelCopy copies src to dst (same length) in chunks on several
// goroutines.
func parallelCopy(dst, src []byte) {
	const chunk = 4 << 20
	n := len(src)
	if n <= chunk {
		copy(dst, src)
		return
	}
	workers := min(runtime.GOMAXPROCS(0), 8, (n+chunk-1)/chunk)
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
