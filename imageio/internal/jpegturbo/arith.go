package jpegturbo

// Arithmetic decoding (T.81 Annex D and F.2.4; libjpeg-turbo's jdarith.c
// keeps the same statistics-bin layout, which decides nothing about the
// output but is followed here for the contexts).

// qeTable is T.81 Table D.2: for each state, Qe, Next_Index_LPS,
// Next_Index_MPS and Switch_MPS, plus libjpeg's extra fixed-probability
// state 113 (Qe 0x5a1d, never leaving itself). Numbers transcribed from
// T.81 Table D.2 as libjpeg-turbo 2.1.5.1 jaricom.c lays them out (IJG
// licence).
var qeTable = [114][4]int32{
	{0x5a1d, 1, 1, 1}, {0x2586, 14, 2, 0}, {0x1114, 16, 3, 0}, {0x080b, 18, 4, 0},
	{0x03d8, 20, 5, 0}, {0x01da, 23, 6, 0}, {0x00e5, 25, 7, 0}, {0x006f, 28, 8, 0},
	{0x0036, 30, 9, 0}, {0x001a, 33, 10, 0}, {0x000d, 35, 11, 0}, {0x0006, 9, 12, 0},
	{0x0003, 10, 13, 0}, {0x0001, 12, 13, 0}, {0x5a7f, 15, 15, 1}, {0x3f25, 36, 16, 0},
	{0x2cf2, 38, 17, 0}, {0x207c, 39, 18, 0}, {0x17b9, 40, 19, 0}, {0x1182, 42, 20, 0},
	{0x0cef, 43, 21, 0}, {0x09a1, 45, 22, 0}, {0x072f, 46, 23, 0}, {0x055c, 48, 24, 0},
	{0x0406, 49, 25, 0}, {0x0303, 51, 26, 0}, {0x0240, 52, 27, 0}, {0x01b1, 54, 28, 0},
	{0x0144, 56, 29, 0}, {0x00f5, 57, 30, 0}, {0x00b7, 59, 31, 0}, {0x008a, 60, 32, 0},
	{0x0068, 62, 33, 0}, {0x004e, 63, 34, 0}, {0x003b, 32, 35, 0}, {0x002c, 33, 9, 0},
	{0x5ae1, 37, 37, 1}, {0x484c, 64, 38, 0}, {0x3a0d, 65, 39, 0}, {0x2ef1, 67, 40, 0},
	{0x261f, 68, 41, 0}, {0x1f33, 69, 42, 0}, {0x19a8, 70, 43, 0}, {0x1518, 72, 44, 0},
	{0x1177, 73, 45, 0}, {0x0e74, 74, 46, 0}, {0x0bfb, 75, 47, 0}, {0x09f8, 77, 48, 0},
	{0x0861, 78, 49, 0}, {0x0706, 79, 50, 0}, {0x05cd, 48, 51, 0}, {0x04de, 50, 52, 0},
	{0x040f, 50, 53, 0}, {0x0363, 51, 54, 0}, {0x02d4, 52, 55, 0}, {0x025c, 53, 56, 0},
	{0x01f8, 54, 57, 0}, {0x01a4, 55, 58, 0}, {0x0160, 56, 59, 0}, {0x0125, 57, 60, 0},
	{0x00f6, 58, 61, 0}, {0x00cb, 59, 62, 0}, {0x00ab, 61, 63, 0}, {0x008f, 61, 32, 0},
	{0x5b12, 65, 65, 1}, {0x4d04, 80, 66, 0}, {0x412c, 81, 67, 0}, {0x37d8, 82, 68, 0},
	{0x2fe8, 83, 69, 0}, {0x293c, 84, 70, 0}, {0x2379, 86, 71, 0}, {0x1edf, 87, 72, 0},
	{0x1aa9, 87, 73, 0}, {0x174e, 72, 74, 0}, {0x1424, 72, 75, 0}, {0x119c, 74, 76, 0},
	{0x0f6b, 74, 77, 0}, {0x0d51, 75, 78, 0}, {0x0bb6, 77, 79, 0}, {0x0a40, 77, 48, 0},
	{0x5832, 80, 81, 1}, {0x4d1c, 88, 82, 0}, {0x438e, 89, 83, 0}, {0x3bdd, 90, 84, 0},
	{0x34ee, 91, 85, 0}, {0x2eae, 92, 86, 0}, {0x299a, 93, 87, 0}, {0x2516, 86, 71, 0},
	{0x5570, 88, 89, 1}, {0x4ca9, 95, 90, 0}, {0x44d9, 96, 91, 0}, {0x3e22, 97, 92, 0},
	{0x3824, 99, 93, 0}, {0x32b4, 99, 94, 0}, {0x2e17, 93, 86, 0}, {0x56a8, 95, 96, 1},
	{0x4f46, 101, 97, 0}, {0x47e5, 102, 98, 0}, {0x41cf, 103, 99, 0}, {0x3c3d, 104, 100, 0},
	{0x375e, 99, 93, 0}, {0x5231, 105, 102, 0}, {0x4c0f, 106, 103, 0}, {0x4639, 107, 104, 0},
	{0x415e, 103, 99, 0}, {0x5627, 105, 106, 1}, {0x50e7, 108, 107, 0}, {0x4b85, 109, 103, 0},
	{0x5597, 110, 109, 0}, {0x504f, 111, 107, 0}, {0x5a10, 110, 111, 1}, {0x5522, 112, 109, 0},
	{0x59eb, 112, 111, 1}, {0x5a1d, 113, 113, 0},
}

// arithDecoder is the state of an arithmetic-coded scan. A statistics bin
// is one byte: the MPS in bit 7, the state index in the low 7 bits.
type arithDecoder struct {
	data    []byte
	pos     int
	marker  int // marker that ended the segment (0 none, -1 end of data)
	c, a    int64
	ct      int
	dcStats [16][64]byte
	acStats [16][256]byte
	fixed   byte
}

func (e *arithDecoder) reset(data []byte, pos int) {
	e.data, e.pos, e.marker = data, pos, 0
	e.c, e.a, e.ct = 0, 0, -16
	e.fixed = 113
}

// byteIn returns the next entropy-coded byte, or 0 after a marker
// (T.81 D.2.6: zero data are supplied once the segment ends). The end of
// the data is remembered as marker -1, which the scan decoder reports as
// truncation.
func (e *arithDecoder) byteIn() int64 {
	if e.marker != 0 {
		return 0
	}
	if e.pos >= len(e.data) {
		e.marker = -1
		return 0
	}
	c := e.data[e.pos]
	if c != 0xff {
		e.pos++
		return int64(c)
	}
	j := e.pos + 1
	for j < len(e.data) && e.data[j] == 0xff {
		j++
	}
	if j >= len(e.data) {
		e.marker = -1
		return 0
	}
	if e.data[j] == 0 {
		e.pos = j + 1
		return 0xff
	}
	e.marker = int(e.data[j])
	return 0
}

// decode is T.81 D.2 DECODE with libjpeg's floating code-register layout.
func (e *arithDecoder) decode(st *byte) int {
	for e.a < 0x8000 {
		e.ct--
		if e.ct < 0 {
			e.c = e.c<<8 | e.byteIn()
			e.ct += 8
			if e.ct < 0 {
				e.ct++
				if e.ct == 0 {
					e.a = 0x8000 // got the two initial bytes
				}
			}
		}
		e.a <<= 1
	}
	sv := int(*st)
	q := &qeTable[sv&0x7f]
	qe := int64(q[0])
	nl := byte(q[1]) | byte(q[3])<<7
	nm := byte(q[2])
	temp := e.a - qe
	e.a = temp
	temp <<= uint(e.ct)
	if e.c >= temp {
		e.c -= temp
		if e.a < qe {
			e.a = qe
			*st = byte(sv&0x80) ^ nm
		} else {
			e.a = qe
			*st = byte(sv&0x80) ^ nl
			sv ^= 0x80
		}
	} else if e.a < 0x8000 {
		if e.a < qe {
			*st = byte(sv&0x80) ^ nl
			sv ^= 0x80
		} else {
			*st = byte(sv&0x80) ^ nm
		}
	}
	return sv >> 7
}

// dcDiff decodes a DC difference (F.2.4.1) and updates the component's
// conditioning context. ok is false on a magnitude overflow.
func (e *arithDecoder) dcDiff(c *component, tbl int, L, U int) (int32, bool) {
	st := e.dcStats[tbl][c.dcContext:]
	if e.decode(&st[0]) == 0 {
		c.dcContext = 0
		return 0, true
	}
	sign := e.decode(&st[1])
	idx := c.dcContext + 2 + sign
	m := e.decode(&e.dcStats[tbl][idx])
	if m != 0 {
		idx = 20
		for e.decode(&e.dcStats[tbl][idx]) != 0 {
			m <<= 1
			if m == 0x8000 {
				return 0, false
			}
			idx++
		}
	}
	switch {
	case m < (1<<L)>>1:
		c.dcContext = 0
	case m > (1<<U)>>1:
		c.dcContext = 12 + sign*4
	default:
		c.dcContext = 4 + sign*4
	}
	v := m
	idx += 14
	for m >>= 1; m != 0; m >>= 1 {
		if e.decode(&e.dcStats[tbl][idx]) != 0 {
			v |= m
		}
	}
	v++
	if sign != 0 {
		v = -v
	}
	return int32(v), true
}

// acValue decodes the sign, magnitude category and bits of a nonzero AC
// coefficient at zigzag index k whose bins start at idx (F.2.4.2).
func (e *arithDecoder) acValue(tbl, idx, k, kx int) (int32, bool) {
	stats := &e.acStats[tbl]
	sign := e.decode(&e.fixed)
	idx += 2
	m := e.decode(&stats[idx])
	if m != 0 {
		if e.decode(&stats[idx]) != 0 {
			m <<= 1
			if k <= kx {
				idx = 189
			} else {
				idx = 217
			}
			for e.decode(&stats[idx]) != 0 {
				m <<= 1
				if m == 0x8000 {
					return 0, false
				}
				idx++
			}
		}
	}
	v := m
	idx += 14
	for m >>= 1; m != 0; m >>= 1 {
		if e.decode(&stats[idx]) != 0 {
			v |= m
		}
	}
	v++
	if sign != 0 {
		v = -v
	}
	return int32(v), true
}

var errArith = errBad("corrupt data: bad arithmetic code")

// arithSeq decodes one block of a sequential arithmetic scan.
func (e *arithDecoder) arithSeq(d *decoder, blk *[64]int16, c *component) error {
	diff, ok := e.dcDiff(c, c.dcTbl, d.arithL[c.dcTbl], d.arithU[c.dcTbl])
	if !ok {
		return errArith
	}
	c.lastDC = (c.lastDC + diff) & 0xffff
	blk[0] = int16(c.lastDC)
	return e.acBand(blk, c.acTbl, 1, 63, 0, d.arithK[c.acTbl])
}

func (e *arithDecoder) acBand(blk *[64]int16, tbl, ss, se, al, kx int) error {
	stats := &e.acStats[tbl]
	for k := ss; k <= se; k++ {
		idx := 3 * (k - 1)
		if e.decode(&stats[idx]) != 0 {
			break // EOB
		}
		for e.decode(&stats[idx+1]) == 0 {
			idx += 3
			k++
			if k > se {
				return errArith
			}
		}
		v, ok := e.acValue(tbl, idx, k, kx)
		if !ok {
			return errArith
		}
		blk[naturalOrder[k]] = int16(uint32(v) << al)
	}
	return nil
}

func (e *arithDecoder) arithDCFirst(d *decoder, blk *[64]int16, c *component, al int) error {
	diff, ok := e.dcDiff(c, c.dcTbl, d.arithL[c.dcTbl], d.arithU[c.dcTbl])
	if !ok {
		return errArith
	}
	c.lastDC = (c.lastDC + diff) & 0xffff
	blk[0] = int16(uint32(c.lastDC) << al)
	return nil
}

func (e *arithDecoder) arithDCRefine(blk *[64]int16, al int) {
	if e.decode(&e.fixed) != 0 {
		blk[0] |= int16(1 << al)
	}
}

func (e *arithDecoder) arithACRefine(blk *[64]int16, tbl, ss, se, al int) error {
	stats := &e.acStats[tbl]
	p1 := int16(1 << al)
	m1 := int16(-1 << al)
	kex := se
	for ; kex > 0; kex-- {
		if blk[naturalOrder[kex]] != 0 {
			break
		}
	}
	for k := ss; k <= se; k++ {
		idx := 3 * (k - 1)
		if k > kex && e.decode(&stats[idx]) != 0 {
			break
		}
		for {
			co := &blk[naturalOrder[k]]
			if *co != 0 {
				if e.decode(&stats[idx+2]) != 0 {
					if *co < 0 {
						*co += m1
					} else {
						*co += p1
					}
				}
				break
			}
			if e.decode(&stats[idx+1]) != 0 {
				if e.decode(&e.fixed) != 0 {
					*co = m1
				} else {
					*co = p1
				}
				break
			}
			idx += 3
			k++
			if k > se {
				return errArith
			}
		}
	}
	return nil
}
