package refcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

type fakeRef struct {
	released atomic.Int32
}

func (r *fakeRef) Score(context.Context, *zenmetrics.Image) (zenmetrics.Score, error) {
	if r.released.Load() > 0 {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	return zenmetrics.Score{Value: 1}, nil
}
func (r *fakeRef) Release() { r.released.Add(1) }

type preparer struct {
	calls atomic.Int32
	refs  []*fakeRef
	mu    sync.Mutex
	delay time.Duration
}

func (p *preparer) fn() func() (zenmetrics.Reference, error) {
	return func() (zenmetrics.Reference, error) {
		p.calls.Add(1)
		time.Sleep(p.delay)
		r := &fakeRef{}
		p.mu.Lock()
		p.refs = append(p.refs, r)
		p.mu.Unlock()
		return r, nil
	}
}

func key(i int) Key {
	return Key{Backend: "cpu", Metric: zenmetrics.SSIMULACRA2, Width: 8, Height: 8, Format: zenmetrics.RGB8, Hash: uint64(i)}
}

func TestHashImage(t *testing.T) {
	a := zenmetrics.NewImage(4, 3, zenmetrics.RGB8)
	for i := range a.Pix {
		a.Pix[i] = byte(i * 7)
	}
	// Same pixels with a padded stride.
	b := &zenmetrics.Image{Width: 4, Height: 3, Format: zenmetrics.RGB8, Stride: 16, Pix: make([]byte, 48)}
	for y := range 3 {
		copy(b.Pix[y*16:], a.Row(y))
		b.Pix[y*16+13] = 0xAA // padding must not count
	}
	if HashImage(a) != HashImage(b) {
		t.Fatal("stride padding changed the hash")
	}
	c := &zenmetrics.Image{Width: 6, Height: 2, Format: zenmetrics.RGB8, Stride: 18, Pix: a.Pix}
	if HashImage(a) == HashImage(c) {
		t.Fatal("same bytes, other shape: same hash")
	}
	d := &zenmetrics.Image{Width: 3, Height: 3, Format: zenmetrics.RGBA8, Stride: 12, Pix: a.Pix[:36]}
	e := &zenmetrics.Image{Width: 4, Height: 3, Format: zenmetrics.RGB8, Stride: 12, Pix: a.Pix[:36]}
	if HashImage(d) == HashImage(e) {
		t.Fatal("format ignored")
	}
	a2 := zenmetrics.NewImage(4, 3, zenmetrics.RGB8)
	copy(a2.Pix, a.Pix)
	a2.Pix[35] ^= 1
	if HashImage(a) == HashImage(a2) {
		t.Fatal("one changed byte, same hash")
	}
}

func TestHitMissAndSinglePrepare(t *testing.T) {
	c := New(Config{})
	p := &preparer{delay: 20 * time.Millisecond}
	ctx := context.Background()
	var wg sync.WaitGroup
	var hits atomic.Int32
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, hit, err := c.Acquire(ctx, key(1), 100, p.fn())
			if err != nil {
				t.Error(err)
				return
			}
			if hit {
				hits.Add(1)
			}
			if _, err := e.Ref().Score(ctx, nil); err != nil {
				t.Error(err)
			}
			e.Done()
		}()
	}
	wg.Wait()
	if p.calls.Load() != 1 {
		t.Fatalf("%d prepares for one key", p.calls.Load())
	}
	s := c.Stats()
	if s.Hits != 19 || s.Misses != 1 || hits.Load() != 19 || s.Entries != 1 || s.Bytes != 100 {
		t.Fatalf("stats %+v hits %d", s, hits.Load())
	}
	c.Close()
	if p.refs[0].released.Load() != 1 {
		t.Fatal("Close did not release")
	}
	if _, _, err := c.Acquire(ctx, key(2), 1, p.fn()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestWindowEvictsOldestAndReleases(t *testing.T) {
	c := New(Config{Window: 4})
	p := &preparer{}
	ctx := context.Background()
	for i := range 6 {
		e, _, err := c.Acquire(ctx, key(i), 1, p.fn())
		if err != nil {
			t.Fatal(err)
		}
		e.Done()
		if i == 3 {
			// Touch key 0 so key 1 becomes the oldest.
			e, hit, _ := c.Acquire(ctx, key(0), 1, p.fn())
			if !hit {
				t.Fatal("key 0 should hit")
			}
			e.Done()
		}
	}
	s := c.Stats()
	if s.Entries != 4 || s.Evictions != 2 {
		t.Fatalf("stats %+v", s)
	}
	// refs[i] is key i; keys 1 and 2 went.
	for i, r := range p.refs {
		want := int32(0)
		if i == 1 || i == 2 {
			want = 1
		}
		if r.released.Load() != want {
			t.Fatalf("key %d released %d times, want %d", i, r.released.Load(), want)
		}
	}
	if _, hit, _ := c.Acquire(ctx, key(0), 1, p.fn()); !hit {
		t.Fatal("recently used key 0 was evicted")
	}
}

func TestBudgetEvictsIdleFirst(t *testing.T) {
	c := New(Config{Budget: func(b string) int64 {
		if b == "gpu" {
			return 250
		}
		return 1 << 40
	}})
	p := &preparer{}
	ctx := context.Background()
	gk := func(i int) Key { k := key(i); k.Backend = "gpu"; return k }
	e0, _, _ := c.Acquire(ctx, gk(0), 100, p.fn()) // held: oldest but in use
	e1, _, _ := c.Acquire(ctx, gk(1), 100, p.fn())
	e1.Done()
	e2, _, _ := c.Acquire(ctx, gk(2), 100, p.fn()) // 300 > 250
	e2.Done()
	if p.refs[0].released.Load() != 0 || p.refs[1].released.Load() != 1 {
		t.Fatalf("wanted the idle key 1 evicted, not the busy key 0: %d %d",
			p.refs[0].released.Load(), p.refs[1].released.Load())
	}
	if got := c.BytesOf("gpu"); got != 200 {
		t.Fatalf("bytes %d, want 200", got)
	}
	e0.Done()
	// Another backend has its own budget.
	ec, _, _ := c.Acquire(ctx, key(9), 1000, p.fn())
	ec.Done()
	if c.BytesOf("cpu") != 1000 || c.Stats().Entries != 3 {
		t.Fatalf("cpu entry evicted by the gpu budget: %+v", c.Stats())
	}
}

// An entry evicted while a task uses it stays valid for that task and is
// released exactly once, when the task finishes.
func TestEvictedInUseReleasedAtLastUse(t *testing.T) {
	c := New(Config{Window: 1})
	p := &preparer{}
	ctx := context.Background()
	e0, _, _ := c.Acquire(ctx, key(0), 100, p.fn())
	e0b, hit, _ := c.Acquire(ctx, key(0), 100, p.fn()) // second user
	if !hit {
		t.Fatal("no hit")
	}
	e1, _, _ := c.Acquire(ctx, key(1), 100, p.fn()) // window 1: key 0 must go
	defer e1.Done()
	if c.Stats().Evictions != 1 || p.refs[0].released.Load() != 0 {
		t.Fatalf("evictions %d, released %d", c.Stats().Evictions, p.refs[0].released.Load())
	}
	e0.Done()
	if _, err := e0b.Ref().Score(ctx, nil); err != nil {
		t.Fatalf("evicted entry broken for its remaining user: %v", err)
	}
	if p.refs[0].released.Load() != 0 {
		t.Fatal("released before its last user finished")
	}
	e0b.Done()
	e0b.Done() // one too many: ignored, not a double release
	if p.refs[0].released.Load() != 1 || c.BytesOf("cpu") != 100 {
		t.Fatalf("released %d times, bytes %d", p.refs[0].released.Load(), c.BytesOf("cpu"))
	}
}

func TestPinUseDrop(t *testing.T) {
	c := New(Config{Window: 1})
	p := &preparer{}
	ctx := context.Background()
	h, e, err := c.Pin(ctx, key(1), 10, "meta", p.fn())
	if err != nil || e.Meta != "meta" {
		t.Fatal(err)
	}
	// Pinned entries survive the window.
	for i := 2; i < 5; i++ {
		x, _, _ := c.Acquire(ctx, key(i), 1, p.fn())
		x.Done()
	}
	u, err := c.Use(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(h); err != nil {
		t.Fatal(err)
	}
	if p.refs[0].released.Load() != 0 {
		t.Fatal("dropped while in use and released at once")
	}
	if _, err := u.Ref().Score(ctx, nil); err != nil {
		t.Fatalf("running task broken by Drop: %v", err)
	}
	u.Done()
	if p.refs[0].released.Load() != 1 {
		t.Fatal("not released after last user")
	}
	if _, err := c.Use(h); !errors.Is(err, ErrDropped) {
		t.Fatalf("Use after Drop: %v", err)
	}
	if err := c.Drop(h); !errors.Is(err, ErrDropped) {
		t.Fatalf("double Drop: %v", err)
	}
	if _, hit, _ := c.Acquire(ctx, key(1), 10, p.fn()); hit {
		t.Fatal("dropped reference still served by hash")
	}
}

func TestPrepareErrorsAndPanics(t *testing.T) {
	c := New(Config{})
	ctx := context.Background()
	boom := errors.New("boom")
	_, _, err := c.Acquire(ctx, key(1), 1, func() (zenmetrics.Reference, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	_, _, err = c.Acquire(ctx, key(1), 1, func() (zenmetrics.Reference, error) { panic("kaboom") })
	var pe *zenmetrics.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panic not converted: %v", err)
	}
	p := &preparer{}
	e, hit, err := c.Acquire(ctx, key(1), 1, p.fn())
	if err != nil || hit || p.calls.Load() != 1 {
		t.Fatalf("failed prepares were cached: %v hit=%v", err, hit)
	}
	e.Done()
	if c.Stats().Bytes != 1 {
		t.Fatalf("bytes %d", c.Stats().Bytes)
	}
}

func TestWaiterOfCancelledLeaderPreparesItself(t *testing.T) {
	c := New(Config{})
	started := make(chan struct{})
	lctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.Acquire(lctx, key(1), 1, func() (zenmetrics.Reference, error) {
			close(started)
			<-lctx.Done()
			return nil, lctx.Err()
		})
	}()
	<-started
	done := make(chan error, 1)
	p := &preparer{}
	go func() {
		e, _, err := c.Acquire(context.Background(), key(1), 1, p.fn())
		if err == nil {
			e.Done()
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("waiter inherited the leader's cancellation: %v", err)
	}
	if p.calls.Load() != 1 {
		t.Fatal("waiter did not prepare")
	}
}

func TestWaiterCancelled(t *testing.T) {
	c := New(Config{})
	release := make(chan struct{})
	go c.Acquire(context.Background(), key(1), 1, func() (zenmetrics.Reference, error) {
		<-release
		return &fakeRef{}, nil
	})
	for c.Stats().Misses == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, _, err := c.Acquire(ctx, key(1), 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v", err)
	}
	close(release)
}
