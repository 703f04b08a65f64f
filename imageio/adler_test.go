package imageio

import (
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

// TestAdler32Sum: adler32Sum equals hash/adler32 for every length up to a
// few blocks, across the 64 KiB reduction boundary, and for all-0xff data
// (the largest sums, where a lane carry or an overflow would show).
func TestAdler32Sum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 3<<16+77)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	check := func(p []byte) {
		t.Helper()
		if got, want := adler32Sum(p), adler32.Checksum(p); got != want {
			t.Fatalf("len %d: %08x, hash/adler32 %08x", len(p), got, want)
		}
	}
	for n := 0; n <= 100; n++ {
		check(buf[:n])
		check(buf[3 : 3+n])
	}
	for _, n := range []int{1<<16 - 1, 1 << 16, 1<<16 + 1, 2<<16 + 9, len(buf)} {
		check(buf[:n])
	}
	for i := range buf {
		buf[i] = 0xff
	}
	for _, n := range []int{8, 5552, 5553, 1 << 16, len(buf)} {
		check(buf[:n])
	}
	ones := make([]byte, 1<<22)
	for i := range ones {
		ones[i] = 0xff
	}
	check(ones)
}
