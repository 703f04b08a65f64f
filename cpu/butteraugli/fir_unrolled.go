package butteraugli

// The interior loop of firRow, unrolled for each kernel length butteraugli
// uses. The taps are added in pairs (x−i, x+i) into four partial sums
// (pair i into sum i mod 4), and the result is centre + sum0 + sum1 + sum2
// (+ sum3): the grouping of libjxl's convolution, so float32 rounding
// matches it. Every product is rounded on its own (float32(·)), which Go on
// arm64 would otherwise fuse into the sums.

func firInterior7(src, dst []float32, b1, b2 int, k *[4]float32) {
	for x := b1; x < b2; x++ {
		r := (*[7]float32)(src[x-3 : x+4])
		a0 := float32((r[0] + r[6]) * k[0])
		a1 := float32((r[1] + r[5]) * k[1])
		a2 := float32((r[2] + r[4]) * k[2])
		dst[x] = float32(r[3]*k[3]) + a0 + a1 + a2
	}
}

func firInterior13(src, dst []float32, b1, b2 int, k *[7]float32) {
	for x := b1; x < b2; x++ {
		r := (*[13]float32)(src[x-6 : x+7])
		a0 := float32((r[0] + r[12]) * k[0])
		a1 := float32((r[1] + r[11]) * k[1])
		a2 := float32((r[2] + r[10]) * k[2])
		a3 := float32((r[3] + r[9]) * k[3])
		a0 += float32((r[4] + r[8]) * k[4])
		a1 += float32((r[5] + r[7]) * k[5])
		dst[x] = float32(r[6]*k[6]) + a0 + a1 + a2 + a3
	}
}

func firInterior15(src, dst []float32, b1, b2 int, k *[8]float32) {
	for x := b1; x < b2; x++ {
		r := (*[15]float32)(src[x-7 : x+8])
		a0 := float32((r[0] + r[14]) * k[0])
		a1 := float32((r[1] + r[13]) * k[1])
		a2 := float32((r[2] + r[12]) * k[2])
		a3 := float32((r[3] + r[11]) * k[3])
		a0 += float32((r[4] + r[10]) * k[4])
		a1 += float32((r[5] + r[9]) * k[5])
		a2 += float32((r[6] + r[8]) * k[6])
		dst[x] = float32(r[7]*k[7]) + a0 + a1 + a2 + a3
	}
}

func firInterior33(src, dst []float32, b1, b2 int, k *[17]float32) {
	for x := b1; x < b2; x++ {
		r := (*[33]float32)(src[x-16 : x+17])
		a0 := float32((r[0] + r[32]) * k[0])
		a1 := float32((r[1] + r[31]) * k[1])
		a2 := float32((r[2] + r[30]) * k[2])
		a3 := float32((r[3] + r[29]) * k[3])
		a0 += float32((r[4] + r[28]) * k[4])
		a1 += float32((r[5] + r[27]) * k[5])
		a2 += float32((r[6] + r[26]) * k[6])
		a3 += float32((r[7] + r[25]) * k[7])
		a0 += float32((r[8] + r[24]) * k[8])
		a1 += float32((r[9] + r[23]) * k[9])
		a2 += float32((r[10] + r[22]) * k[10])
		a3 += float32((r[11] + r[21]) * k[11])
		a0 += float32((r[12] + r[20]) * k[12])
		a1 += float32((r[13] + r[19]) * k[13])
		a2 += float32((r[14] + r[18]) * k[14])
		a3 += float32((r[15] + r[17]) * k[15])
		dst[x] = float32(r[16]*k[16]) + a0 + a1 + a2 + a3
	}
}
