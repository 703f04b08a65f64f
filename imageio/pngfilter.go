package imageio

import "encoding/binary"

// PNG filter types (PNG spec section 9.2).
const (
	pngFilterNone = iota
	pngFilterSub
	pngFilterUp
	pngFilterAverage
	pngFilterPaeth
)

// unfilter reverses the filter ft on one row in place. prev is the
// previous row already unfiltered (zeros for the first row of an image or
// of an Adam7 pass) and has cur's length; bpp is the filter's byte
// distance, max(1, bits per pixel / 8). The loops are split by pixel size
// so that the compiler keeps the left pixel in registers and drops the
// bounds checks: image/png's single generic loop per filter is one of the
// reasons it is slow on photos, where almost every row is Paeth or Sub.
func unfilter(ft byte, cur, prev []byte, bpp int) error {
	switch ft {
	case pngFilterNone:
	case pngFilterSub:
		unfilterSub(cur, bpp)
	case pngFilterUp:
		unfilterUp(cur, prev)
	case pngFilterAverage:
		unfilterAverage(cur, prev, bpp)
	case pngFilterPaeth:
		unfilterPaeth(cur, prev, bpp)
	default:
		return pngBad("bad filter type %d", ft)
	}
	return nil
}

func unfilterSub(cur []byte, bpp int) {
	switch bpp {
	case 3:
		if len(cur) < 3 {
			return
		}
		a0, a1, a2 := cur[0], cur[1], cur[2]
		for i := 3; i+3 <= len(cur); i += 3 {
			p := cur[i : i+3 : i+3]
			a0 += p[0]
			a1 += p[1]
			a2 += p[2]
			p[0], p[1], p[2] = a0, a1, a2
		}
	case 4:
		if len(cur) < 4 {
			return
		}
		a0, a1, a2, a3 := cur[0], cur[1], cur[2], cur[3]
		for i := 4; i+4 <= len(cur); i += 4 {
			p := cur[i : i+4 : i+4]
			a0 += p[0]
			a1 += p[1]
			a2 += p[2]
			a3 += p[3]
			p[0], p[1], p[2], p[3] = a0, a1, a2, a3
		}
	default:
		for i := bpp; i < len(cur); i++ {
			cur[i] += cur[i-bpp]
		}
	}
}

// unfilterUp adds prev to cur byte by byte, eight bytes at a time: the sum
// of the low seven bits of each byte cannot carry into the next byte, and
// the top bit is the XOR of the two top bits and that sum's carry.
func unfilterUp(cur, prev []byte) {
	const low7 = 0x7f7f7f7f7f7f7f7f
	const high = 0x8080808080808080
	prev = prev[:len(cur)]
	i := 0
	for ; i+8 <= len(cur); i += 8 {
		a := binary.LittleEndian.Uint64(cur[i:])
		b := binary.LittleEndian.Uint64(prev[i:])
		binary.LittleEndian.PutUint64(cur[i:], ((a&low7)+(b&low7))^((a^b)&high))
	}
	for ; i < len(cur); i++ {
		cur[i] += prev[i]
	}
}

func unfilterAverage(cur, prev []byte, bpp int) {
	prev = prev[:len(cur)]
	n := min(bpp, len(cur))
	for i := 0; i < n; i++ {
		cur[i] += prev[i] / 2
	}
	switch bpp {
	case 3:
		if len(cur) < 3 {
			return
		}
		a0, a1, a2 := cur[0], cur[1], cur[2]
		for i := 3; i+3 <= len(cur); i += 3 {
			p := cur[i : i+3 : i+3]
			q := prev[i : i+3 : i+3]
			a0 = p[0] + byte((uint(a0)+uint(q[0]))>>1)
			a1 = p[1] + byte((uint(a1)+uint(q[1]))>>1)
			a2 = p[2] + byte((uint(a2)+uint(q[2]))>>1)
			p[0], p[1], p[2] = a0, a1, a2
		}
	case 4:
		if len(cur) < 4 {
			return
		}
		a0, a1, a2, a3 := cur[0], cur[1], cur[2], cur[3]
		for i := 4; i+4 <= len(cur); i += 4 {
			p := cur[i : i+4 : i+4]
			q := prev[i : i+4 : i+4]
			a0 = p[0] + byte((uint(a0)+uint(q[0]))>>1)
			a1 = p[1] + byte((uint(a1)+uint(q[1]))>>1)
			a2 = p[2] + byte((uint(a2)+uint(q[2]))>>1)
			a3 = p[3] + byte((uint(a3)+uint(q[3]))>>1)
			p[0], p[1], p[2], p[3] = a0, a1, a2, a3
		}
	default:
		for i := bpp; i < len(cur); i++ {
			cur[i] += byte((uint(cur[i-bpp]) + uint(prev[i])) >> 1)
		}
	}
}

// paeth returns the Paeth predictor of a (left), b (above) and c (above
// left) with the spec's tie order a, b, c, in a form with no branch and
// few operations. With lo = min(a, b), hi = max(a, b) and p = a + b - c,
// the spec's nearest-of-three rule works out to: hi when c <= lo, lo when
// c >= hi, and in between (writing k = 3c - lo - hi) lo when k >= hi, hi
// when k <= lo, c otherwise; the end cases fit the same two tests, the
// ties land where the spec's order puts them, and TestPaethExhaustive
// checks all 2^24 inputs. Only k depends on a through one subtraction, so
// the chain from one sample to the next stays short. image/png's if/else
// chain on the three distances mispredicts on photos, and a call per
// sample costs as much as the work, so this must stay inlinable.
func paeth(a, b, c int) int {
	lo, hi := min(a, b), max(a, b)
	k := 3*c - a - b
	pred := c
	if k >= hi {
		pred = lo
	}
	if k <= lo {
		pred = hi
	}
	return pred
}

func unfilterPaeth(cur, prev []byte, bpp int) {
	prev = prev[:len(cur)]
	n := min(bpp, len(cur))
	// First pixel: a and c are 0, so the predictor is b.
	for i := 0; i < n; i++ {
		cur[i] += prev[i]
	}
	switch bpp {
	case 3:
		unfilterPaeth3(cur, prev)
	case 4:
		unfilterPaeth4(cur, prev)
	default:
		for i := bpp; i < len(cur); i++ {
			cur[i] += byte(paeth(int(cur[i-bpp]), int(prev[i]), int(prev[i-bpp])))
		}
	}
}

// unfilterPaeth3 and unfilterPaeth4 run the three or four channels of a
// pixel side by side, so that their independent dependency chains (each
// sample needs the one to its left) overlap. Each is its own function so
// that the left pixel stays in registers; b and c are loaded again from
// prev, which costs less than keeping them live.
func unfilterPaeth3(cur, prev []byte) {
	if len(cur) < 6 || len(prev) < len(cur) {
		return
	}
	a0, a1, a2 := int(cur[0]), int(cur[1]), int(cur[2])
	// c and p start one pixel back: c[3:6] is the pixel being
	// reconstructed, p[0:3] the one above left and p[3:6] the one above.
	// Walking the slices lets the compiler prove every index in bounds
	// from the one length test.
	c, p := cur, prev
	for len(c) >= 6 && len(p) >= 6 {
		a0 = (int(c[3]) + paeth(a0, int(p[3]), int(p[0]))) & 0xff
		a1 = (int(c[4]) + paeth(a1, int(p[4]), int(p[1]))) & 0xff
		a2 = (int(c[5]) + paeth(a2, int(p[5]), int(p[2]))) & 0xff
		c[3], c[4], c[5] = byte(a0), byte(a1), byte(a2)
		c, p = c[3:], p[3:]
	}
}

func unfilterPaeth4(cur, prev []byte) {
	if len(cur) < 8 {
		return
	}
	a0, a1, a2, a3 := int(cur[0]), int(cur[1]), int(cur[2]), int(cur[3])
	for i := 4; i+4 <= len(cur); i += 4 {
		p := cur[i : i+4 : i+4]
		q := prev[i-4 : i+4 : i+4]
		a0 = (int(p[0]) + paeth(a0, int(q[4]), int(q[0]))) & 0xff
		a1 = (int(p[1]) + paeth(a1, int(q[5]), int(q[1]))) & 0xff
		a2 = (int(p[2]) + paeth(a2, int(q[6]), int(q[2]))) & 0xff
		a3 = (int(p[3]) + paeth(a3, int(q[7]), int(q[3]))) & 0xff
		p[0], p[1], p[2], p[3] = byte(a0), byte(a1), byte(a2), byte(a3)
	}
}
