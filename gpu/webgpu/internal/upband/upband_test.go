package upband

import (
	"bytes"
	"testing"
	"time"
)

// The band plan: counts by bytes and by the switch, capped by the rows
// that have room for a band each, and boundaries on multiples of Align.
func TestPlan(t *testing.T) {
	p := Plan{Bytes: 100, Max: 4, Align: 256}
	for _, tc := range []struct {
		h    int
		need int64
		env  string
		want int
	}{
		{4096, 199, "", 1}, {4096, 200, "", 2}, {4096, 1000, "", 4},
		{4096, 1000, "off", 1}, {4096, 1000, "0", 1}, {4096, 10, "on", 2},
		{4096, 10, "3", 3}, {4096, 10, "9", 4},
		{511, 1000, "", 1}, {512, 1000, "", 2}, {767, 1000, "on", 2}, {768, 10, "4", 3},
	} {
		if n := p.Count(tc.h, tc.need, tc.env); n != tc.want {
			t.Errorf("Count(%d, %d, %q) = %d, want %d", tc.h, tc.need, tc.env, n, tc.want)
		}
	}
	rows := p.Rows(1031, 4)
	if len(rows) != 5 || rows[0] != 0 || rows[4] != 1031 {
		t.Fatalf("Rows(1031, 4) = %v", rows)
	}
	for i := 1; i < 4; i++ {
		if rows[i]%256 != 0 || rows[i] <= rows[i-1] {
			t.Errorf("Rows(1031, 4) = %v: inner rows must rise on multiples of 256", rows)
		}
	}
	cuts := Cuts(rows, 10, 10307)
	if cuts[1] != int64(rows[1])*10 || cuts[4] != 10307 {
		t.Errorf("Cuts = %v", cuts)
	}
}

// Fill copies the bytes in pieces on several goroutines and zeroes the
// padding, whatever the piece size.
func TestFill(t *testing.T) {
	pix := make([]byte, 1<<20+13)
	for i := range pix {
		pix[i] = byte(i*7 + 1)
	}
	for _, chunk := range []int{0, 64 << 10, 1 << 30} {
		mem := bytes.Repeat([]byte{0xEE}, len(pix)+3)
		Fill(mem, pix, int64(len(pix)), int64(len(mem)), chunk)
		if !bytes.Equal(mem[:len(pix)], pix) || !bytes.Equal(mem[len(pix):], []byte{0, 0, 0}) {
			t.Errorf("chunk %d: wrong bytes", chunk)
		}
	}
}

// TestFirstSliceSpin: after the timed slice, a spin polls (with no
// timeout) until the GPU is done, then reads once; without a spin the
// slice's one wait is all; a spin that never sees the GPU done gives up
// after its time.
func TestFirstSliceSpin(t *testing.T) {
	slice := 50 * time.Microsecond
	for _, c := range []struct {
		name      string
		spin      time.Duration
		readyAt   int // the poll that first reports done (1 = the slice's); 0: never
		wantDone  bool
		wantPolls int // 0: at least 2, count not fixed (time-bounded)
	}{
		{"no spin, done in the slice", 0, 1, true, 1},
		{"no spin, not done", 0, 3, false, 1},
		{"spin, done on the third poll", time.Second, 3, true, 3},
		{"spin, never done", 2 * time.Millisecond, 0, false, 0},
	} {
		polls, reads := 0, 0
		var timeouts []time.Duration
		poll := func(d time.Duration) (bool, error) {
			polls++
			timeouts = append(timeouts, d)
			return c.readyAt > 0 && polls >= c.readyAt, nil
		}
		var p Phases
		start := time.Now()
		done, err := p.firstSlice(start, poll, slice, c.spin, func() error { reads++; return nil })
		took := time.Since(start)
		if err != nil || done != c.wantDone {
			t.Errorf("%s: done %v, err %v; want done %v", c.name, done, err, c.wantDone)
		}
		if want := 0; c.wantDone {
			want = 1
			if reads != want {
				t.Errorf("%s: %d reads, want %d", c.name, reads, want)
			}
		} else if reads != 0 {
			t.Errorf("%s: %d reads, want none", c.name, reads)
		}
		switch {
		case c.wantPolls > 0 && polls != c.wantPolls:
			t.Errorf("%s: %d polls, want %d", c.name, polls, c.wantPolls)
		case c.wantPolls == 0 && (polls < 2 || took < c.spin):
			t.Errorf("%s: %d polls in %v, want polling for the whole %v spin", c.name, polls, took, c.spin)
		}
		if timeouts[0] != slice {
			t.Errorf("%s: first poll waits %v, want the slice %v", c.name, timeouts[0], slice)
		}
		for i, d := range timeouts[1:] {
			if d != 0 {
				t.Errorf("%s: poll %d waits %v, want 0 (a spin does not block)", c.name, i+2, d)
			}
		}
	}
}
