package jpegturbo

// naturalOrder maps zigzag positions to natural (row-major) positions.
// Like libjpeg's jpeg_natural_order it has 16 extra entries of 63, so a
// corrupt run length that carries the index past 63 writes position 63
// exactly as libjpeg does instead of failing.
var naturalOrder = [64 + 16]int{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
}

const lookBits = 9

// huffTable is one DHT table and its decoding tables.
type huffTable struct {
	counts  [17]int
	symbols []byte

	built   bool
	look    [1 << lookBits]uint16 // len<<8 | symbol; 0 when the code is longer
	maxcode [18]int32             // largest code of each length, -1 if none
	valoff  [18]int32
}

// build derives the decoding tables, with the checks of libjpeg's
// jpeg_make_d_derived_tbl (code space overflow; DC symbols above 15).
func (t *huffTable) build(dc bool) error {
	if t.built {
		return nil
	}
	var size [257]int
	var code [257]int32
	p := 0
	for l := 1; l <= 16; l++ {
		for i := 0; i < t.counts[l]; i++ {
			size[p] = l
			p++
		}
	}
	n := p
	c, si := int32(0), size[0]
	for p = 0; size[p] != 0; {
		for size[p] == si {
			code[p] = c
			p++
			c++
		}
		if c >= 1<<si {
			return errBad("bad Huffman table (code space overflow)")
		}
		c <<= 1
		si++
	}
	p = 0
	for l := 1; l <= 16; l++ {
		if t.counts[l] == 0 {
			t.maxcode[l] = -1
			continue
		}
		t.valoff[l] = int32(p) - code[p]
		p += t.counts[l]
		t.maxcode[l] = code[p-1]
	}
	t.maxcode[17] = 0x7fffffff
	for i := range t.look {
		t.look[i] = 0
	}
	for i := 0; i < n; i++ {
		l := size[i]
		if l > lookBits {
			break
		}
		base := int(code[i]) << (lookBits - l)
		for j := 0; j < 1<<(lookBits-l); j++ {
			t.look[base+j] = uint16(l)<<8 | uint16(t.symbols[i])
		}
	}
	if dc {
		for _, s := range t.symbols[:n] {
			if s > 15 {
				return errBad("bad Huffman table (DC symbol %d)", s)
			}
		}
	}
	t.built = true
	return nil
}

// bitReader reads entropy-coded bits. Past the end of the segment (a
// marker, or the end of the data) it supplies zero bits as libjpeg does,
// but counts them: consuming any of them sets overrun, which the scan
// decoder turns into an error ("premature end"/corrupt data).
type bitReader struct {
	data    []byte
	pos     int
	acc     uint64
	n       uint // valid bits in the low end of acc
	pad     uint // how many of the n bits are fake zeros
	marker  int  // marker code that ended the segment; -1 at end of data; 0 none yet
	overrun bool
}

func (b *bitReader) reset(data []byte, pos int) {
	*b = bitReader{data: data, pos: pos}
}

func (b *bitReader) fill() {
	for b.n <= 56 {
		if b.marker != 0 {
			b.acc <<= 8
			b.n += 8
			b.pad += 8
			continue
		}
		if b.pos >= len(b.data) {
			b.marker = -1
			continue
		}
		c := b.data[b.pos]
		if c == 0xff {
			j := b.pos + 1
			for j < len(b.data) && b.data[j] == 0xff {
				j++ // fill bytes
			}
			if j >= len(b.data) {
				b.marker = -1
				continue
			}
			if b.data[j] != 0 {
				b.marker = int(b.data[j]) // b.pos stays on the marker's 0xFF
				continue
			}
			b.pos = j + 1 // stuffed zero: a data byte 0xFF
		} else {
			b.pos++
		}
		b.acc = b.acc<<8 | uint64(c)
		b.n += 8
	}
}

func (b *bitReader) consume(k uint) {
	b.n -= k
	if b.n < b.pad {
		b.overrun = true
		b.pad = b.n
	}
}

// bits reads k (0..16) bits.
func (b *bitReader) bits(k uint) int32 {
	if k == 0 {
		return 0
	}
	if b.n < k {
		b.fill()
	}
	v := int32(b.acc>>(b.n-k)) & (1<<k - 1)
	b.consume(k)
	return v
}

func (b *bitReader) bit() bool { return b.bits(1) != 0 }

// decode reads one Huffman-coded symbol; ok is false for a code that is
// not in the table.
func (b *bitReader) decode(t *huffTable) (int, bool) {
	if b.n < 16 {
		b.fill()
	}
	v := b.acc >> (b.n - lookBits) & (1<<lookBits - 1)
	if e := t.look[v]; e != 0 {
		b.consume(uint(e >> 8))
		return int(e & 0xff), true
	}
	w := int32(b.acc>>(b.n-16)) & 0xffff
	for l := lookBits + 1; l <= 16; l++ {
		c := w >> (16 - l)
		if c <= t.maxcode[l] {
			b.consume(uint(l))
			i := c + t.valoff[l]
			if i < 0 || int(i) >= len(t.symbols) {
				return 0, false
			}
			return int(t.symbols[i]), true
		}
	}
	return 0, false
}

// extend is T.81's EXTEND (libjpeg's HUFF_EXTEND).
func extend(v int32, s int) int32 {
	if s == 0 {
		return 0
	}
	if v < 1<<(s-1) {
		return v + (-1 << s) + 1
	}
	return v
}

var errBadCode = errBad("corrupt data: bad Huffman code")

// addDC adds a DC difference to the predictor, refusing the overflow
// libjpeg-turbo refuses (JERR_BAD_DCT_COEF).
func addDC(pred *int32, diff int32) error {
	s := int64(*pred) + int64(diff)
	if s > 1<<31-1 || s < -1<<31 {
		return errBad("corrupt data: DC coefficient out of range")
	}
	*pred = int32(s)
	return nil
}

// huffSeq decodes one block of a sequential Huffman scan (jdhuff.c). The
// bit buffer is kept in locals; consumption past the real data is caught
// at the end of the block (fill only ever adds fake bits after it, so
// n < pad stays true once it happens).
func (b *bitReader) huffSeq(blk *[64]int16, c *component, dc, ac *huffTable) error {
	if b.n < 32 {
		b.fill()
	}
	s, ok := b.decode(dc)
	if !ok {
		return errBadCode
	}
	if err := addDC(&c.lastDC, extend(b.bits(uint(s)), s)); err != nil {
		return err
	}
	blk[0] = int16(c.lastDC)
	acc, n := b.acc, b.n
	for k := 1; k < 64; k++ {
		if n < 32 {
			b.acc, b.n = acc, n
			b.fill()
			acc, n = b.acc, b.n
		}
		var rs int
		if e := ac.look[acc>>(n-lookBits)&(1<<lookBits-1)]; e != 0 {
			n -= uint(e >> 8)
			rs = int(e & 0xff)
		} else {
			b.acc, b.n = acc, n
			rs, ok = b.decode(ac)
			if !ok {
				return errBadCode
			}
			acc, n = b.acc, b.n
		}
		r, s := rs>>4, uint(rs&15)
		if s != 0 {
			k += r
			v := int32(acc>>(n-s)) & (1<<s - 1)
			n -= s
			if v < 1<<(s-1) {
				v += -1<<s + 1
			}
			blk[naturalOrder[k]] = int16(v)
		} else {
			if r != 15 {
				break
			}
			k += 15
		}
	}
	b.acc, b.n = acc, n
	if n < b.pad {
		b.overrun = true
		b.pad = n
	}
	return nil
}

// Progressive Huffman (jdphuff.c).

func (b *bitReader) huffDCFirst(blk *[64]int16, c *component, dc *huffTable, al int) error {
	s, ok := b.decode(dc)
	if !ok {
		return errBadCode
	}
	if err := addDC(&c.lastDC, extend(b.bits(uint(s)), s)); err != nil {
		return err
	}
	blk[0] = int16(uint32(c.lastDC) << al)
	return nil
}

func (b *bitReader) huffDCRefine(blk *[64]int16, al int) {
	if b.bit() {
		blk[0] |= int16(1 << al)
	}
}

func (b *bitReader) huffACFirst(blk *[64]int16, ac *huffTable, ss, se, al int, eobrun *uint32) error {
	if *eobrun > 0 {
		*eobrun--
		return nil
	}
	for k := ss; k <= se; k++ {
		rs, ok := b.decode(ac)
		if !ok {
			return errBadCode
		}
		r, s := rs>>4, rs&15
		if s != 0 {
			k += r
			v := extend(b.bits(uint(s)), s)
			blk[naturalOrder[k]] = int16(uint32(v) << al)
		} else {
			if r != 15 {
				*eobrun = 1 << r
				if r != 0 {
					*eobrun += uint32(b.bits(uint(r)))
				}
				*eobrun--
				break
			}
			k += 15
		}
	}
	return nil
}

func (b *bitReader) huffACRefine(blk *[64]int16, ac *huffTable, ss, se, al int, eobrun *uint32) error {
	p1 := int16(1 << al)
	m1 := int16(-1 << al)
	k := ss
	if *eobrun == 0 {
		for ; k <= se; k++ {
			rs, ok := b.decode(ac)
			if !ok {
				return errBadCode
			}
			r, s := rs>>4, rs&15
			var nv int16
			if s != 0 {
				// A size other than 1 is a warning in libjpeg, which goes
				// on reading one sign bit; so do we.
				if b.bit() {
					nv = p1
				} else {
					nv = m1
				}
			} else if r != 15 {
				*eobrun = 1 << r
				if r != 0 {
					*eobrun += uint32(b.bits(uint(r)))
				}
				break
			}
			for k <= se {
				co := &blk[naturalOrder[k]]
				if *co != 0 {
					if b.bit() && *co&p1 == 0 {
						if *co >= 0 {
							*co += p1
						} else {
							*co += m1
						}
					}
				} else {
					r--
					if r < 0 {
						break
					}
				}
				k++
			}
			if nv != 0 {
				blk[naturalOrder[k]] = nv
			}
		}
	}
	if *eobrun > 0 {
		for ; k <= se; k++ {
			co := &blk[naturalOrder[k]]
			if *co != 0 {
				if b.bit() && *co&p1 == 0 {
					if *co >= 0 {
						*co += p1
					} else {
						*co += m1
					}
				}
			}
		}
		*eobrun--
	}
	return nil
}

// Standard Huffman tables of T.81 Annex K (K.3 to K.6), which libjpeg-turbo
// installs in slots 0 and 1 when a file defines none there (Motion-JPEG
// frames omit them). Numbers transcribed from T.81 / libjpeg-turbo 2.1.5.1
// jstdhuff.c (IJG licence).
var (
	stdDCLumCounts = [17]int{0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	stdDCChrCounts = [17]int{0, 0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}
	stdDCVals      = []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	stdACLumCounts = [17]int{0, 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d}
	stdACLumVals   = []byte{
		0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
		0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
		0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
		0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
		0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
		0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
		0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
		0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
		0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
		0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
		0xf9, 0xfa,
	}
	stdACChrCounts = [17]int{0, 0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77}
	stdACChrVals   = []byte{
		0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
		0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
		0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
		0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
		0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
		0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
		0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
		0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
		0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
		0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
		0xf9, 0xfa,
	}
)

// setStdHuffTables fills empty slots 0 and 1 as libjpeg-turbo's
// std_huff_tables does when the entropy decoder is created.
func (d *decoder) setStdHuffTables() {
	set := func(p **huffTable, counts [17]int, vals []byte) {
		if *p == nil {
			*p = &huffTable{counts: counts, symbols: vals}
		}
	}
	set(&d.dcHuff[0], stdDCLumCounts, stdDCVals)
	set(&d.acHuff[0], stdACLumCounts, stdACLumVals)
	set(&d.dcHuff[1], stdDCChrCounts, stdDCVals)
	set(&d.acHuff[1], stdACChrCounts, stdACChrVals)
}
