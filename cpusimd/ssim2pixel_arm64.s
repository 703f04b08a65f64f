//go:build arm64 && !noasm

// NEON kernels of SSIMULACRA2's per-pixel work (see ssim2pixel.go):
// hand-written (avo has no arm64 backend), four pixels per step, each lane
// doing exactly the operations of the Go twin (xybGo, Terms.pixel) in the
// same order: an FMLA/FMLS per fma32, an FMUL per rounded product, float64
// lanes (FCVTL/FCVTN) where the twin converts. Operands are written
// sources first, destination last (neon_arm64.h).

#include "textflag.h"
#include "neon_arm64.h"

// One channel of the opsin absorbance and its cube root, as xybGo: row c
// of the matrix in V(16+c) (bias, −cbrt(bias), 1/3 in lane 3 of V16, V17,
// V18), r, g, b in V0–V2; the result cbrt(max(v, 0)) − cbrt(bias) into
// m. V3 = v, then x; V4 mask; V5 = −x/3; V6 = r; V7 = q; V8 scratch.
#define XYBCH(c, m) \
	VMOVR(21, 3); \
	FMLAE(16+(c), 2, 2, 3); \
	FMLAE(16+(c), 1, 1, 3); \
	FMLAE(16+(c), 0, 0, 3); \
	FCMGTZ4(3, 4); \
	VAND16(4, 3, 3); \
	FMULE(18, 3, 3, 5); \
	FNEG4(5, 5); \
	USHR23(3, 6); \
	IMUL4(27, 6, 6); \
	ISUB4(6, 26, 6); \
	CMTST4(3, 3, 4); \
	VAND16(4, 6, 6); \
	NEWTON; \
	NEWTON; \
	NEWTON; \
	FMUL4(6, 6, 7); \
	FMUL4(7, 7, 7); \
	VMOVR(6, 8); \
	FMLS4(7, 3, 8); \
	FMLAE(18, 3, 8, 6); \
	FMUL4(6, 6, 7); \
	VMOVR(22, m); \
	FMLA4(7, 3, m)

// One Newton step of cubeRootAndAdd: q = (r·r)², r = fma(−x/3, q, 4/3·r).
#define NEWTON FMUL4(6, 6, 7); FMUL4(7, 7, 7); FMULE(19, 0, 6, 8); FMLA4(7, 5, 8); VMOVR(8, 6)

// func xybNEON(r, g, b, dx, dy, db []float32, n int, k *[20]float32)
//
// Linear RGB to positive XYB for the first n pixels (n a multiple of 4) of
// a row, as xybGo. k is xybConsts: V16–V18 the matrix rows with bias,
// −cbrt(bias) and 1/3, V19 = 4/3, PosXMul, PosXAdd, PosYAdd, V20 =
// PosBAdd, 0.5; V21–V25 the constants that are added, broadcast (bias,
// −cbrt(bias), PosXAdd, PosYAdd, PosBAdd); V26/V27 the cube root guess's
// integer constants.
TEXT ·xybNEON(SB), NOSPLIT, $0-160
	MOVD r_base+0(FP), R0
	MOVD g_base+24(FP), R1
	MOVD b_base+48(FP), R2
	MOVD dx_base+72(FP), R3
	MOVD dy_base+96(FP), R4
	MOVD db_base+120(FP), R5
	MOVD n+144(FP), R6
	MOVD k+152(FP), R7
	VLD1.P 64(R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1 (R7), [V20.S4]
	VDUP V16.S[3], V21.S4
	VDUP V17.S[3], V22.S4
	VDUP V19.S[2], V23.S4
	VDUP V19.S[3], V24.S4
	VDUP V20.S[0], V25.S4
	MOVD $0x54800000, R8
	VDUP R8, V26.S4
	MOVD $0x002AAAAA, R8
	VDUP R8, V27.S4
	CBZ  R6, xyb_done

xyb_loop:
	FMOVQ.P 16(R0), F0
	FMOVQ.P 16(R1), F1
	FMOVQ.P 16(R2), F2
	XYBCH(0, 9)
	XYBCH(1, 10)
	XYBCH(2, 11)
	FSUB4(10, 9, 12)     // m0 − m1
	FMULE(20, 1, 12, 12) // X = 0.5·(m0 − m1)
	FMULE(19, 1, 12, 12) // X·PosXMul
	FADD4(23, 12, 12)    // + PosXAdd
	FADD4(10, 9, 13)     // m0 + m1
	FMULE(20, 1, 13, 13) // Y = 0.5·(m0 + m1)
	FSUB4(13, 11, 14)    // m2 − Y
	FADD4(25, 14, 14)    // + PosBAdd
	FADD4(24, 13, 13)    // Y + PosYAdd
	FMOVQ.P F12, 16(R3)
	FMOVQ.P F13, 16(R4)
	FMOVQ.P F14, 16(R5)
	SUBS $4, R6, R6
	BNE  xyb_loop

xyb_done:
	RET

// The float64 half of Terms.pixel for two lanes (FCVT: FCVTL for pixels
// x ≡ 0, 1 mod 4, FCVTL2 for x ≡ 2, 3), into the accumulators of those
// lanes, acc0…acc5 for the six terms: d = max(1 − ssim, 0), d⁴, the
// artifact a = max(d1, 0), a⁴, detail lost l = max(−d1, 0), l⁴, with
// d1 = (1+e2)/(1+e1) − 1. V13 = numM·numS/denS, V5 = |img1 − mu1|,
// V6 = |img2 − mu2| (float32); V18 = 1.0, V19 = 0 (float64); V7, V8,
// V14, V15 scratch. Each fourth power is two FMULs then an FADD, as
// quartic (no FMA).
#define TERMS2(FCVT, acc0, acc1, acc2, acc3, acc4, acc5) \
	FCVT(13, 14); \
	FSUB2(14, 18, 14); \
	FMAX2(19, 14, 14); \
	FADD2(14, acc0, acc0); \
	FMUL2(14, 14, 15); \
	FMUL2(15, 15, 15); \
	FADD2(15, acc1, acc1); \
	FCVT(6, 7); \
	FCVT(5, 8); \
	FADD2(7, 18, 7); \
	FADD2(8, 18, 8); \
	FDIV2(8, 7, 7); \
	FSUB2(18, 7, 7); \
	FMAX2(19, 7, 8); \
	FADD2(8, acc2, acc2); \
	FMUL2(8, 8, 8); \
	FMUL2(8, 8, 8); \
	FADD2(8, acc3, acc3); \
	FNEG2(7, 7); \
	FMAX2(19, 7, 7); \
	FADD2(7, acc4, acc4); \
	FMUL2(7, 7, 7); \
	FMUL2(7, 7, 7); \
	FADD2(7, acc5, acc5)

// func rowTermsNEON(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, c2 float32)
//
// termsGo in NEON: the six terms of the first n pixels (a multiple of 4)
// summed per lane, acc[i][l] over pixels x ≡ l (mod 4) in order of x.
// Term i's lanes 0, 1 are in V(20+2i), lanes 2, 3 in V(21+2i).
TEXT ·rowTermsNEON(SB), NOSPLIT, $0-188
	MOVD img1_base+0(FP), R0
	MOVD mu1_base+24(FP), R1
	MOVD vr1_base+48(FP), R2
	MOVD img2_base+72(FP), R3
	MOVD mu2_base+96(FP), R4
	MOVD s22_base+120(FP), R5
	MOVD s12_base+144(FP), R6
	MOVD n+168(FP), R7
	MOVD acc+176(FP), R8
	FMOVS c2+184(FP), F16
	VDUP V16.S[0], V16.S4
	FMOVD $1.0, F18
	VDUP V18.D[0], V18.D2
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	VEOR V30.B16, V30.B16, V30.B16
	VEOR V31.B16, V31.B16, V31.B16
	CBZ  R7, terms_done

terms_loop:
	FMOVQ.P 16(R1), F0 // m1
	FMOVQ.P 16(R4), F1 // m2
	FMOVQ.P 16(R6), F2 // s12
	FMOVQ.P 16(R2), F3 // vr1
	FMOVQ.P 16(R5), F4 // s22
	FMOVQ.P 16(R0), F5 // img1
	FMOVQ.P 16(R3), F6 // img2
	// numM = float32(1 − float64(float32(diff²))), diff = m1 − m2
	FSUB4(1, 0, 7)
	FMUL4(7, 7, 7)
	FCVTL(7, 8)
	FCVTL2(7, 9)
	FSUB2(8, 18, 8)
	FSUB2(9, 18, 9)
	FCVTN(8, 10)
	FCVTN2(9, 10)
	// numS = 2·(s12 − m1·m2) + c2
	FMUL4(1, 0, 11)
	FSUB4(11, 2, 11)
	FADD4(11, 11, 11)
	FADD4(16, 11, 11)
	// denS = (vr1 + (s22 − m2·m2)) + c2
	FMUL4(1, 1, 12)
	FSUB4(12, 4, 12)
	FADD4(12, 3, 12)
	FADD4(16, 12, 12)
	// numM·numS/denS
	FMUL4(11, 10, 13)
	FDIV4(12, 13, 13)
	// |img2 − m2|, |img1 − m1|
	FSUB4(1, 6, 6)
	FABS4(6, 6)
	FSUB4(0, 5, 5)
	FABS4(5, 5)
	TERMS2(FCVTL, 20, 22, 24, 26, 28, 30)
	TERMS2(FCVTL2, 21, 23, 25, 27, 29, 31)
	SUBS $4, R7, R7
	BNE  terms_loop

terms_done:
	FSTPQ (F20, F21), (R8)
	FSTPQ (F22, F23), 32(R8)
	FSTPQ (F24, F25), 64(R8)
	FSTPQ (F26, F27), 96(R8)
	FSTPQ (F28, F29), 128(R8)
	FSTPQ (F30, F31), 160(R8)
	RET
