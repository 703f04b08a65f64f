package cuda

import (
	"slices"
	"testing"
)

// TestWorkerSizes: requests round up to a few shared sizes, so workers made
// for one metric and image size serve the next.
func TestWorkerSizes(t *testing.T) {
	for _, c := range []struct{ up, chunk int64 }{
		{0, 64 << 10}, {1, 64 << 10}, {64 << 10, 64 << 10}, {64<<10 + 1, 128 << 10},
		{3 << 20, 4 << 20}, {768 << 10, 1 << 20}, {12 << 20, stageChunk}, {1 << 40, stageChunk},
	} {
		if got := workerChunk(c.up); got != c.chunk {
			t.Errorf("workerChunk(%d) = %d, want %d", c.up, got, c.chunk)
		}
	}
	for _, c := range []struct{ out, want int64 }{{0, 64 << 10}, {1152, 64 << 10}, {5 << 20, 8 << 20}, {4 << 20, 4 << 20}} {
		if got := workerOut(c.out); got != c.want {
			t.Errorf("workerOut(%d) = %d, want %d", c.out, got, c.want)
		}
	}
}

// TestIdleList: take is best fit, put drops the least recently returned.
func TestIdleList(t *testing.T) {
	var want int
	l := &idleList[int]{max: 3, fit: func(w int) (bool, int64) { return w >= want, int64(w) }}
	for _, w := range []int{8, 2, 4} {
		if d := l.put(w); d != nil {
			t.Fatalf("put(%d) dropped %v below max", w, d)
		}
	}
	want = 3
	if w, ok := l.take(); !ok || w != 4 {
		t.Fatalf("take(≥3) = %d, %v; want the best fit 4", w, ok)
	}
	want = 9
	if w, ok := l.take(); ok {
		t.Fatalf("take(≥9) = %d; want none", w)
	}
	l.put(16)
	// Full (8, 2, 16): a fourth drops 8, the least recently returned,
	// although it is larger than the one kept.
	if d := l.put(1); !slices.Equal(d, []int{8}) || !slices.Equal(l.ws, []int{2, 16, 1}) {
		t.Fatalf("put(1) dropped %v, kept %v; want [8] dropped, [2 16 1] kept", d, l.ws)
	}
	// A run of large tasks after small ones keeps its own worker: the
	// small ones age out instead of the large one being freed each time.
	want = 16
	for range 5 {
		w, ok := l.take()
		if !ok || w != 16 {
			t.Fatalf("take(≥16) = %d, %v; want the kept 16", w, ok)
		}
		l.put(w)
	}
}
