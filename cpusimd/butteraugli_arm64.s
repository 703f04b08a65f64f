//go:build arm64 && !noasm

// NEON kernels of Butteraugli (see butteraugli.go, butteraugli_band.go and
// butteraugli_pixel.go for their Go twins, which define the arithmetic).
// Hand-written: avo, which generates the AVX2 versions, has no arm64
// backend. Every kernel does, lane by lane, the float32 (and float64)
// steps of its twin in the twin's order, each product rounded on its own
// (an FMUL, then an FADD: no FMLA, since the twins round every product),
// so the results are the twins' bits. A block of eight outputs, the unit
// of the wrappers' n8, is two four-lane vectors here. Go's assembler
// writes operands sources first, destination last; the FP macros of
// neon_arm64.h follow that order.

#include "textflag.h"
#include "neon_arm64.h"

// One tap pair of firNEON for the eight outputs at R6 (left tap) and R7
// (right tap): V16/V17 = (left + right)·k, k the tap at R8; then the
// pointers move to the next pair.
#define FIRPAIR \
	FLDPQ (R6), (F16, F17); \
	FLDPQ (R7), (F18, F19); \
	FMOVQ (R8), F20; \
	FADD4(18, 16, 16); \
	FADD4(19, 17, 17); \
	FMUL4(20, 16, 16); \
	FMUL4(20, 17, 17); \
	ADD   R3, R6, R6; \
	SUB   R3, R7, R7; \
	ADD   $32, R8, R8

// Partial sum s (registers a, b for the two vectors) is set to the pair
// (FIRSET) or has it added (FIRADD).
#define FIRSET(a, b) FIRPAIR; VMOVR(16, a); VMOVR(17, b)
#define FIRADD(a, b) FIRPAIR; FADD4(16, a, a); FADD4(17, b, b)

// func firNEON(src, dst *float32, n8, step, off int, k *[8]float32)
//
// BAFIR's kernel for outputs 0 … 8·n8−1 (firGo's loop): off ∈ {3, 6, 7,
// 16} tap pairs, pair j into partial sum j mod 4 (V0/V1, V2/V3, V4/V5,
// V6/V7), the first four pairs setting their sums, then centre·k[off] +
// s0 + s1 + s2 (+ s3). k is the first of the off+1 rows of BATaps.tab,
// 32 bytes apart, each tap repeated; step is in floats.
//
// R0 = &src[i], R1 = &dst[i], R2 = blocks left, R3 = step in bytes,
// R4 = off, R5 = k; per block R6/R7 walk the left and right taps, R8 the
// kernel, R9 counts the pairs.
TEXT ·firNEON(SB), NOSPLIT, $0-48
	MOVD src+0(FP), R0
	MOVD dst+8(FP), R1
	MOVD n8+16(FP), R2
	MOVD step+24(FP), R3
	MOVD off+32(FP), R4
	MOVD k+40(FP), R5
	LSL  $2, R3, R3
	MUL  R4, R3, R10
	LSL  $1, R10, R10 // 2·off·step bytes: the right tap of pair 0
	CBZ  R2, fir_done

fir_block:
	MOVD R0, R6
	ADD  R10, R0, R7
	MOVD R5, R8
	FIRSET(0, 1)
	FIRSET(2, 3)
	FIRSET(4, 5)
	CMP  $3, R4
	BEQ  fir_centre3
	FIRSET(6, 7)
	MOVD $4, R9

fir_more:
	// Pairs 4 … off−1, four at a time into s0 … s3, stopping after pair
	// off−1.
	CMP  R4, R9
	BGE  fir_centre
	FIRADD(0, 1)
	ADD  $1, R9, R9
	CMP  R4, R9
	BGE  fir_centre
	FIRADD(2, 3)
	ADD  $1, R9, R9
	CMP  R4, R9
	BGE  fir_centre
	FIRADD(4, 5)
	ADD  $1, R9, R9
	CMP  R4, R9
	BGE  fir_centre
	FIRADD(6, 7)
	ADD  $1, R9, R9
	B    fir_more

fir_centre:
	// R6 is now the centre tap, R8 k[off].
	FLDPQ (R6), (F16, F17)
	FMOVQ (R8), F20
	FMUL4(20, 16, 16)
	FMUL4(20, 17, 17)
	FADD4(0, 16, 16)
	FADD4(1, 17, 17)
	FADD4(2, 16, 16)
	FADD4(3, 17, 17)
	FADD4(4, 16, 16)
	FADD4(5, 17, 17)
	FADD4(6, 16, 16)
	FADD4(7, 17, 17)
	B    fir_store

fir_centre3:
	FLDPQ (R6), (F16, F17)
	FMOVQ (R8), F20
	FMUL4(20, 16, 16)
	FMUL4(20, 17, 17)
	FADD4(0, 16, 16)
	FADD4(1, 17, 17)
	FADD4(2, 16, 16)
	FADD4(3, 17, 17)
	FADD4(4, 16, 16)
	FADD4(5, 17, 17)

fir_store:
	FSTPQ (F16, F17), (R1)
	ADD  $32, R0, R0
	ADD  $32, R1, R1
	SUBS $1, R2, R2
	BNE  fir_block

fir_done:
	RET

// One half (two lanes, float64) of maltaDiffNEON: the lanes of v0 in V10,
// |v0| in V7, v1 in V8, d in V9, scaler2 in V6, all widened; the result
// (float64, exact for d when no bound applies) in V10. The four candidate
// values are computed as the twin's four branches do, then selected.
#define MDHALF \
	FMUL2(28, 7, 11); \  // tooSmall = 0.55·|v0|
	FMUL2(29, 7, 12); \  // tooBig = 1.05·|v0|
	FNEG2(11, 13); \
	FCMGT2(13, 8, 13); \ // c1: w1 > −tooSmall
	FADD2(11, 8, 14); \
	FMUL2(14, 6, 14); \
	FSUB2(14, 9, 14); \  // d − s·(w1 + tooSmall)
	FNEG2(12, 15); \
	FCMGT2(8, 15, 15); \ // c2: w1 < −tooBig
	FNEG2(8, 16); \
	FSUB2(12, 16, 16); \
	FMUL2(16, 6, 16); \
	FADD2(16, 9, 16); \  // d + s·(−w1 − tooBig)
	BSL16(9, 16, 15); \
	BSL16(15, 14, 13); \ // v0 < 0: c1 ? … : c2 ? … : d
	FCMGT2(8, 11, 17); \ // c3: w1 < tooSmall
	FSUB2(8, 11, 18); \
	FMUL2(18, 6, 18); \
	FADD2(18, 9, 18); \  // d + s·(tooSmall − w1)
	FCMGT2(12, 8, 19); \ // c4: w1 > tooBig
	FSUB2(12, 8, 20); \
	FMUL2(20, 6, 20); \
	FSUB2(20, 9, 20); \  // d − s·(w1 − tooBig)
	BSL16(9, 20, 19); \
	BSL16(19, 18, 17); \ // v0 ≥ 0: c3 ? … : c4 ? … : d
	FCMLTZ2(10, 10); \
	BSL16(17, 13, 10)

// func maltaDiffNEON(r0, r1, o *float32, n8 int, w *BAMaltaWeights)
//
// BAMaltaDiff's kernel (maltaDiffGo) for samples 0 … 8·n8−1, four at a
// time: the float32 part in V0–V5, then each half widened to float64.
// V24–V26 hold Norm1, Norm2Gt, Norm2Lt, V27 0.5, V28/V29 0.55 and 1.05.
TEXT ·maltaDiffNEON(SB), NOSPLIT, $0-40
	MOVD r0+0(FP), R0
	MOVD r1+8(FP), R1
	MOVD o+16(FP), R2
	MOVD n8+24(FP), R3
	MOVD w+32(FP), R4
	FMOVQ (R4), F23
	VDUP V23.S[0], V24.S4
	VDUP V23.S[1], V25.S4
	VDUP V23.S[2], V26.S4
	FMOVQ 16(R4), F22
	VDUP V22.D[0], V28.D2
	VDUP V22.D[1], V29.D2
	FMOVS $0.5, F27
	VDUP V27.S[0], V27.S4
	LSL  $1, R3, R3 // groups of four
	CBZ  R3, md_done

md_loop:
	FMOVQ (R0), F0
	FMOVQ (R1), F1
	FABS4(0, 2)
	FABS4(1, 3)
	FADD4(3, 2, 3)
	FMUL4(27, 3, 3)     // absval
	FADD4(3, 24, 3)     // den = Norm1 + absval
	FDIV4(3, 25, 4)
	FSUB4(1, 0, 5)
	FMUL4(5, 4, 4)      // d = Norm2Gt/den · (v0 − v1)
	FDIV4(3, 26, 5)     // scaler2 (float32)
	FCVTL(5, 6)
	FCVTL(2, 7)
	FCVTL(1, 8)
	FCVTL(4, 9)
	FCVTL(0, 10)
	MDHALF
	FCVTN(10, 30)
	FCVTL2(5, 6)
	FCVTL2(2, 7)
	FCVTL2(1, 8)
	FCVTL2(4, 9)
	FCVTL2(0, 10)
	MDHALF
	FCVTN2(10, 30)
	FMOVQ F30, (R2)
	ADD  $16, R0, R0
	ADD  $16, R1, R1
	ADD  $16, R2, R2
	SUBS $1, R3, R3
	BNE  md_loop

md_done:
	RET
