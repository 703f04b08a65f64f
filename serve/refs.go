package serve

import (
	"container/list"
	"os"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// refKey identifies a reference file's version without reading it: its
// absolute path, modification time and size. A file rewritten in place
// changes at least its mtime, so it is decoded again; the prepared
// reference is keyed by the pixels (the orchestrator's refcache), so a
// rewrite with the same pixels is still not prepared twice.
type refKey struct {
	path  string
	mtime time.Time
	size  int64
}

type refEntry struct {
	key   refKey
	img   *zenmetrics.Image
	err   error
	bytes int64
	ready chan struct{} // closed when img/err are set
	elem  *list.Element // in lru once ready and successful
}

// refCache keeps decoded references, the most recently used first, within
// an entry count and a byte budget. Concurrent requests for one reference
// wait for a single decode.
type refCache struct {
	maxEntries int
	maxBytes   int64
	decode     func(string) (*zenmetrics.Image, error)

	mu      sync.Mutex
	entries map[refKey]*refEntry
	lru     *list.List // of *refEntry, front = most recent
	bytes   int64
	hits    int64
	misses  int64
}

func newRefCache(maxEntries int, maxBytes int64, decode func(string) (*zenmetrics.Image, error)) *refCache {
	return &refCache{maxEntries: maxEntries, maxBytes: maxBytes, decode: decode,
		entries: map[refKey]*refEntry{}, lru: list.New()}
}

// get returns the decoded reference at path and whether it came from the
// cache. Errors are not cached: a missing file may appear later.
func (c *refCache) get(path string) (*zenmetrics.Image, bool, error) {
	abs := absPath(path)
	st, err := os.Stat(abs)
	if err != nil {
		// Let the decoder word the error (it names the path as given).
		_, derr := c.decode(path)
		if derr == nil {
			derr = err
		}
		return nil, false, derr
	}
	key := refKey{abs, st.ModTime(), st.Size()}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.mu.Unlock()
		<-e.ready
		if e.err != nil {
			return nil, false, e.err
		}
		c.mu.Lock()
		c.hits++
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		return e.img, true, nil
	}
	e := &refEntry{key: key, ready: make(chan struct{})}
	c.entries[key] = e
	c.misses++
	c.mu.Unlock()

	e.img, e.err = c.decode(path)
	c.mu.Lock()
	if e.err != nil {
		delete(c.entries, key)
	} else {
		e.bytes = int64(len(e.img.Pix))
		e.elem = c.lru.PushFront(e)
		c.bytes += e.bytes
		c.evictLocked(e)
	}
	c.mu.Unlock()
	close(e.ready)
	return e.img, false, e.err
}

// evictLocked drops the least recently used entries (never keep, the one
// just added, so an image larger than the budget is still usable once)
// until the cache is within its bounds. An evicted image stays alive for
// the requests already holding it.
func (c *refCache) evictLocked(keep *refEntry) {
	for c.lru.Len() > 1 && (c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes) {
		back := c.lru.Back()
		e := back.Value.(*refEntry)
		if e == keep {
			break
		}
		c.lru.Remove(back)
		e.elem = nil
		delete(c.entries, e.key)
		c.bytes -= e.bytes
	}
}

func (c *refCache) stats() (hits, misses, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.bytes
}
