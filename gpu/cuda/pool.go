package cuda

import (
	"errors"
	"sync"
)

// Device memory and staging are cached between references: cuMemAlloc and
// cuMemFree of the hundreds of MiB a 16 MP reference needs, and above all
// cuMemHostAlloc/cuMemFreeHost of page-locked staging (the driver pins
// every page), cost milliseconds each, which a one-shot score would pay
// every time. Freed buffers go to a size-bucketed cache (capped at an
// eighth of the device's memory, 8 GiB at most) and idle workers to a
// short list; an allocation that runs out of memory empties the cache and
// tries once more, so the cache never causes an out-of-memory error.

// bucket rounds a size up so that buffers of nearly equal sizes (the same
// image size with another stride) share entries: 64 KiB steps up to 2
// MiB, 2 MiB steps above.
func bucket(size int64) int64 {
	const small, large = 64 << 10, 2 << 20
	if size <= large {
		return (size + small - 1) / small * small
	}
	return (size + large - 1) / large * large
}

// AllocSize is the bytes Device.Alloc really takes for a request of size
// bytes: at least 4 (no zero-sized buffers), rounded up to its bucket.
// Device.Alloc calls it, so the metrics' memory estimates, which sum it
// over their buffers, follow any change to the bucket rule instead of
// copying it.
func AllocSize(size int64) int64 { return bucket(max(size, 4)) }

// AllocSizes is the sum of AllocSize over sizes: the device memory held by
// one Device.Alloc per entry.
func AllocSizes(sizes []int64) int64 {
	var b int64
	for _, n := range sizes {
		b += AllocSize(n)
	}
	return b
}

// memCache is the free-buffer cache. Its methods do no driver calls; the
// Device does them (drops are returned for it to free).
type memCache struct {
	mu    sync.Mutex
	free  map[int64][]DevPtr
	bytes int64
	cap   int64
}

// take returns a cached buffer of exactly size bytes (a bucket), or 0.
func (c *memCache) take(size int64) DevPtr {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.free[size]
	if len(l) == 0 {
		return 0
	}
	p := l[len(l)-1]
	c.free[size] = l[:len(l)-1]
	c.bytes -= size
	return p
}

// put caches p (size bytes) if there is room; false means the caller
// frees it.
func (c *memCache) put(p DevPtr, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > c.cap {
		return false
	}
	if c.free == nil {
		c.free = map[int64][]DevPtr{}
	}
	c.free[size] = append(c.free[size], p)
	c.bytes += size
	return true
}

// drain empties the cache and returns what was in it.
func (c *memCache) drain() []DevPtr {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []DevPtr
	for _, l := range c.free {
		out = append(out, l...)
	}
	c.free, c.bytes = nil, 0
	return out
}

// cached is the bytes in the cache.
func (c *memCache) cached() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// maxIdleWorkers is how many idle workers a device keeps.
const maxIdleWorkers = 8

// TakeWorker returns an idle worker whose staging holds at least upBytes
// (or a full chunk) and whose read-back area holds outBytes, or a new one.
// Give it back with ReturnWorker.
func (d *Device) TakeWorker(upBytes, outBytes int64) (*Worker, error) {
	want := min(max(upBytes, 64<<10), stageChunk)
	d.wmu.Lock()
	for i, w := range d.idle {
		if w.chunk >= want && int64(len(w.Out.Bytes)) >= outBytes {
			d.idle = append(d.idle[:i], d.idle[i+1:]...)
			d.wmu.Unlock()
			return w, nil
		}
	}
	d.wmu.Unlock()
	return NewWorker(d, upBytes, outBytes)
}

// ReturnWorker keeps w for a later TakeWorker (its stream idle), or closes
// it when enough are kept.
func (d *Device) ReturnWorker(w *Worker) {
	if w == nil {
		return
	}
	if err := errors.Join(w.Stream.Sync(), w.Copy.Sync()); err != nil {
		w.Close()
		return
	}
	d.wmu.Lock()
	if len(d.idle) < maxIdleWorkers {
		d.idle = append(d.idle, w)
		d.wmu.Unlock()
		return
	}
	d.wmu.Unlock()
	w.Close()
}

// Cached is the device memory held in the free-buffer cache (allocated
// from the driver, free for this process to reuse).
func (d *Device) Cached() int64 { return d.cache.cached() }

// Trim frees the cached buffers and idle workers.
func (d *Device) Trim() {
	d.wmu.Lock()
	idle := d.idle
	d.idle = nil
	d.wmu.Unlock()
	for _, w := range idle {
		w.Close()
	}
	ptrs := d.cache.drain()
	_ = d.call(func() error {
		for _, p := range ptrs {
			d.api.memFree(p)
		}
		return nil
	})
}
