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

// Workers are made in a few sizes so that metrics and image sizes share
// them: staging chunks of a power of two from 64 KiB to stageChunk, and a
// read-back area of a power of two of at least 64 KiB (every metric's
// read-back but a distortion map's is far smaller). Without this, zmwarm's
// cells (six metrics, four sizes, one after another) filled the idle list
// with workers no later cell could use, and every 2048² one-shot paid a
// cuMemHostAlloc and a cuMemFreeHost of its staging: 10 ms on the H200,
// 4× the score (BENCHMARKS.md, session 8).
func workerChunk(upBytes int64) int64 { return pow2(min(max(upBytes, 64<<10), stageChunk)) }
func workerOut(outBytes int64) int64  { return pow2(max(outBytes, 64<<10)) }

// pow2 is the least power of two ≥ n (n > 0).
func pow2(n int64) int64 {
	p := int64(1)
	for p < n {
		p <<= 1
	}
	return p
}

// idleList is the device's idle workers, least recently returned first.
// take is best fit (the smallest that will do, so small tasks leave the
// large workers to large ones); put keeps the returned worker and, past
// max, drops the least recently returned: the sizes in use now are kept,
// and those of an earlier workload age out.
type idleList[W any] struct {
	ws  []W
	fit func(w W) (ok bool, size int64)
	max int
}

// take removes and returns the best-fitting worker; ok false: none fits.
func (l *idleList[W]) take() (w W, ok bool) {
	best, bestSize := -1, int64(0)
	for i, x := range l.ws {
		if fits, size := l.fit(x); fits && (best < 0 || size < bestSize) {
			best, bestSize = i, size
		}
	}
	if best < 0 {
		return w, false
	}
	w = l.ws[best]
	l.ws = append(l.ws[:best], l.ws[best+1:]...)
	return w, true
}

// put appends w and returns the workers dropped to stay within max.
func (l *idleList[W]) put(w W) (dropped []W) {
	l.ws = append(l.ws, w)
	if n := len(l.ws) - l.max; n > 0 {
		dropped = append(dropped, l.ws[:n]...)
		l.ws = append(l.ws[:0], l.ws[n:]...)
	}
	return dropped
}

// TakeWorker returns an idle worker whose staging holds at least upBytes
// (or a full chunk) and whose read-back area holds outBytes, or a new one.
// Give it back with ReturnWorker.
func (d *Device) TakeWorker(upBytes, outBytes int64) (*Worker, error) {
	want, out := workerChunk(upBytes), workerOut(outBytes)
	d.wmu.Lock()
	l := d.idleList(func(w *Worker) (bool, int64) {
		return w.chunk >= want && int64(len(w.Out.Bytes)) >= out, w.chunk + int64(len(w.Out.Bytes))
	})
	w, ok := l.take()
	d.idle = l.ws
	d.wmu.Unlock()
	if ok {
		return w, nil
	}
	return NewWorker(d, want, out)
}

// idleList wraps d.idle (d.wmu held) with fit as take's test.
func (d *Device) idleList(fit func(*Worker) (bool, int64)) *idleList[*Worker] {
	return &idleList[*Worker]{ws: d.idle, fit: fit, max: maxIdleWorkers}
}

// ReturnWorker keeps w for a later TakeWorker (its stream idle), dropping
// the least recently returned idle worker when enough are kept.
func (d *Device) ReturnWorker(w *Worker) {
	if w == nil {
		return
	}
	if err := errors.Join(w.Stream.Sync(), w.Copy.Sync()); err != nil {
		w.Close()
		return
	}
	d.wmu.Lock()
	l := d.idleList(nil)
	dropped := l.put(w)
	d.idle = l.ws
	d.wmu.Unlock()
	for _, x := range dropped {
		x.Close()
	}
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
