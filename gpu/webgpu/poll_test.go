package webgpu

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollWindowFor(t *testing.T) {
	const w = 300 * time.Microsecond
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", w},
		{"0", 0},
		{"150", 150 * time.Microsecond},
		{"-5", w},
		{"x", w},
	} {
		if got := pollWindowFor(w, c.env); got != c.want {
			t.Errorf("pollWindowFor(%v, %q) = %v, want %v", w, c.env, got, c.want)
		}
	}
}

// TestWithPoll checks when a context gets a window: not with too few Ps,
// not for a window of 0, and not when the environment turns it off.
func TestWithPoll(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(e string) { pollEnv = e }(pollEnv)
	pollEnv = ""
	ctx := context.Background()
	const w = 300 * time.Microsecond
	runtime.GOMAXPROCS(pollMinProcs)
	if got := pollWindow(WithPoll(ctx, w)); got != w {
		t.Errorf("%d Ps: window %v, want %v", pollMinProcs, got, w)
	}
	if got := pollWindow(WithPoll(ctx, 0)); got != 0 {
		t.Errorf("window 0 set %v", got)
	}
	pollEnv = "0"
	if got := pollWindow(WithPoll(ctx, w)); got != 0 {
		t.Errorf("ZENMETRICS_WEBGPU_POLL=0: window %v", got)
	}
	pollEnv = ""
	runtime.GOMAXPROCS(pollMinProcs - 1)
	if got := pollWindow(WithPoll(ctx, w)); got != 0 {
		t.Errorf("%d Ps: window %v, want none", pollMinProcs-1, got)
	}
}

// TestPollRecv checks both ends of the poll: a value already sent, one
// sent during the window, and none (the window runs out).
func TestPollRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, ok := pollRecv(ch, time.Millisecond); !ok || v != 7 {
		t.Fatalf("ready value: %d %v", v, ok)
	}
	go func() { time.Sleep(2 * time.Millisecond); ch <- 8 }()
	if v, ok := pollRecv(ch, 2*time.Second); !ok || v != 8 {
		t.Fatalf("value sent during the window: %d %v", v, ok)
	}
	t0 := time.Now()
	if _, ok := pollRecv(ch, 3*time.Millisecond); ok {
		t.Fatal("received from an empty channel")
	}
	if d := time.Since(t0); d < 3*time.Millisecond {
		t.Fatalf("gave up after %v, before its window", d)
	}
}

// TestDoPolled runs polled and plain calls side by side on the shared
// device, and then closes a device of its own under polled callers: every
// call must run once or return ErrClosed, and none may hang (a request
// left in the request slot at Close never runs).
func TestDoPolled(t *testing.T) {
	d := device(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(pollMinProcs, runtime.GOMAXPROCS(0))))
	pctx := WithPoll(context.Background(), 200*time.Microsecond)
	if pollWindow(pctx) == 0 && pollEnv == "" {
		t.Fatal("no poll window")
	}
	var wg sync.WaitGroup
	var ran atomic.Int64
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			if w%2 == 0 {
				ctx = pctx
			}
			for i := 0; i < 200; i++ {
				if err := d.Do(ctx, func(g *GPU) error { ran.Add(1); return nil }); err != nil {
					t.Errorf("Do: %v", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if n := ran.Load(); n != 6*200 {
		t.Fatalf("%d calls ran, want %d", n, 6*200)
	}

	// A request waiting in the slot while the device thread runs another
	// is left there by Close half of the time (the loop's select picks
	// quit or the request at random; a polling loop would take it first,
	// so these calls do not poll): its caller must get ErrClosed.
	for k := 0; k < 12; k++ {
		own, err := Open(context.Background(), nil)
		if err != nil {
			noRuntime(t, err)
		}
		started := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- own.Do(context.Background(), func(g *GPU) error { close(started); time.Sleep(20 * time.Millisecond); return nil })
		}()
		<-started
		second := make(chan error, 1)
		go func() { second <- own.Do(context.Background(), func(g *GPU) error { return nil }) }()
		time.Sleep(2 * time.Millisecond) // the second request is in the slot
		go own.Close()
		for i, ch := range []chan error{first, second} {
			select {
			case err := <-ch:
				if err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("round %d, call %d: %v", k, i, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: call %d hung across Close", k, i)
			}
		}
	}
}
