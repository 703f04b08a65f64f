package imageio

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// refUnfilter is the PNG spec's reconstruction (section 9.2), byte by byte
// with the predictor written as the spec writes it, to check the
// specialised loops against.
func refUnfilter(ft byte, cur, prev []byte, bpp int) {
	for i := range cur {
		var a, b, c int
		if i >= bpp {
			a, c = int(cur[i-bpp]), int(prev[i-bpp])
		}
		b = int(prev[i])
		var pred int
		switch ft {
		case pngFilterSub:
			pred = a
		case pngFilterUp:
			pred = b
		case pngFilterAverage:
			pred = (a + b) / 2
		case pngFilterPaeth:
			p := a + b - c
			pa, pb, pc := p-a, p-b, p-c
			if pa < 0 {
				pa = -pa
			}
			if pb < 0 {
				pb = -pb
			}
			if pc < 0 {
				pc = -pc
			}
			switch {
			case pa <= pb && pa <= pc:
				pred = a
			case pb <= pc:
				pred = b
			default:
				pred = c
			}
		}
		cur[i] = byte(int(cur[i]) + pred)
	}
}

// TestUnfilterMatchesSpec: every filter type × filter distance 1-8 × row
// lengths around the 8-byte blocks of unfilterUp, on random rows and on
// rows of extremes (0x00/0xff) that exercise every Paeth tie; tolerance 0
// (bytes identical).
func TestUnfilterMatchesSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for ft := byte(0); ft <= pngFilterPaeth; ft++ {
		for bpp := 1; bpp <= 8; bpp++ {
			for _, n := range []int{0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 24, 33, 96, 301} {
				if bpp > 1 && n%bpp != 0 {
					continue // rows of multi-byte pixels hold whole pixels
				}
				for trial := 0; trial < 4; trial++ {
					cur := make([]byte, n)
					prev := make([]byte, n)
					for i := range cur {
						if trial&1 == 0 {
							cur[i], prev[i] = byte(r.IntN(256)), byte(r.IntN(256))
						} else {
							cur[i], prev[i] = byte(r.IntN(2)*255), byte(r.IntN(3)*127)
						}
					}
					want := bytes.Clone(cur)
					refUnfilter(ft, want, prev, bpp)
					got := bytes.Clone(cur)
					if err := unfilter(ft, got, prev, bpp); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("filter %d bpp %d len %d: got %v, want %v", ft, bpp, n, got, want)
					}
				}
			}
		}
	}
	if err := unfilter(5, make([]byte, 3), make([]byte, 3), 3); err == nil {
		t.Fatal("filter type 5 accepted")
	}
}

// TestPaethExhaustive compares paeth with the spec's predictor for every
// (a, b, c): 16.7 M cases, tolerance 0.
func TestPaethExhaustive(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive Paeth check skipped in -short")
	}
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			for c := 0; c < 256; c++ {
				p := a + b - c
				pa, pb, pc := abs(p-a), abs(p-b), abs(p-c)
				want := c
				if pa <= pb && pa <= pc {
					want = a
				} else if pb <= pc {
					want = b
				}
				if got := paeth(a, b, c); got != want {
					t.Fatalf("paeth(%d, %d, %d) = %d, want %d", a, b, c, got, want)
				}
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BenchmarkUnfilter times each filter on one 3000-pixel RGB row (a row of
// the corpus's 5 MP photos).
func BenchmarkUnfilter(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	cur := make([]byte, 9000)
	prev := make([]byte, 9000)
	for i := range cur {
		cur[i], prev[i] = byte(r.IntN(256)), byte(r.IntN(256))
	}
	for ft, name := range []string{"none", "sub", "up", "average", "paeth"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(cur)))
			defer reportCPU(b)()
			for b.Loop() {
				_ = unfilter(byte(ft), cur, prev, 3)
			}
		})
	}
}
