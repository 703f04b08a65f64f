package jpegturbo

// The accurate integer inverse DCT, libjpeg's JDCT_ISLOW (jidctint.c): the
// Loeffler–Ligtenberg–Moschytz factorisation with 13-bit constants, two
// extra bits of precision kept between the column and the row pass.

// Fixed-point constants FIX(x) = round(x × 2^13), as jidctint.c defines
// them (libjpeg-turbo 2.1.5.1, IJG licence).
const (
	constBits  = 13
	pass1Bits  = 2
	fix0298631 = 2446
	fix0390181 = 3196
	fix0541196 = 4433
	fix0765367 = 6270
	fix0899976 = 7373
	fix1175876 = 9633
	fix1501321 = 12299
	fix1847759 = 15137
	fix1961571 = 16069
	fix2053120 = 16819
	fix2562915 = 20995
	fix3072711 = 25172
)

// clampIDCT turns a descaled IDCT output into a sample. libjpeg's C code
// indexes a range-limit table with (x & 1023), which wraps values beyond
// ±512; its SIMD code (what Debian's build runs on x86-64 and arm64)
// saturates instead. The two agree for every |x| < 512, which is all that
// valid coefficient data can produce; saturation is what djpeg shows on
// this machine for the rest.
func clampIDCT(x int32) byte {
	x += 128
	if uint32(x) > 255 {
		if x < 0 {
			return 0
		}
		return 255
	}
	return byte(x)
}

// idctBlock dequantises a block (natural order) and writes its 8×8
// samples to out (rows stride apart).
func idctBlock(in *[64]int16, q *[64]int32, out []byte, stride int) {
	var ws [64]int32
	for col := 0; col < 8; col++ {
		if in[8+col] == 0 && in[16+col] == 0 && in[24+col] == 0 && in[32+col] == 0 &&
			in[40+col] == 0 && in[48+col] == 0 && in[56+col] == 0 {
			dc := int32(in[col]) * q[col] << pass1Bits
			for r := 0; r < 8; r++ {
				ws[r*8+col] = dc
			}
			continue
		}
		// Even part.
		z2 := int64(in[16+col]) * int64(q[16+col])
		z3 := int64(in[48+col]) * int64(q[48+col])
		z1 := (z2 + z3) * fix0541196
		tmp2 := z1 + z3*(-fix1847759)
		tmp3 := z1 + z2*fix0765367
		z2 = int64(in[col]) * int64(q[col])
		z3 = int64(in[32+col]) * int64(q[32+col])
		tmp0 := (z2 + z3) << constBits
		tmp1 := (z2 - z3) << constBits
		tmp10 := tmp0 + tmp3
		tmp13 := tmp0 - tmp3
		tmp11 := tmp1 + tmp2
		tmp12 := tmp1 - tmp2
		// Odd part.
		t0 := int64(in[56+col]) * int64(q[56+col])
		t1 := int64(in[40+col]) * int64(q[40+col])
		t2 := int64(in[24+col]) * int64(q[24+col])
		t3 := int64(in[8+col]) * int64(q[8+col])
		z1 = t0 + t3
		z2 = t1 + t2
		z3 = t0 + t2
		z4 := t1 + t3
		z5 := (z3 + z4) * fix1175876
		t0 *= fix0298631
		t1 *= fix2053120
		t2 *= fix3072711
		t3 *= fix1501321
		z1 *= -fix0899976
		z2 *= -fix2562915
		z3 *= -fix1961571
		z4 *= -fix0390181
		z3 += z5
		z4 += z5
		t0 += z1 + z3
		t1 += z2 + z4
		t2 += z2 + z3
		t3 += z1 + z4
		const sh = constBits - pass1Bits
		const rnd = 1 << (sh - 1)
		ws[col] = int32((tmp10 + t3 + rnd) >> sh)
		ws[56+col] = int32((tmp10 - t3 + rnd) >> sh)
		ws[8+col] = int32((tmp11 + t2 + rnd) >> sh)
		ws[48+col] = int32((tmp11 - t2 + rnd) >> sh)
		ws[16+col] = int32((tmp12 + t1 + rnd) >> sh)
		ws[40+col] = int32((tmp12 - t1 + rnd) >> sh)
		ws[24+col] = int32((tmp13 + t0 + rnd) >> sh)
		ws[32+col] = int32((tmp13 - t0 + rnd) >> sh)
	}
	for row := 0; row < 8; row++ {
		w := ws[row*8 : row*8+8 : row*8+8]
		o := out[row*stride : row*stride+8 : row*stride+8]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0 {
			v := clampIDCT((w[0] + 1<<(pass1Bits+2)) >> (pass1Bits + 3))
			for i := range o {
				o[i] = v
			}
			continue
		}
		z2 := int64(w[2])
		z3 := int64(w[6])
		z1 := (z2 + z3) * fix0541196
		tmp2 := z1 + z3*(-fix1847759)
		tmp3 := z1 + z2*fix0765367
		tmp0 := (int64(w[0]) + int64(w[4])) << constBits
		tmp1 := (int64(w[0]) - int64(w[4])) << constBits
		tmp10 := tmp0 + tmp3
		tmp13 := tmp0 - tmp3
		tmp11 := tmp1 + tmp2
		tmp12 := tmp1 - tmp2
		t0, t1, t2, t3 := int64(w[7]), int64(w[5]), int64(w[3]), int64(w[1])
		z1 = t0 + t3
		z2 = t1 + t2
		z3 = t0 + t2
		z4 := t1 + t3
		z5 := (z3 + z4) * fix1175876
		t0 *= fix0298631
		t1 *= fix2053120
		t2 *= fix3072711
		t3 *= fix1501321
		z1 *= -fix0899976
		z2 *= -fix2562915
		z3 *= -fix1961571
		z4 *= -fix0390181
		z3 += z5
		z4 += z5
		t0 += z1 + z3
		t1 += z2 + z4
		t2 += z2 + z3
		t3 += z1 + z4
		const sh = constBits + pass1Bits + 3
		const rnd = 1 << (sh - 1)
		o[0] = clampIDCT(int32((tmp10 + t3 + rnd) >> sh))
		o[7] = clampIDCT(int32((tmp10 - t3 + rnd) >> sh))
		o[1] = clampIDCT(int32((tmp11 + t2 + rnd) >> sh))
		o[6] = clampIDCT(int32((tmp11 - t2 + rnd) >> sh))
		o[2] = clampIDCT(int32((tmp12 + t1 + rnd) >> sh))
		o[5] = clampIDCT(int32((tmp12 - t1 + rnd) >> sh))
		o[3] = clampIDCT(int32((tmp13 + t0 + rnd) >> sh))
		o[4] = clampIDCT(int32((tmp13 - t0 + rnd) >> sh))
	}
}
