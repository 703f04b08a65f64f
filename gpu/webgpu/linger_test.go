package webgpu

import (
	"context"
	"testing"
	"time"
)

// TestLinger checks that a call asking the device thread to linger gets
// the next call taken while it polls, that a call after the linger has
// run out is served as ever (the thread parked), and that the device
// closes while lingering.
func TestLinger(t *testing.T) {
	defer func(n int) { lingerMinProcs = n }(lingerMinProcs)
	lingerMinProcs = 1
	d, err := Open(context.Background(), nil)
	if err != nil {
		noRuntime(t, err)
	}
	ctx := context.Background()
	linger := func(g *GPU) error { g.Linger(200 * time.Millisecond); return nil }
	if err := d.Do(ctx, linger); err != nil {
		t.Fatal(err)
	}
	h0 := lingerHits.Load()
	ran := false
	if err := d.Do(ctx, func(*GPU) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("call after a linger: ran %v, %v", ran, err)
	}
	if lingerHits.Load() != h0+1 {
		t.Errorf("the call right after a linger was not taken while polling (%d hits)", lingerHits.Load()-h0)
	}
	// That call did not linger: the next one finds the thread parked.
	h1 := lingerHits.Load()
	if err := d.Do(ctx, func(*GPU) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if lingerHits.Load() != h1 {
		t.Errorf("a call without linger was followed by polling")
	}
	// Close while the device thread polls.
	if err := d.Do(ctx, linger); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Close while lingering took %v", el)
	}
}
