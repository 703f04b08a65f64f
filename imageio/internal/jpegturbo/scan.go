package jpegturbo

// scan is the header of one SOS segment.
type scan struct {
	comps          []*component
	ss, se, ah, al int
}

// decodeScans decodes every scan from the first SOS (d.pos at its length
// field) to EOI.
func (d *decoder) decodeScans() error {
	if !d.cfg.Arithmetic {
		d.setStdHuffTables()
	}
	for {
		p, err := d.segment(mSOS)
		if err != nil {
			return err
		}
		sc, err := d.parseSOS(p)
		if err != nil {
			return err
		}
		if d.scans == 0 {
			if err := d.allocate(sc); err != nil {
				return err
			}
		} else if !d.multiScan {
			return errBad("more than one scan in a single-scan sequential file (libjpeg: EOI expected)")
		}
		d.scans++
		if err := d.decodeScan(sc); err != nil {
			return err
		}
		// Markers up to the next SOS or EOI.
		for {
			m, err := d.nextMarker()
			if err != nil {
				return err
			}
			if m == mEOI {
				d.eoi = true
				return nil
			}
			if m == mSOS {
				break
			}
			if m >= 0xc0 && m <= 0xcf && m != mDHT && m != mDAC {
				return errBad("SOF marker 0x%02x after the first scan", m)
			}
			if err := d.tableMarker(m); err != nil {
				return err
			}
		}
	}
}

// parseSOS reads a scan header with libjpeg's checks (get_sos and the
// entropy decoders' start_pass).
func (d *decoder) parseSOS(p []byte) (*scan, error) {
	if len(p) < 1 {
		return nil, errBad("SOS marker too short")
	}
	n := int(p[0])
	if len(p) != 4+2*n || n < 1 || n > 4 {
		return nil, errBad("bad SOS marker length for %d components", n)
	}
	sc := &scan{}
	used := make([]bool, len(d.comps))
	for i := 0; i < n; i++ {
		cid, tbl := int(p[1+2*i]), int(p[2+2*i])
		// libjpeg-turbo 2.1 looks for the i-th scan component among frame
		// components i.. (only the first four), so a scan that lists its
		// components out of frame order is refused there; likewise here.
		found := -1
		for ci := i; ci < len(d.comps) && ci < 4; ci++ {
			if d.comps[ci].id == cid && !used[ci] {
				found = ci
				break
			}
		}
		if found < 0 {
			return nil, errBad("invalid component ID %d in SOS", cid)
		}
		used[found] = true
		c := &d.comps[found]
		c.dcTbl, c.acTbl = tbl>>4, tbl&15
		sc.comps = append(sc.comps, c)
	}
	q := p[1+2*n:]
	sc.ss, sc.se, sc.ah, sc.al = int(q[0]), int(q[1]), int(q[2]>>4), int(q[2]&15)

	if d.cfg.Progressive {
		bad := false
		if sc.ss == 0 {
			bad = sc.se != 0
		} else {
			bad = sc.se < sc.ss || sc.se > 63 || n != 1
		}
		if sc.ah != 0 && sc.al != sc.ah-1 {
			bad = true
		}
		if sc.al > 13 {
			bad = true
		}
		if bad {
			return nil, errBad("invalid progressive parameters Ss=%d Se=%d Ah=%d Al=%d", sc.ss, sc.se, sc.ah, sc.al)
		}
		for _, c := range sc.comps {
			for k := sc.ss; k <= sc.se; k++ {
				c.coefBits[k] = sc.al
			}
		}
	} else {
		// Sequential files: libjpeg only warns about other Ss/Se/Ah/Al
		// values and decodes the scan as a full sequential one.
		sc.ss, sc.se, sc.ah, sc.al = 0, 63, 0, 0
	}
	// Interleaved scans: at most 10 blocks in an MCU (libjpeg's
	// JERR_BAD_MCU_SIZE).
	if n > 1 {
		blocks := 0
		for _, c := range sc.comps {
			blocks += c.h * c.v
		}
		if blocks > 10 {
			return nil, errBad("MCU of %d blocks (at most 10)", blocks)
		}
	}
	// Latch quantisation tables (jdinput.c latch_quant_tables).
	for _, c := range sc.comps {
		if c.qLatched {
			continue
		}
		if c.tq >= 4 || d.qt[c.tq] == nil {
			return nil, errBad("quantization table %d is not defined", c.tq)
		}
		for k, v := range d.qt[c.tq] {
			c.qt[k] = int32(v)
		}
		c.qLatched = true
	}
	// Entropy tables.
	for _, c := range sc.comps {
		if d.cfg.Arithmetic {
			if c.dcTbl >= 16 || c.acTbl >= 16 {
				return nil, errBad("arithmetic table index out of range")
			}
			continue
		}
		needDC := !d.cfg.Progressive || (sc.ss == 0 && sc.ah == 0)
		needAC := !d.cfg.Progressive || sc.ss != 0
		if needDC {
			if c.dcTbl >= 4 || d.dcHuff[c.dcTbl] == nil {
				return nil, errBad("Huffman table %d is not defined", c.dcTbl)
			}
			if err := d.dcHuff[c.dcTbl].build(true); err != nil {
				return nil, err
			}
		}
		if needAC {
			if c.acTbl >= 4 || d.acHuff[c.acTbl] == nil {
				return nil, errBad("Huffman table %d is not defined", c.acTbl)
			}
			if err := d.acHuff[c.acTbl].build(false); err != nil {
				return nil, err
			}
		}
	}
	return sc, nil
}

// allocate sets up the buffers once the first scan tells whether the file
// needs whole-image coefficient buffers (libjpeg's has_multiple_scans).
func (d *decoder) allocate(sc *scan) error {
	d.multiScan = d.cfg.Progressive || len(sc.comps) < len(d.comps)
	// A Huffman-coded first scan spends at least one bit per block (a DC
	// code; sequential scans also an AC code), so a file too short for
	// that is truncated: refuse it before allocating buffers for the
	// size its header claims. (Arithmetic coding has no such floor.)
	if !d.cfg.Arithmetic && sc.ss == 0 && sc.ah == 0 {
		var blocks int64
		for _, c := range sc.comps {
			if len(sc.comps) == 1 {
				blocks += int64(c.bw) * int64(c.bh)
			} else {
				blocks += int64(c.bwPad) * int64(c.bhPad)
			}
		}
		bits := blocks
		if !d.cfg.Progressive {
			bits *= 2
		}
		if int64(len(d.data)-d.pos)*8 < bits {
			return errBad("%v: %d bytes cannot hold the first scan of a %dx%d image", errTruncated,
				len(d.data)-d.pos, d.cfg.Width, d.cfg.Height)
		}
	}
	for i := range d.comps {
		c := &d.comps[i]
		nb := c.bwPad * c.bhPad
		if d.multiScan {
			c.coefs = make([]int16, nb*64)
		}
		c.plane = make([]byte, nb*64)
	}
	return nil
}

// decodeScan decodes the entropy-coded data of one scan.
func (d *decoder) decodeScan(sc *scan) error {
	single := len(sc.comps) == 1
	mcusX, mcusY := d.mcusX, d.mcusY
	if single {
		c := sc.comps[0]
		mcusX, mcusY = c.bw, c.bh
	}
	for _, c := range sc.comps {
		c.lastDC, c.dcContext = 0, 0
	}
	var br bitReader
	var ar arithDecoder
	if d.cfg.Arithmetic {
		ar.reset(d.data, d.pos)
	} else {
		br.reset(d.data, d.pos)
	}
	var eobrun uint32
	// Single-scan files: each MCU row's coefficients go to one of two
	// row buffers, and a second goroutine runs the IDCT of one row while
	// this one decodes the next (same arithmetic, so the same samples).
	var pipe *idctPipe
	if !d.multiScan {
		pipe = newIDCTPipe(sc.comps, single, mcusX)
		defer pipe.stop()
	}
	restartNum := 0
	mcu := 0
	for my := 0; my < mcusY; my++ {
		if pipe != nil {
			pipe.begin(my)
		}
		for mx := 0; mx < mcusX; mx++ {
			if d.restartInterval > 0 && mcu > 0 && mcu%d.restartInterval == 0 {
				var pos, marker int
				if d.cfg.Arithmetic {
					pos, marker = ar.pos, ar.marker
				} else {
					pos, marker = br.pos, br.marker
				}
				next, err := d.restart(pos, marker, restartNum)
				if err != nil {
					return err
				}
				restartNum = (restartNum + 1) & 7
				for _, c := range sc.comps {
					c.lastDC, c.dcContext = 0, 0
				}
				eobrun = 0
				if d.cfg.Arithmetic {
					dcS, acS := ar.dcStats, ar.acStats
					ar.reset(d.data, next)
					ar.dcStats, ar.acStats = dcS, acS
					d.resetArithStats(&ar, sc)
				} else {
					br.reset(d.data, next)
				}
			} else if mcu == 0 && d.cfg.Arithmetic {
				d.resetArithStats(&ar, sc)
			}
			mcu++
			for _, c := range sc.comps {
				bh, bv := c.h, c.v
				if single {
					bh, bv = 1, 1
				}
				for y := 0; y < bv; y++ {
					for x := 0; x < bh; x++ {
						bx, by := mx*bh+x, my*bv+y
						var blk *[64]int16
						if d.multiScan {
							blk = (*[64]int16)(c.coefs[(by*c.bwPad+bx)*64:])
						} else {
							blk = pipe.block(c, bx, y)
						}
						var err error
						if d.cfg.Arithmetic {
							err = d.arithBlock(&ar, sc, c, blk)
						} else {
							err = d.huffBlock(&br, sc, c, blk, &eobrun)
						}
						if err != nil {
							return err
						}
					}
				}
			}
			if br.overrun {
				return errBad("%v (entropy-coded data end inside a scan)", errTruncated)
			}
		}
		if pipe != nil {
			pipe.end(my)
		}
	}
	if pipe != nil {
		pipe.stop()
	}
	// Leave d.pos where the entropy-coded segment ended.
	if d.cfg.Arithmetic {
		if ar.marker == -1 {
			return errBad("%v", errTruncated)
		}
		d.pos = ar.pos
	} else {
		d.pos = br.pos
	}
	return nil
}

func (d *decoder) resetArithStats(ar *arithDecoder, sc *scan) {
	for _, c := range sc.comps {
		if !d.cfg.Progressive || (sc.ss == 0 && sc.ah == 0) {
			ar.dcStats[c.dcTbl] = [64]byte{}
		}
		if !d.cfg.Progressive || sc.ss != 0 {
			ar.acStats[c.acTbl] = [256]byte{}
		}
	}
}

// restart finds the RSTn marker that must follow an interval and returns
// the position after it. Anything else is an error (libjpeg would warn and
// resynchronise, inventing blocks).
func (d *decoder) restart(pos, marker, num int) (int, error) {
	d.pos = pos
	m, err := d.nextMarker()
	if err != nil {
		return 0, err
	}
	if m != mRST0+num {
		return 0, errBad("corrupt data: expected RST%d, found marker 0x%02x", num, m)
	}
	return d.pos, nil
}

func (d *decoder) huffBlock(br *bitReader, sc *scan, c *component, blk *[64]int16, eobrun *uint32) error {
	if !d.cfg.Progressive {
		return br.huffSeq(blk, c, d.dcHuff[c.dcTbl], d.acHuff[c.acTbl])
	}
	switch {
	case sc.ss == 0 && sc.ah == 0:
		return br.huffDCFirst(blk, c, d.dcHuff[c.dcTbl], sc.al)
	case sc.ss == 0:
		br.huffDCRefine(blk, sc.al)
		return nil
	case sc.ah == 0:
		return br.huffACFirst(blk, d.acHuff[c.acTbl], sc.ss, sc.se, sc.al, eobrun)
	}
	return br.huffACRefine(blk, d.acHuff[c.acTbl], sc.ss, sc.se, sc.al, eobrun)
}

func (d *decoder) arithBlock(ar *arithDecoder, sc *scan, c *component, blk *[64]int16) error {
	if !d.cfg.Progressive {
		return ar.arithSeq(d, blk, c)
	}
	switch {
	case sc.ss == 0 && sc.ah == 0:
		return ar.arithDCFirst(d, blk, c, sc.al)
	case sc.ss == 0:
		ar.arithDCRefine(blk, sc.al)
		return nil
	case sc.ah == 0:
		return ar.acBand(blk, c.acTbl, sc.ss, sc.se, sc.al, d.arithK[c.acTbl])
	}
	return ar.arithACRefine(blk, c.acTbl, sc.ss, sc.se, sc.al)
}
