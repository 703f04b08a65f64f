package jpegturbo

// Block smoothing of progressive files (libjpeg-turbo 2.1 jdcoefct.c,
// decompress_smooth_data). libjpeg's default do_block_smoothing = TRUE
// makes it estimate low-frequency AC coefficients (and, when no AC data
// exists at all, the DC) of blocks whose coefficients are not yet known to
// full precision, from the DC values of the 5×5 neighbouring blocks. For a
// complete file it matters only when the scan script leaves some of the
// first nine AC coefficients (zigzag 1..9) of some component unsent or not
// refined to Al = 0; cjpeg's default progressive scripts refine everything,
// so their files are not smoothed.

// Natural-order positions of zigzag coefficients 1..9.
var smoothPos = [10]int{0, 1, 8, 16, 9, 2, 3, 10, 17, 24}

// smoothingOK is libjpeg's smoothing_ok, evaluated once after the last scan
// (the non-buffered decompression reads the whole file before output).
func (d *decoder) smoothingOK() bool {
	if !d.cfg.Progressive {
		return false
	}
	useful := false
	for i := range d.comps {
		c := &d.comps[i]
		if !c.qLatched {
			return false
		}
		for _, p := range smoothPos {
			if c.qt[p] == 0 {
				return false
			}
		}
		if c.coefBits[0] < 0 {
			return false
		}
		for k := 1; k < 10; k++ {
			if c.coefBits[k] != 0 {
				useful = true
			}
		}
	}
	return useful
}

// smoothPredict is one estimate of decompress_smooth_data: the rounded
// quotient of num by q·256, limited below 2^Al when Al > 0.
func smoothPredict(num, q int64, al int) int16 {
	neg := num < 0
	if neg {
		num = -num
	}
	pred := int((q<<7 + num) / (q << 8))
	if al > 0 && pred >= 1<<al {
		pred = 1<<al - 1
	}
	if neg {
		pred = -pred
	}
	return int16(pred)
}

// idctSmoothed runs the IDCT of one component with block smoothing.
func (d *decoder) idctSmoothed(c *component) {
	last := d.mcusY - 1
	v := c.v
	bits := c.coefBits
	changeDC := true
	for k := 1; k < 10; k++ {
		if bits[k] != -1 {
			changeDC = false
		}
	}
	q := func(p int) int64 { return int64(c.qt[p]) }
	Q00, Q01, Q10, Q20, Q11, Q02 := q(0), q(1), q(8), q(16), q(9), q(2)
	Q03, Q12, Q21, Q30 := q(3), q(10), q(17), q(24)
	stride := c.bwPad * 8
	dcAt := func(row, col int) int64 { return int64(c.coefs[(row*c.bwPad+col)*64]) }
	lastCol := c.bw - 1
	var ws [64]int16
	for by := 0; by < c.bh; by++ {
		R, br := by/v, by%v
		blockRows := v
		if R == last {
			blockRows = c.bh % v
			if blockRows == 0 {
				blockRows = v
			}
		}
		// Neighbouring block rows exactly as libjpeg picks them from its
		// iMCU-row buffer (which is not always a plain clamp).
		prev := by
		if br > 0 || R > 0 {
			prev = by - 1
		}
		prev2 := prev
		if br > 1 || R > 1 {
			prev2 = by - 2
		}
		next := by
		if br < blockRows-1 || R < last {
			next = by + 1
		}
		next2 := next
		if br < blockRows-2 || R+1 < last {
			next2 = by + 2
		}
		rows := [5]int{prev2, prev, by, next, next2}
		// Sliding registers: dc[r][i] is DC(r*5+i+1) of libjpeg's names.
		var dc [5][5]int64
		for r := range rows {
			x := dcAt(rows[r], 0)
			dc[r] = [5]int64{x, x, x, x, x}
		}
		for bx := 0; bx <= lastCol; bx++ {
			blk := (*[64]int16)(c.coefs[(by*c.bwPad+bx)*64:])
			ws = *blk
			if bx == 0 && bx < lastCol {
				for r := range rows {
					dc[r][3] = dcAt(rows[r], 1)
				}
			}
			if bx+1 < lastCol {
				for r := range rows {
					dc[r][4] = dcAt(rows[r], bx+2)
				}
			}
			// DC01..DC25 in libjpeg's numbering.
			D := func(n int) int64 { return dc[(n-1)/5][(n-1)%5] }
			if al := bits[1]; al != 0 && ws[1] == 0 {
				var num int64
				if changeDC {
					num = -D(1) - D(2) + D(4) + D(5) - 3*D(6) + 13*D(7) - 13*D(9) + 3*D(10) -
						3*D(11) + 38*D(12) - 38*D(14) + 3*D(15) - 3*D(16) + 13*D(17) - 13*D(19) +
						3*D(20) - D(21) - D(22) + D(24) + D(25)
				} else {
					num = -7*D(11) + 50*D(12) - 50*D(14) + 7*D(15)
				}
				ws[1] = smoothPredict(Q00*num, Q01, al)
			}
			if al := bits[2]; al != 0 && ws[8] == 0 {
				var num int64
				if changeDC {
					num = -D(1) - 3*D(2) - 3*D(3) - 3*D(4) - D(5) - D(6) + 13*D(7) + 38*D(8) +
						13*D(9) - D(10) + D(16) - 13*D(17) - 38*D(18) - 13*D(19) + D(20) + D(21) +
						3*D(22) + 3*D(23) + 3*D(24) + D(25)
				} else {
					num = -7*D(3) + 50*D(8) - 50*D(18) + 7*D(23)
				}
				ws[8] = smoothPredict(Q00*num, Q10, al)
			}
			if al := bits[3]; al != 0 && ws[16] == 0 {
				var num int64
				if changeDC {
					num = D(3) + 2*D(7) + 7*D(8) + 2*D(9) - 5*D(12) - 14*D(13) - 5*D(14) +
						2*D(17) + 7*D(18) + 2*D(19) + D(23)
				} else {
					num = -D(3) + 13*D(8) - 24*D(13) + 13*D(18) - D(23)
				}
				ws[16] = smoothPredict(Q00*num, Q20, al)
			}
			if al := bits[4]; al != 0 && ws[9] == 0 {
				var num int64
				if changeDC {
					num = -D(1) + D(5) + 9*D(7) - 9*D(9) - 9*D(17) + 9*D(19) + D(21) - D(25)
				} else {
					num = D(10) + D(16) - 10*D(17) + 10*D(19) - D(2) - D(20) + D(22) - D(24) +
						D(4) - D(6) + 10*D(7) - 10*D(9)
				}
				ws[9] = smoothPredict(Q00*num, Q11, al)
			}
			if al := bits[5]; al != 0 && ws[2] == 0 {
				var num int64
				if changeDC {
					num = 2*D(7) - 5*D(8) + 2*D(9) + D(11) + 7*D(12) - 14*D(13) + 7*D(14) +
						D(15) + 2*D(17) - 5*D(18) + 2*D(19)
				} else {
					num = -D(11) + 13*D(12) - 24*D(13) + 13*D(14) - D(15)
				}
				ws[2] = smoothPredict(Q00*num, Q02, al)
			}
			if changeDC {
				if al := bits[6]; al != 0 && ws[3] == 0 {
					ws[3] = smoothPredict(Q00*(D(7)-D(9)+2*D(12)-2*D(14)+D(17)-D(19)), Q03, al)
				}
				if al := bits[7]; al != 0 && ws[10] == 0 {
					ws[10] = smoothPredict(Q00*(D(7)-3*D(8)+D(9)-D(17)+3*D(18)-D(19)), Q12, al)
				}
				if al := bits[8]; al != 0 && ws[17] == 0 {
					ws[17] = smoothPredict(Q00*(D(7)-D(9)-3*D(12)+3*D(14)+D(17)-D(19)), Q21, al)
				}
				if al := bits[9]; al != 0 && ws[24] == 0 {
					ws[24] = smoothPredict(Q00*(D(7)+2*D(8)+D(9)-D(17)-2*D(18)-D(19)), Q30, al)
				}
				num := -2*D(1) - 6*D(2) - 8*D(3) - 6*D(4) - 2*D(5) - 6*D(6) + 6*D(7) + 42*D(8) +
					6*D(9) - 6*D(10) - 8*D(11) + 42*D(12) + 152*D(13) + 42*D(14) - 8*D(15) -
					6*D(16) + 6*D(17) + 42*D(18) + 6*D(19) - 6*D(20) - 2*D(21) - 6*D(22) -
					8*D(23) - 6*D(24) - 2*D(25)
				ws[0] = smoothPredict(Q00*num, Q00, 0)
			}
			idctBlock(&ws, &c.qt, c.plane[by*8*stride+bx*8:], stride)
			for r := range rows {
				dc[r][0], dc[r][1], dc[r][2], dc[r][3] = dc[r][1], dc[r][2], dc[r][3], dc[r][4]
			}
		}
	}
}
