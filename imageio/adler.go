package imageio

import "encoding/binary"

// adler32Sum is hash/adler32.Checksum eight bytes at a time. The standard
// library's loop adds byte by byte (about five instructions a byte, 4% of
// a whole SSIMULACRA2 run on two PNGs); here one 64-bit load gives the
// block's byte sum and its weighted sum (byte k counts 8−k times towards
// s2) through two multiplies each, with the bytes spread into 16-bit lanes
// so that no lane carries into the next. The sums are kept in 64 bits and
// reduced modulo 65521 once per 64 KiB.
func adler32Sum(p []byte) uint32 {
	const mod = 65521
	const lanes = 0x00ff00ff00ff00ff
	// Lane j of a multiplier meets lane 3−j of the bytes in the top lane
	// of the product: ones add the lanes up; the weights are 2,4,6,8 for
	// the even bytes (k = 6,4,2,0) and 1,3,5,7 for the odd ones.
	const ones = 0x0001000100010001
	const wEven = 2 | 4<<16 | 6<<32 | 8<<48
	const wOdd = 1 | 3<<16 | 5<<32 | 7<<48
	s1, s2 := uint64(1), uint64(0)
	for len(p) > 0 {
		chunk := p[:min(len(p), 1<<16)]
		p = p[len(chunk):]
		for len(chunk) >= 16 {
			// Two blocks per step: the first block's bytes count eight
			// more times towards s2 than the second's.
			v, u := binary.LittleEndian.Uint64(chunk), binary.LittleEndian.Uint64(chunk[8:])
			e, o := v&lanes, v>>8&lanes
			f, q := u&lanes, u>>8&lanes
			sv := ((e + o) * ones) >> 48
			su := ((f + q) * ones) >> 48
			s2 += 16*s1 + 8*sv + (e*wEven)>>48 + (o*wOdd)>>48 + (f*wEven)>>48 + (q*wOdd)>>48
			s1 += sv + su
			chunk = chunk[16:]
		}
		for len(chunk) >= 8 {
			v := binary.LittleEndian.Uint64(chunk)
			e, o := v&lanes, v>>8&lanes
			s2 += 8*s1 + (e*wEven)>>48 + (o*wOdd)>>48
			s1 += ((e + o) * ones) >> 48
			chunk = chunk[8:]
		}
		for _, b := range chunk {
			s1 += uint64(b)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return uint32(s2<<16 | s1)
}
