// Package refcache keeps prepared references (GPU-resident state, or the
// CPU's precomputed planes) alive between tasks that share a reference
// image, so that scoring 100 distorted variants of one reference prepares
// it once. It decides whether a reference is reusable and when to let one
// go; it never computes anything itself.
//
// Entries are found by a content hash (xxh3-64 over the pixels plus size
// and format), so callers need not keep track of which reference is which;
// callers that do know can pin one with an explicit Handle. The cache holds
// at most Window unpinned entries (a sliding window of the most recently
// used keys) and at most a byte budget per backend, evicting the least
// recently used first. Entries are reference-counted: one evicted or
// dropped while a task uses it is released when that task finishes.
package refcache

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/zenmetrics-go/zenmetrics"
)

// DefaultWindow is how many recently used references are kept: enough for
// a batch that interleaves a few dozen sources, small enough that a batch of
// all-different references does not pin much memory.
const DefaultWindow = 32

// ErrDropped: a task named a Handle that was dropped (or never existed).
var ErrDropped = errors.New("refcache: reference handle dropped")

// ErrClosed: the cache was closed.
var ErrClosed = errors.New("refcache: closed")

// Key identifies a prepared reference: which backend holds it, for which
// metric and options, and which pixels it was prepared from.
type Key struct {
	Backend string
	Metric  zenmetrics.Metric
	Width   int
	Height  int
	Format  zenmetrics.PixelFormat
	Hash    uint64
	Options zenmetrics.Options
}

// HashImage is xxh3-64 over the image's visible bytes (row by row, so the
// stride padding does not matter) followed by its width, height and format,
// so that two images with the same bytes but other shapes never collide.
func HashImage(im *zenmetrics.Image) uint64 {
	h := xxh3.New()
	rowBytes := im.Width * im.Format.BytesPerPixel()
	if im.Stride == rowBytes {
		h.Write(im.Pix[:rowBytes*im.Height])
	} else {
		for y := range im.Height {
			h.Write(im.Row(y))
		}
	}
	var tail [17]byte
	binary.LittleEndian.PutUint64(tail[0:], uint64(im.Width))
	binary.LittleEndian.PutUint64(tail[8:], uint64(im.Height))
	tail[16] = byte(im.Format)
	h.Write(tail[:])
	return h.Sum64()
}

// Config bounds the cache.
type Config struct {
	// Window is the most unpinned entries kept (0: DefaultWindow).
	Window int
	// Budget returns the byte budget of a backend (0 or negative: no
	// entry of that backend is kept after its last use). Nil: no limit.
	Budget func(backend string) int64
}

// Stats counts what the cache did.
type Stats struct {
	Hits      int64 `json:"hits"`
	Misses    int64 `json:"misses"`
	Evictions int64 `json:"evictions"`
	Entries   int   `json:"entries"`
	Pinned    int   `json:"pinned"`
	Bytes     int64 `json:"bytes"`
}

// Handle names a pinned reference (see Cache.Pin).
type Handle uint64

// Entry is a prepared reference in the cache. Use Ref while holding it and
// call Done exactly once when finished.
type Entry struct {
	c     *Cache
	key   Key
	ref   zenmetrics.Reference
	bytes int64
	// Meta is what the caller attached at Pin (e.g. the source image, for
	// a fallback to another backend).
	Meta any

	users   int
	pins    int
	indexed bool // in c.entries (not evicted or dropped)
	elem    *list.Element
	ready   chan struct{}
	err     error
	done    bool // released
	doomed  bool // unindexed while in use: released at its last Done
}

// Ref is the prepared reference. Valid until Done.
func (e *Entry) Ref() zenmetrics.Reference { return e.ref }

// Key is the entry's key.
func (e *Entry) Key() Key { return e.key }

// Bytes is what the entry was charged.
func (e *Entry) Bytes() int64 { return e.bytes }

// Done ends one use. The last use of an entry that was evicted or dropped
// releases the prepared reference.
func (e *Entry) Done() { e.c.done(e) }

// Cache is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	cfg     Config
	entries map[Key]*Entry
	lru     *list.List // unpinned ready entries, front = most recent
	bytes   map[string]int64
	doomed  map[string]int64 // bytes of doomed entries per backend
	handles map[Handle]*Entry
	nextH   Handle
	stats   Stats
	closed  bool
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	return &Cache{cfg: cfg, entries: map[Key]*Entry{}, lru: list.New(), bytes: map[string]int64{}, doomed: map[string]int64{}, handles: map[Handle]*Entry{}}
}

// Acquire returns the entry for key, calling prepare on a miss. Concurrent
// Acquires of one key share a single prepare (the others wait, and count as
// hits). bytes is what the entry costs (the backend's Estimate). If prepare
// fails, every waiter gets its error, except that a waiter whose leader was
// cancelled prepares again itself. The caller must call Done on the entry.
func (c *Cache) Acquire(ctx context.Context, key Key, bytes int64, prepare func() (zenmetrics.Reference, error)) (e *Entry, hit bool, err error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false, ErrClosed
		}
		if e = c.entries[key]; e != nil {
			e.users++
			c.stats.Hits++
			if e.elem != nil {
				c.lru.MoveToFront(e.elem)
			}
			ready := e.ready
			c.mu.Unlock()
			select {
			case <-ready:
			case <-ctx.Done():
				c.done(e)
				return nil, false, ctx.Err()
			}
			if e.err != nil {
				lerr := e.err
				c.done(e)
				if errors.Is(lerr, context.Canceled) || errors.Is(lerr, context.DeadlineExceeded) {
					if ctx.Err() != nil {
						return nil, false, ctx.Err()
					}
					continue // the leader gave up; try to lead
				}
				return nil, false, lerr
			}
			return e, true, nil
		}
		e = &Entry{c: c, key: key, bytes: bytes, users: 1, indexed: true, ready: make(chan struct{})}
		c.entries[key] = e
		c.stats.Misses++
		c.mu.Unlock()
		return c.lead(e, prepare)
	}
}

// lead runs prepare for a new entry. A panic in prepare is turned into the
// entry's error (and re-raised as a *zenmetrics.PanicError via the return)
// so waiters are never left blocked.
func (c *Cache) lead(e *Entry, prepare func() (zenmetrics.Reference, error)) (_ *Entry, _ bool, err error) {
	var ref zenmetrics.Reference
	func() {
		defer zenmetrics.Recover(&err)
		ref, err = prepare()
	}()
	if err == nil && ref == nil {
		err = fmt.Errorf("refcache: prepare returned no reference")
	}
	c.mu.Lock()
	if err != nil {
		e.err = err
		c.unindex(e)
		close(e.ready)
		e.users--
		c.mu.Unlock()
		return nil, false, err
	}
	e.ref = ref
	c.bytes[e.key.Backend] += e.bytes
	close(e.ready)
	var rel []*Entry
	if c.closed {
		c.unindex(e)
	} else {
		e.elem = c.lru.PushFront(e)
		rel = c.evictLocked()
	}
	c.mu.Unlock()
	releaseAll(rel)
	return e, false, nil
}

// unindex removes e from lookup; it is released when its last user is done.
func (c *Cache) unindex(e *Entry) {
	if !e.indexed {
		return
	}
	e.indexed = false
	if e.ref != nil && e.users > 0 && !e.done {
		e.doomed = true
		c.doomed[e.key.Backend] += e.bytes
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
}

// evictLocked drops least-recently-used unpinned entries until the window
// and every backend's budget hold. Idle entries go first: evicting one in
// use frees nothing until its task ends, and it is the hottest one. Pinned
// entries count against the budget but are never evicted: the caller asked
// for them explicitly. Bytes of evicted entries still in use ("doomed") do
// not count, or one long task would flush the whole cache.
func (c *Cache) evictLocked() (release []*Entry) {
	for pass := range 2 {
		for el := c.lru.Back(); el != nil; {
			prev := el.Prev()
			e := el.Value.(*Entry)
			el = prev
			if (pass == 0 && e.users > 0) || !c.overLocked(e.key.Backend) {
				continue
			}
			c.unindex(e)
			c.stats.Evictions++
			if e.users == 0 {
				release = append(release, c.finishLocked(e))
			}
		}
	}
	return release
}

func (c *Cache) overLocked(backend string) bool {
	if c.lru.Len() > c.cfg.Window {
		return true
	}
	if c.cfg.Budget == nil {
		return false
	}
	return c.bytes[backend]-c.doomed[backend] > c.cfg.Budget(backend)
}

// releaseAll releases outside the cache lock: a GPU release may wait on
// the device.
func releaseAll(es []*Entry) {
	for _, e := range es {
		if e != nil {
			e.ref.Release()
		}
	}
}

// finishLocked accounts for a released entry; it returns e when the caller
// must call e.ref.Release (outside the lock), nil otherwise.
func (c *Cache) finishLocked(e *Entry) *Entry {
	if e.done || e.ref == nil {
		return nil
	}
	e.done = true
	c.bytes[e.key.Backend] -= e.bytes
	if e.doomed {
		e.doomed = false
		c.doomed[e.key.Backend] -= e.bytes
	}
	return e
}

func (c *Cache) done(e *Entry) {
	c.mu.Lock()
	if e.users <= 0 {
		// Done once too often: a bug in the caller, but never a reason
		// to release twice or to panic inside the library.
		c.mu.Unlock()
		return
	}
	e.users--
	var rel *Entry
	if e.users == 0 && !e.indexed {
		rel = c.finishLocked(e)
	}
	c.mu.Unlock()
	if rel != nil {
		rel.ref.Release()
	}
}

// Pin acquires (or prepares) the entry for key and keeps it until Drop,
// beyond the window and LRU. meta is stored on the entry for the caller.
func (c *Cache) Pin(ctx context.Context, key Key, bytes int64, meta any, prepare func() (zenmetrics.Reference, error)) (Handle, *Entry, error) {
	e, _, err := c.Acquire(ctx, key, bytes, prepare)
	if err != nil {
		return 0, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !e.indexed && c.entries[key] == nil && !c.closed {
		// Evicted by the budget between prepare and here (we hold a use,
		// so it is not released): index it again, pinned.
		e.indexed = true
		c.entries[key] = e
		if e.doomed {
			e.doomed = false
			c.doomed[key.Backend] -= e.bytes
		}
	}
	e.pins++
	if e.elem != nil {
		c.lru.Remove(e.elem)
		e.elem = nil
	}
	if e.Meta == nil {
		e.Meta = meta
	}
	c.nextH++
	h := c.nextH
	c.handles[h] = e
	// The Acquire's use stays with the handle until Drop, so an evicted
	// or dropped-elsewhere entry is never released under a pin.
	return h, e, nil
}

// Use starts a use of a pinned entry. It returns ErrDropped when the handle
// was dropped (or never existed): a task queued with a dropped handle fails
// with that error instead of touching a released reference.
func (c *Cache) Use(h Handle) (*Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.handles[h]
	if e == nil {
		return nil, fmt.Errorf("%w: handle %d", ErrDropped, h)
	}
	e.users++
	c.stats.Hits++
	return e, nil
}

// Drop ends a handle. The entry leaves the cache (the caller said it is
// done with the reference) and is released once no task uses it.
func (c *Cache) Drop(h Handle) error {
	c.mu.Lock()
	e := c.handles[h]
	if e == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: handle %d", ErrDropped, h)
	}
	delete(c.handles, h)
	e.pins--
	if e.pins == 0 {
		c.unindex(e)
	}
	c.mu.Unlock()
	e.Done() // the use Pin took
	return nil
}

// Stats returns the counters and current size.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries = len(c.entries)
	s.Pinned = len(c.handles)
	for _, b := range c.bytes {
		s.Bytes += b
	}
	return s
}

// BytesOf is what the cache currently holds on a backend (for the free
// memory estimate of a GPU without live counters).
func (c *Cache) BytesOf(backend string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes[backend]
}

// Purge drops every unpinned entry of a backend (after a device loss, or
// to make room); entries in use are released when their users finish.
func (c *Cache) Purge(backend string) {
	c.mu.Lock()
	var rel []*Entry
	for _, e := range c.entries {
		if e.key.Backend == backend && e.pins == 0 && e.ref != nil {
			c.unindex(e)
			if e.users == 0 {
				rel = append(rel, c.finishLocked(e))
			}
		}
	}
	c.mu.Unlock()
	releaseAll(rel)
}

// Close drops everything, handles included; entries in use are released
// when their users finish. Acquire after Close returns ErrClosed.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	hs := make([]Handle, 0, len(c.handles))
	for h := range c.handles {
		hs = append(hs, h)
	}
	c.mu.Unlock()
	for _, h := range hs {
		c.Drop(h)
	}
	c.mu.Lock()
	var rel []*Entry
	for _, e := range c.entries {
		if e.ref == nil {
			continue // still preparing; lead() unindexes it on return
		}
		c.unindex(e)
		if e.users == 0 {
			rel = append(rel, c.finishLocked(e))
		}
	}
	c.mu.Unlock()
	releaseAll(rel)
}
