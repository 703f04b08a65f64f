package parallel

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// Every index is visited exactly once, chunks respect grain, worker ids
// stay below threads, and For's single-thread call is one whole range.
func TestCoverage(t *testing.T) {
	for _, threads := range []int{0, 1, 2, 3, 8} {
		for _, n := range []int{0, 1, 5, 64, 1000} {
			for _, grain := range []int{0, 1, 7, 64, 5000} {
				for name, f := range map[string]func(int, int, int, func(int, int, int)){"For": For, "Chunks": Chunks} {
					seen := make([]int32, n)
					var calls atomic.Int32
					f(threads, n, grain, func(worker, lo, hi int) {
						calls.Add(1)
						if worker < 0 || worker >= max(threads, 1) {
							t.Errorf("%s: worker %d with %d threads", name, worker, threads)
						}
						if name == "Chunks" && hi-lo > max(grain, 1) {
							t.Errorf("Chunks: chunk [%d,%d) over grain %d", lo, hi, grain)
						}
						for i := lo; i < hi; i++ {
							atomic.AddInt32(&seen[i], 1)
						}
					})
					for i, c := range seen {
						if c != 1 {
							t.Fatalf("%s threads=%d n=%d grain=%d: index %d visited %d times", name, threads, n, grain, i, c)
						}
					}
					if name == "For" && threads <= 1 && n > 0 && calls.Load() != 1 {
						t.Errorf("For on one thread made %d calls, want 1", calls.Load())
					}
				}
			}
		}
	}
}

func TestEachOrderOnOneThread(t *testing.T) {
	var got []int
	Each(1, 10, func(_, i int) { got = append(got, i) })
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("Each on one thread visited %v", got)
	}
}

// A panic in any worker comes back on the caller with its value.
func TestPanicReraised(t *testing.T) {
	defer func() {
		if v := recover(); v != "boom" {
			t.Fatalf("recovered %v, want boom", v)
		}
	}()
	For(4, 100, 1, func(_, lo, _ int) {
		if lo == 57 {
			panic("boom")
		}
	})
	t.Fatal("no panic")
}
