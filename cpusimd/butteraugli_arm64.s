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

// The Malta filters. Rows 0 … 8 of the 9×9 block of four adjacent
// outputs start at MR0 … MR8; ML loads the four lanes of column c of row
// r (sample m[r][c] of each output's block) into register v.
#define MR0 R7
#define MR1 R8
#define MR2 R9
#define MR3 R10
#define MR4 R11
#define MR5 R12
#define MR6 R13
#define MR7 R14
#define MR8 R15
#define ML(r, c, v) FMOVQ (4*(c))(r), v

// The row pointers of the block whose top-left sample is at base (R5 =
// the row stride in bytes).
#define MROWS(base) \
	MOVD base, MR0; \
	ADD  R5, MR0, MR1; \
	ADD  R5, MR1, MR2; \
	ADD  R5, MR2, MR3; \
	ADD  R5, MR3, MR4; \
	ADD  R5, MR4, MR5; \
	ADD  R5, MR5, MR6; \
	ADD  R5, MR6, MR7; \
	ADD  R5, MR7, MR8

// sum5, sum7 and sum9 of butteraugli.go on V1 … V5/V7/V9 (a, b, c, …),
// the result in V1.
#define MSUM5 FADD4(2, 1, 1); FADD4(5, 4, 4); FADD4(4, 3, 3); FADD4(3, 1, 1)
#define MSUM7 FADD4(2, 1, 1); FADD4(5, 4, 4); FADD4(7, 6, 6); FADD4(6, 4, 4); FADD4(4, 3, 3); FADD4(3, 1, 1)
#define MSUM9 FADD4(2, 1, 1); FADD4(4, 3, 3); FADD4(3, 1, 1); FADD4(6, 5, 5); FADD4(8, 7, 7); FADD4(7, 5, 5); FADD4(5, 1, 1); FADD4(9, 1, 1)

// acc = V1², or acc += V1² (the square rounded first, in V10).
#define MSQSET(acc) FMUL4(1, 1, acc)
#define MSQADD(acc) FMUL4(1, 1, 10); FADD4(10, acc, acc)

// Segments: the samples (r, c) in the twin's argument order, the centre
// m[4][4] in its place.
#define MSEG9(r1, c1, r2, c2, r3, c3, r4, c4, r6, c6, r7, c7, r8, c8, r9, c9) \
	ML(r1, c1, F1); ML(r2, c2, F2); ML(r3, c3, F3); ML(r4, c4, F4); ML(MR4, 4, F5); \
	ML(r6, c6, F6); ML(r7, c7, F7); ML(r8, c8, F8); ML(r9, c9, F9); MSUM9
#define MSEG7(r1, c1, r2, c2, r3, c3, r5, c5, r6, c6, r7, c7) \
	ML(r1, c1, F1); ML(r2, c2, F2); ML(r3, c3, F3); ML(MR4, 4, F4); \
	ML(r5, c5, F5); ML(r6, c6, F6); ML(r7, c7, F7); MSUM7
#define MSEG5(r1, c1, r2, c2, r4, c4, r5, c5) \
	ML(r1, c1, F1); ML(r2, c2, F2); ML(MR4, 4, F3); ML(r4, c4, F4); ML(r5, c5, F5); MSUM5

// maltaHFGo on the block at MR0 … into acc; the four segments counted
// twice keep their squares in V23–V26.
#define MALTAHF(acc) \
	MSEG9(MR4, 0, MR4, 1, MR4, 2, MR4, 3, MR4, 5, MR4, 6, MR4, 7, MR4, 8); MSQSET(acc); \
	MSEG9(MR0, 4, MR1, 4, MR2, 4, MR3, 4, MR5, 4, MR6, 4, MR7, 4, MR8, 4); MSQADD(acc); \
	MSEG7(MR1, 1, MR2, 2, MR3, 3, MR5, 5, MR6, 6, MR7, 7); MSQADD(acc); \
	MSEG7(MR1, 7, MR2, 6, MR3, 5, MR5, 3, MR6, 2, MR7, 1); MSQADD(acc); \
	MSEG9(MR0, 5, MR1, 5, MR2, 5, MR3, 4, MR5, 4, MR6, 3, MR7, 3, MR8, 3); FMUL4(1, 1, 23); FADD4(23, acc, acc); \
	MSEG9(MR0, 3, MR1, 3, MR2, 3, MR3, 4, MR5, 4, MR6, 5, MR7, 5, MR8, 5); FMUL4(1, 1, 24); FADD4(24, acc, acc); \
	MSEG9(MR3, 0, MR3, 1, MR3, 2, MR4, 3, MR4, 5, MR5, 6, MR5, 7, MR5, 8); FMUL4(1, 1, 25); FADD4(25, acc, acc); \
	MSEG9(MR5, 0, MR5, 1, MR5, 2, MR4, 3, MR4, 5, MR3, 6, MR3, 7, MR3, 8); FMUL4(1, 1, 26); FADD4(26, acc, acc); \
	MSEG7(MR1, 2, MR2, 3, MR3, 3, MR5, 5, MR6, 5, MR7, 6); MSQADD(acc); \
	MSEG7(MR1, 6, MR2, 5, MR3, 5, MR5, 3, MR6, 3, MR7, 2); MSQADD(acc); \
	MSEG7(MR2, 1, MR3, 2, MR3, 3, MR5, 5, MR5, 6, MR6, 7); MSQADD(acc); \
	MSEG7(MR2, 7, MR3, 6, MR3, 5, MR5, 3, MR5, 2, MR6, 1); MSQADD(acc); \
	FADD4(26, acc, acc); FADD4(25, acc, acc); FADD4(24, acc, acc); FADD4(23, acc, acc)

// maltaLFGo on the block at MR0 … into acc, its sixteen segments in order.
#define MALTALF(acc) \
	MSEG5(MR4, 0, MR4, 2, MR4, 6, MR4, 8); MSQSET(acc); \
	MSEG5(MR0, 4, MR2, 4, MR6, 4, MR8, 4); MSQADD(acc); \
	MSEG5(MR1, 1, MR2, 2, MR6, 6, MR7, 7); MSQADD(acc); \
	MSEG5(MR1, 7, MR2, 6, MR6, 2, MR7, 1); MSQADD(acc); \
	MSEG5(MR0, 5, MR2, 5, MR6, 3, MR8, 3); MSQADD(acc); \
	MSEG5(MR0, 3, MR2, 3, MR6, 5, MR8, 5); MSQADD(acc); \
	MSEG5(MR3, 0, MR3, 2, MR5, 6, MR5, 8); MSQADD(acc); \
	MSEG5(MR5, 0, MR5, 2, MR3, 6, MR3, 8); MSQADD(acc); \
	MSEG5(MR1, 2, MR2, 3, MR6, 5, MR7, 6); MSQADD(acc); \
	MSEG5(MR1, 6, MR2, 5, MR6, 3, MR7, 2); MSQADD(acc); \
	MSEG5(MR2, 1, MR3, 2, MR5, 6, MR6, 7); MSQADD(acc); \
	MSEG5(MR2, 7, MR3, 6, MR5, 2, MR6, 1); MSQADD(acc); \
	MSEG5(MR6, 0, MR5, 2, MR3, 6, MR2, 8); MSQADD(acc); \
	MSEG5(MR2, 0, MR3, 2, MR5, 6, MR6, 8); MSQADD(acc); \
	MSEG5(MR0, 2, MR2, 3, MR6, 5, MR8, 6); MSQADD(acc); \
	MSEG5(MR0, 6, MR2, 5, MR6, 3, MR8, 2); MSQADD(acc)

// func maltaNEON(o, u, h, m *float32, n8, stride int)
//
// BAMalta's kernel for outputs 0 … 8·n8−1, four at a time: o[x] =
// maltaHF(u) + maltaLF(h) + maltaLF(m), the blocks' top-left samples at
// u[x], h[x], m[x], rows stride floats apart.
//
// R0 = &o[x], R1–R3 = &u[x], &h[x], &m[x], R4 = groups of four left,
// R5 = stride in bytes, R7–R15 the rows of the current block.
TEXT ·maltaNEON(SB), NOSPLIT, $0-48
	MOVD o+0(FP), R0
	MOVD u+8(FP), R1
	MOVD h+16(FP), R2
	MOVD m+24(FP), R3
	MOVD n8+32(FP), R4
	MOVD stride+40(FP), R5
	LSL  $2, R5, R5
	LSL  $1, R4, R4
	CBZ  R4, malta_done

malta_loop:
	MROWS(R1)
	MALTAHF(20)
	MROWS(R2)
	MALTALF(21)
	MROWS(R3)
	MALTALF(22)
	FADD4(21, 20, 20)
	FADD4(22, 20, 20)
	FMOVQ F20, (R0)
	ADD  $16, R0, R0
	ADD  $16, R1, R1
	ADD  $16, R2, R2
	ADD  $16, R3, R3
	SUBS $1, R4, R4
	BNE  malta_loop

malta_done:
	RET

// asymL2Go on four lanes: v0 in V1, v1 in V2, prev in V3, the weights
// wgt = V(gm).S[gi] and wlt = V(lm).S[li], the too-small factor k[10] in
// V30.S[2], V31 zero; the result in V1. As in maltaDiffNEON, each branch's
// value is computed and the twin's choice selected (v = +0 when no bound
// applies).
#define ASYML2(gm, gi, lm, li) \
	FSUB4(2, 1, 4); \
	FMUL4(4, 4, 4); \
	FMULE(gm, gi, 4, 4); \
	FADD4(3, 4, 4); \     // total = d·d·wgt + prev
	FABS4(1, 5); \        // tooBig = |v0|
	FMULE(30, 2, 5, 6); \ // tooSmall = k[10]·|v0|
	FNEG4(6, 7); \
	FCMGT4(7, 2, 7); \    // v1 > −tooSmall
	FADD4(6, 2, 8); \     // v1 + tooSmall
	FNEG4(5, 9); \
	FCMGT4(2, 9, 9); \    // v1 < −tooBig
	FNEG4(2, 10); \
	FSUB4(5, 10, 10); \   // −v1 − tooBig
	BSL16(31, 10, 9); \
	BSL16(9, 8, 7); \     // v0 < 0
	FCMGT4(2, 6, 11); \   // v1 < tooSmall
	FSUB4(2, 6, 12); \    // tooSmall − v1
	FCMGT4(5, 2, 13); \   // v1 > tooBig
	FSUB4(5, 2, 14); \    // v1 − tooBig
	BSL16(31, 14, 13); \
	BSL16(13, 12, 11); \  // v0 ≥ 0
	FCMLTZ4(1, 1); \
	BSL16(11, 7, 1); \    // v
	FMUL4(1, 1, 1); \
	FMULE(lm, li, 1, 1); \
	FADD4(4, 1, 1)        // wlt·(v·v) + total

// Vd = (load a − load b)² · V(km).S[ki], each product rounded; a and b
// are row pointers, advanced.
#define DSQK(a, b, km, ki, d) \
	VLD1.P 16(a), [V(d).S4]; \
	VLD1.P 16(b), [V9.S4]; \
	FSUB4(9, d, d); \
	FMUL4(d, d, d); \
	FMULE(km, ki, d, d)

// func diffmapRowNEON(rows *[baRows]*float32, n8 int, k *BADiffmapConsts)
//
// BADiffmapRow's kernel (diffmapGo) for samples 0 … 8·n8−1, four at a
// time. Row i of the table is walked by R(i) for i < 18 and R(i+1) after
// that (R18 is reserved), post-incremented by the loads; the constants
// k[0 … 11] are V28–V30, V31 is zero.
TEXT ·diffmapRowNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R26
	MOVD n8+8(FP), R25
	MOVD k+16(FP), R24
	LDP  0(R26), (R0, R1)
	LDP  16(R26), (R2, R3)
	LDP  32(R26), (R4, R5)
	LDP  48(R26), (R6, R7)
	LDP  64(R26), (R8, R9)
	LDP  80(R26), (R10, R11)
	LDP  96(R26), (R12, R13)
	LDP  112(R26), (R14, R15)
	LDP  128(R26), (R16, R17)
	LDP  144(R26), (R19, R20)
	LDP  160(R26), (R21, R22)
	MOVD 176(R26), R23
	FLDPQ (R24), (F28, F29)
	FMOVQ 32(R24), F30
	VEOR V31.B16, V31.B16, V31.B16
	LSL  $1, R25, R25
	CBZ  R25, dm_done

dm_loop:
	// ac0: X's asymmetric HF term plus the MF term.
	VLD1.P 16(R2), [V1.S4]
	VLD1.P 16(R3), [V2.S4]
	VLD1.P 16(R0), [V3.S4]
	ASYML2(28, 0, 28, 1)
	VMOVR(1, 15)
	DSQK(R6, R7, 29, 0, 16)
	FADD4(15, 16, 15)
	// ac1: Y's, plus the MF term, plus k[11]·d·d of the activities.
	VLD1.P 16(R4), [V1.S4]
	VLD1.P 16(R5), [V2.S4]
	VLD1.P 16(R1), [V3.S4]
	ASYML2(28, 2, 28, 3)
	DSQK(R8, R9, 29, 1, 16)
	FADD4(1, 16, 16)
	VLD1.P 16(R19), [V17.S4]
	VLD1.P 16(R20), [V9.S4]
	FSUB4(9, 17, 17)
	FMULE(30, 3, 17, 10)
	FMUL4(17, 10, 10)
	FADD4(10, 16, 16)
	// ac2, dc0, dc1, dc2.
	DSQK(R10, R11, 29, 2, 17)
	DSQK(R12, R13, 29, 3, 18)
	DSQK(R14, R15, 30, 0, 19)
	DSQK(R16, R17, 30, 1, 20)
	// (dc0·md + dc1·md + dc2·md) + (ac0·m + ac1·m + ac2·m), then sqrt.
	VLD1.P 16(R21), [V21.S4]
	VLD1.P 16(R22), [V22.S4]
	FMUL4(22, 18, 18)
	FMUL4(22, 19, 19)
	FMUL4(22, 20, 20)
	FADD4(19, 18, 18)
	FADD4(20, 18, 18)
	FMUL4(21, 15, 15)
	FMUL4(21, 16, 16)
	FMUL4(21, 17, 17)
	FADD4(16, 15, 15)
	FADD4(17, 15, 15)
	FADD4(15, 18, 18)
	FSQRT4(18, 18)
	VST1.P [V18.S4], 16(R23)
	SUBS $1, R25, R25
	BNE  dm_loop

dm_done:
	RET

// func sep5NEON(src, dst *float32, n8, step int, w *[3]float32)
//
// BASep5's kernel (sep5Go) for outputs 0 … 8·n8−1, eight at a time:
// float32(c·w0) + float32((c₋₁+c₊₁)·w1) + float32((c₋₂+c₊₂)·w2), src at
// the first centre, taps step floats apart. R6–R10 walk the five taps.
TEXT ·sep5NEON(SB), NOSPLIT, $0-40
	MOVD src+0(FP), R0
	MOVD dst+8(FP), R1
	MOVD n8+16(FP), R2
	MOVD step+24(FP), R3
	MOVD w+32(FP), R4
	FMOVS (R4), F20
	FMOVS 4(R4), F21
	FMOVS 8(R4), F22
	LSL  $2, R3, R3
	MOVD R0, R8
	SUB  R3, R8, R7
	SUB  R3, R7, R6
	ADD  R3, R8, R9
	ADD  R3, R9, R10
	CBZ  R2, sep5_done

sep5_loop:
	FLDPQ (R8), (F0, F1)
	FMULE(20, 0, 0, 0)
	FMULE(20, 0, 1, 1)
	FLDPQ (R7), (F2, F3)
	FLDPQ (R9), (F4, F5)
	FADD4(4, 2, 2)
	FADD4(5, 3, 3)
	FMULE(21, 0, 2, 2)
	FMULE(21, 0, 3, 3)
	FLDPQ (R6), (F4, F5)
	FLDPQ (R10), (F6, F7)
	FADD4(6, 4, 4)
	FADD4(7, 5, 5)
	FMULE(22, 0, 4, 4)
	FMULE(22, 0, 5, 5)
	FADD4(2, 0, 0)
	FADD4(3, 1, 1)
	FADD4(4, 0, 0)
	FADD4(5, 1, 1)
	FSTPQ (F0, F1), (R1)
	ADD  $32, R1, R1
	ADD  $32, R6, R6
	ADD  $32, R7, R7
	ADD  $32, R8, R8
	ADD  $32, R9, R9
	ADD  $32, R10, R10
	SUBS $1, R2, R2
	BNE  sep5_loop

sep5_done:
	RET

// The band kernels: rows (a table of row pointers) at R0, n8 at R1, k at
// R2. KDUP broadcasts the float32 at offset off of k into V(v).
#define KDUP(off, v) ADD $(off), R2, R9; VLD1R (R9), [V(v).S4]

// removeRange(w, x) of butteraugli_band.go: x in V(x), w in V(w), −w in
// V(nw), V31 zero; the result in V(x). Scratch V10–V13.
#define REMOVERANGE(x, w, nw) \
	FCMGT4(w, x, 10); \
	FSUB4(w, x, 11); \
	FCMGT4(x, nw, 12); \
	FADD4(w, x, 13); \
	BSL16(31, 13, 12); \
	BSL16(12, 11, 10); \
	VMOVR(10, x)

// amplifyRange(w, x): as REMOVERANGE, x + x inside [−w, w].
#define AMPLIFYRANGE(x, w, nw) \
	FCMGT4(w, x, 10); \
	FADD4(w, x, 11); \
	FCMGT4(x, nw, 12); \
	FSUB4(w, x, 13); \
	FADD4(x, x, 14); \
	BSL16(14, 13, 12); \
	BSL16(12, 11, 10); \
	VMOVR(10, x)

// maximumClamp(m, mul, v): v in V(v), m, −m and mul in V(m), V(nm),
// V(mul); the result in V(v). Scratch V10–V14.
#define MAXCLAMP(v, m, nm, mul) \
	FCMGE4(m, v, 10); \
	FSUB4(m, v, 11); \
	FMUL4(mul, 11, 11); \
	FADD4(m, 11, 11); \
	FCMGT4(v, nm, 12); \
	FADD4(m, v, 13); \
	FMUL4(mul, 13, 13); \
	FSUB4(m, 13, 13); \
	BSL16(v, 13, 12); \
	BSL16(12, 11, 10); \
	VMOVR(10, v)

// func lfSplitNEON(rows *[6]*float32, n8 int, k *[4]float32)
//
// BALFSplit's kernel (lfSplitGo), four samples at a time.
TEXT ·lfSplitNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	LDP  16(R0), (R5, R6)
	LDP  32(R0), (R7, R8)
	KDUP(0, 20)
	KDUP(4, 21)
	KDUP(8, 22)
	KDUP(12, 23)
	LSL  $1, R1, R1
	CBZ  R1, lf_done

lf_loop:
	FMOVQ (R3), F0
	FMOVQ (R4), F1
	FMOVQ (R5), F2
	FMOVQ (R6), F3
	FMOVQ (R7), F4
	FMOVQ (R8), F5
	FSUB4(3, 0, 0)
	FSUB4(4, 1, 1)
	FSUB4(5, 2, 2)
	FMUL4(20, 4, 6)
	FADD4(5, 6, 6)
	FMUL4(21, 6, 6)
	FMUL4(22, 3, 3)
	FMUL4(23, 4, 4)
	VST1.P [V0.S4], 16(R3)
	VST1.P [V1.S4], 16(R4)
	VST1.P [V2.S4], 16(R5)
	VST1.P [V3.S4], 16(R6)
	VST1.P [V4.S4], 16(R7)
	VST1.P [V6.S4], 16(R8)
	SUBS $1, R1, R1
	BNE  lf_loop

lf_done:
	RET

// The MF split's setup: hf, mf at R3, R4, w in V20, −w in V21, V31 zero,
// R1 groups of four.
#define MFSETUP \
	MOVD rows+0(FP), R0; \
	MOVD n8+8(FP), R1; \
	MOVD k+16(FP), R2; \
	LDP  0(R0), (R3, R4); \
	KDUP(0, 20); \
	FNEG4(20, 21); \
	VEOR V31.B16, V31.B16, V31.B16; \
	LSL  $1, R1, R1

// func mfSplitRemoveNEON(rows *[2]*float32, n8 int, k *[1]float32)
//
// BAMFSplit's kernel (mfSplitGo) with removeRange, four samples at a time.
TEXT ·mfSplitRemoveNEON(SB), NOSPLIT, $0-24
	MFSETUP
	CBZ  R1, mfr_done

mfr_loop:
	FMOVQ (R3), F0
	FMOVQ (R4), F1
	FSUB4(1, 0, 0)
	REMOVERANGE(1, 20, 21)
	VST1.P [V0.S4], 16(R3)
	VST1.P [V1.S4], 16(R4)
	SUBS $1, R1, R1
	BNE  mfr_loop

mfr_done:
	RET

// func mfSplitAmplifyNEON(rows *[2]*float32, n8 int, k *[1]float32)
//
// BAMFSplit's kernel with amplifyRange.
TEXT ·mfSplitAmplifyNEON(SB), NOSPLIT, $0-24
	MFSETUP
	CBZ  R1, mfa_done

mfa_loop:
	FMOVQ (R3), F0
	FMOVQ (R4), F1
	FSUB4(1, 0, 0)
	AMPLIFYRANGE(1, 20, 21)
	VST1.P [V0.S4], 16(R3)
	VST1.P [V1.S4], 16(R4)
	SUBS $1, R1, R1
	BNE  mfa_loop

mfa_done:
	RET

// func suppressNEON(rows *[2]*float32, n8 int, k *[3]float32)
//
// BASuppress's kernel (suppressGo): hx ·= k0/(hy² + k0)·k1 + k2, each
// step rounded.
TEXT ·suppressNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	KDUP(0, 20)
	KDUP(4, 21)
	KDUP(8, 22)
	LSL  $1, R1, R1
	CBZ  R1, sup_done

sup_loop:
	FMOVQ (R3), F0
	VLD1.P 16(R4), [V1.S4]
	FMUL4(1, 1, 2)
	FADD4(20, 2, 2)
	FDIV4(2, 20, 2)
	FMUL4(21, 2, 2)
	FADD4(22, 2, 2)
	FMUL4(0, 2, 0)
	VST1.P [V0.S4], 16(R3)
	SUBS $1, R1, R1
	BNE  sup_loop

sup_done:
	RET

// func uhfSplitXNEON(rows *[2]*float32, n8 int, k *[2]float32)
//
// BAUHFSplitX's kernel (uhfSplitXGo): uhf at R3, hf at R4.
TEXT ·uhfSplitXNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	KDUP(0, 20)
	FNEG4(20, 21)
	KDUP(4, 22)
	FNEG4(22, 23)
	VEOR V31.B16, V31.B16, V31.B16
	LSL  $1, R1, R1
	CBZ  R1, ux_done

ux_loop:
	FMOVQ (R3), F0
	FMOVQ (R4), F1
	FSUB4(1, 0, 0)
	REMOVERANGE(1, 20, 21)
	REMOVERANGE(0, 22, 23)
	VST1.P [V0.S4], 16(R3)
	VST1.P [V1.S4], 16(R4)
	SUBS $1, R1, R1
	BNE  ux_loop

ux_done:
	RET

// func uhfSplitYNEON(rows *[2]*float32, n8 int, k *[6]float32)
//
// BAUHFSplitY's kernel (uhfSplitYGo): uhf at R3, hf at R4; V20/V21 = ±k0,
// V22/V23 = ±k1, V24 = k2, V25 = k3, V26 = k4, V27/V28 = ±k5.
TEXT ·uhfSplitYNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	KDUP(0, 20)
	FNEG4(20, 21)
	KDUP(4, 22)
	FNEG4(22, 23)
	KDUP(8, 24)
	KDUP(12, 25)
	KDUP(16, 26)
	KDUP(20, 27)
	FNEG4(27, 28)
	LSL  $1, R1, R1
	CBZ  R1, uy_done

uy_loop:
	FMOVQ (R3), F0
	FMOVQ (R4), F1
	MAXCLAMP(1, 20, 21, 24) // hv
	FSUB4(1, 0, 0)
	MAXCLAMP(0, 22, 23, 24) // uv
	FMUL4(25, 0, 0)
	FMUL4(26, 1, 1)
	AMPLIFYRANGE(1, 27, 28)
	VST1.P [V0.S4], 16(R3)
	VST1.P [V1.S4], 16(R4)
	SUBS $1, R1, R1
	BNE  uy_loop

uy_done:
	RET

// func maskPreNEON(rows *[5]*float32, n8 int, k *[6]float32)
//
// BAMaskPre's kernel (maskPreGo): hx, hy, ux, uy, out at R3–R7.
TEXT ·maskPreNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	LDP  16(R0), (R5, R6)
	MOVD 32(R0), R7
	KDUP(0, 20)
	KDUP(4, 21)
	KDUP(8, 22)
	KDUP(12, 23)
	KDUP(16, 24)
	KDUP(20, 25)
	LSL  $1, R1, R1
	CBZ  R1, mp_done

mp_loop:
	VLD1.P 16(R3), [V0.S4]
	VLD1.P 16(R4), [V1.S4]
	VLD1.P 16(R5), [V2.S4]
	VLD1.P 16(R6), [V3.S4]
	FADD4(0, 2, 2)
	FMUL4(20, 2, 2)  // xd = (ux + hx)·k0
	FMUL4(21, 3, 3)
	FMUL4(22, 1, 1)
	FADD4(1, 3, 3)   // yd = uy·k1 + hy·k2
	FMUL4(2, 2, 2)
	FMUL4(3, 3, 3)
	FADD4(3, 2, 2)
	FSQRT4(2, 2)     // m
	FABS4(2, 2)
	FMUL4(23, 2, 2)
	FADD4(24, 2, 2)
	FSQRT4(2, 2)
	FSUB4(25, 2, 2)
	VST1.P [V2.S4], 16(R7)
	SUBS $1, R1, R1
	BNE  mp_loop

mp_done:
	RET

// erosionGo's weights 0.45, 0.3, 0.25 (float32 bits).
DATA baErosionW<>+0(SB)/4, $0x3ee66666
DATA baErosionW<>+4(SB)/4, $0x3e99999a
DATA baErosionW<>+8(SB)/4, $0x3e800000
DATA baErosionW<>+12(SB)/4, $0
GLOBL baErosionW<>(SB), RODATA|NOPTR, $16

// baStoreMin3 of the neighbour in V3 on m0, m1, m2 in V0–V2, lane by lane,
// as the twin's branches: a = v < m2 && v < m0, b = v < m2 && !a && v < m1,
// c = v < m2 && neither. V31 is zero; scratch V4–V9.
#define STOREMIN3 \
	FCMGT4(3, 2, 4); \ // v < m2
	FCMGT4(3, 0, 5); \ // v < m0
	FCMGT4(3, 1, 6); \ // v < m1
	VAND16(5, 4, 7); \ // a
	BSL16(4, 31, 5); \ // v < m2 && !(v < m0)
	VAND16(6, 5, 8); \ // b
	BSL16(5, 31, 6); \ // c
	VORR16(8, 7, 9); \ // a or b
	BSL16(2, 3, 6); \
	BSL16(6, 1, 9); \  // m2' = a|b ? m1 : c ? v : m2
	BSL16(1, 3, 8); \
	VMOVR(7, 4); \
	BSL16(8, 0, 4); \  // m1' = a ? m0 : b ? v : m1
	BSL16(0, 3, 7); \  // m0' = a ? v : m0
	VMOVR(7, 0); \
	VMOVR(4, 1); \
	VMOVR(9, 2)

// func erosionNEON(row, up, down, o *float32, n8 int)
//
// BAErosion's kernel (erosionGo) for outputs 0 … 8·n8−1, four at a time:
// row, up and down start three columns left of the first output, so the
// neighbours are at byte offsets 0 and 24, the centre column at 12.
TEXT ·erosionNEON(SB), NOSPLIT, $0-40
	MOVD row+0(FP), R0
	MOVD up+8(FP), R1
	MOVD down+16(FP), R2
	MOVD o+24(FP), R3
	MOVD n8+32(FP), R4
	MOVD $baErosionW<>(SB), R5
	FMOVQ (R5), F30
	VEOR V31.B16, V31.B16, V31.B16
	LSL  $1, R4, R4
	CBZ  R4, ero_done

ero_loop:
	FMOVQ 12(R0), F0
	FADD4(0, 0, 1)
	VMOVR(1, 2)
	FMOVQ (R0), F3
	STOREMIN3
	FMOVQ (R1), F3
	STOREMIN3
	FMOVQ (R2), F3
	STOREMIN3
	FMOVQ 24(R0), F3
	STOREMIN3
	FMOVQ 24(R1), F3
	STOREMIN3
	FMOVQ 24(R2), F3
	STOREMIN3
	FMOVQ 12(R1), F3
	STOREMIN3
	FMOVQ 12(R2), F3
	STOREMIN3
	FMULE(30, 0, 0, 0)
	FMULE(30, 1, 1, 1)
	FMULE(30, 2, 2, 2)
	FADD4(1, 0, 0)
	FADD4(2, 0, 0)
	VST1.P [V0.S4], 16(R3)
	ADD  $16, R0, R0
	ADD  $16, R1, R1
	ADD  $16, R2, R2
	SUBS $1, R4, R4
	BNE  ero_loop

ero_done:
	RET

// log2ApproxGo of V7 into V10 (scratch V8, V9, V11): the exponent e and
// mantissa m by integer steps (V30 the magic 0x3f2aaaab), then the (2,2)
// rational polynomial, each product rounded: k19, k22 by element of V28,
// V29, the added constants k17, k18, k20, k21 and 1 broadcast in V19–V23.
#define OPLOG2 \
	ISUB4(30, 7, 8); \
	SSHR23(8, 8); \       // e
	SHL23(8, 9); \
	ISUB4(9, 7, 9); \
	FSUB4(23, 9, 9); \    // m
	FMULE(28, 3, 9, 10); \
	FADD4(20, 10, 10); \
	FMUL4(9, 10, 10); \
	FADD4(19, 10, 10); \  // num
	FMULE(29, 2, 9, 11); \
	FADD4(22, 11, 11); \
	FMUL4(9, 11, 11); \
	FADD4(21, 11, 11); \  // den
	FDIV4(11, 10, 10); \
	SCVTF4(8, 8); \
	FADD4(8, 10, 10)

// One channel of opsinGo: its mix row mc0 … mc2 = V(ar).S[ai], V(br).S[bi],
// V(cr).S[ci], mc3 broadcast in V(d); r1, g1, b1 in V0–V2, r0, g0, b0 in
// V3–V5; minV in V16, gammaAdd in V17, retAdd in V18, gammaMul V27.S[3].
// The channel's output into V(out); scratch V6–V11.
#define OPCHAN(ar, ai, br, bi, cr, ci, d, out) \
	FMULE(cr, ci, 5, 6); \
	FADD4(d, 6, 6); \
	FMULE(br, bi, 4, 7); \
	FADD4(6, 7, 6); \
	FMULE(ar, ai, 3, 7); \
	FADD4(6, 7, 6); \
	FMAX4(d, 6, 6); \
	FMAX4(16, 6, 6); \    // p
	FCMLTZ4(6, 7); \
	BSL16(6, 31, 7); \
	FADD4(17, 7, 7); \
	OPLOG2; \
	FMULE(27, 3, 10, 10); \
	FADD4(18, 10, 10); \  // gamma(p)
	FDIV4(6, 10, 10); \
	FMAX4(16, 10, 10); \  // s
	FMULE(cr, ci, 2, 7); \
	FADD4(d, 7, 7); \
	FMULE(br, bi, 1, 8); \
	FADD4(7, 8, 7); \
	FMULE(ar, ai, 0, 8); \
	FADD4(7, 8, 7); \
	FMUL4(10, 7, 7); \
	FMAX4(d, 7, out)

// func opsinRowNEON(rows *[9]*float32, n8 int, k *BAOpsinConsts)
//
// BAOpsinRow's kernel (opsinGo) for samples 0 … 8·n8−1, four at a time.
// k[0 … 23] in V24–V29 (k[i] = V(24+i/4).S[i%4]), the magic k[24] in
// V30; rows r, g, b, br, bg, bb, ox, oy, ob walked by R3–R11.
TEXT ·opsinRowNEON(SB), NOSPLIT, $0-24
	MOVD rows+0(FP), R0
	MOVD n8+8(FP), R1
	MOVD k+16(FP), R2
	LDP  0(R0), (R3, R4)
	LDP  16(R0), (R5, R6)
	LDP  32(R0), (R7, R8)
	LDP  48(R0), (R9, R10)
	MOVD 64(R0), R11
	FLDPQ (R2), (F24, F25)
	FLDPQ 32(R2), (F26, F27)
	FLDPQ 64(R2), (F28, F29)
	ADD  $96, R2, R12
	VLD1R (R12), [V30.S4]
	VDUP V25.S[1], V13.S4 // k5, k9, k13: the mix rows' constants
	VDUP V26.S[1], V14.S4
	VDUP V27.S[1], V15.S4
	VDUP V24.S[1], V16.S4 // minV
	VDUP V27.S[2], V17.S4 // gammaAdd
	VDUP V28.S[0], V18.S4 // retAdd
	VDUP V28.S[1], V19.S4 // k17
	VDUP V28.S[2], V20.S4 // k18
	VDUP V29.S[0], V21.S4 // k20
	VDUP V29.S[1], V22.S4 // k21
	VDUP V29.S[3], V23.S4 // 1
	VEOR V31.B16, V31.B16, V31.B16
	LSL  $1, R1, R1
	CBZ  R1, op_done

op_loop:
	VLD1.P 16(R3), [V0.S4]
	VLD1.P 16(R4), [V1.S4]
	VLD1.P 16(R5), [V2.S4]
	VLD1.P 16(R6), [V3.S4]
	VLD1.P 16(R7), [V4.S4]
	VLD1.P 16(R8), [V5.S4]
	FMULE(24, 0, 0, 0)
	FMULE(24, 0, 1, 1)
	FMULE(24, 0, 2, 2)
	FMULE(24, 0, 3, 3)
	FMULE(24, 0, 4, 4)
	FMULE(24, 0, 5, 5)
	OPCHAN(24, 2, 24, 3, 25, 0, 13, 12)
	OPCHAN(25, 2, 25, 3, 26, 0, 14, 7)
	FSUB4(7, 12, 8)
	FADD4(7, 12, 12)
	VST1.P [V8.S4], 16(R9)
	VST1.P [V12.S4], 16(R10)
	OPCHAN(26, 2, 26, 3, 27, 0, 15, 7)
	VST1.P [V7.S4], 16(R11)
	SUBS $1, R1, R1
	BNE  op_loop

op_done:
	RET

// func colSumNEON(dst *float32, rows **float32, k *float32, nrows, n8 int, scale float32)
//
// BAColumnSum's kernel (colSumGo) for outputs 0 … 8·n8−1: per block the
// sum V0/V1 starts at +0 and gets float32(rows[j][x]·k[j]) added in j
// order (an FMUL, then an FADD), then is multiplied by scale. R8 is the
// byte offset of the block in every row; per block R10 walks the row
// pointers, R11 the weights, R12 counts the rows.
TEXT ·colSumNEON(SB), NOSPLIT, $0-44
	MOVD  dst+0(FP), R0
	MOVD  rows+8(FP), R1
	MOVD  k+16(FP), R2
	MOVD  nrows+24(FP), R3
	MOVD  n8+32(FP), R4
	FMOVS scale+40(FP), F21
	MOVD  $0, R8
	CBZ   R4, colsum_done
	CBZ   R3, colsum_done

colsum_block:
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	MOVD R1, R10
	MOVD R2, R11
	MOVD R3, R12

colsum_row:
	MOVD.P  8(R10), R9
	FMOVS.P 4(R11), F20
	ADD     R8, R9, R9
	FLDPQ   (R9), (F16, F17)
	FMULE(20, 0, 16, 16)
	FMULE(20, 0, 17, 17)
	FADD4(16, 0, 0)
	FADD4(17, 1, 1)
	SUBS    $1, R12, R12
	BNE     colsum_row

	FMULE(21, 0, 0, 0)
	FMULE(21, 0, 1, 1)
	FSTPQ (F0, F1), (R0)
	ADD   $32, R0, R0
	ADD   $32, R8, R8
	SUBS  $1, R4, R4
	BNE   colsum_block

colsum_done:
	RET

// func rowBorderNEON(out *[8]float32, src *float32, w *[8]float32, n int, s *[8]float32)
//
// BARowBorder's kernel (rowBorderGo): the eight lanes V0/V1 start at +0
// and get float32(src[j]·w[j][l]) added for j = 0 … n−1 (an FMUL, then an
// FADD), then are multiplied lane by lane by s. R1 walks the samples, R2
// the weight rows (32 bytes each).
TEXT ·rowBorderNEON(SB), NOSPLIT, $0-40
	MOVD out+0(FP), R0
	MOVD src+8(FP), R1
	MOVD w+16(FP), R2
	MOVD n+24(FP), R3
	MOVD s+32(FP), R4
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	CBZ  R3, rowborder_scale

rowborder_loop:
	FMOVS.P 4(R1), F20
	FLDPQ   (R2), (F16, F17)
	FMULE(20, 0, 16, 16)
	FMULE(20, 0, 17, 17)
	FADD4(16, 0, 0)
	FADD4(17, 1, 1)
	ADD     $32, R2, R2
	SUBS    $1, R3, R3
	BNE     rowborder_loop

rowborder_scale:
	FLDPQ (R4), (F16, F17)
	FMUL4(16, 0, 0)
	FMUL4(17, 1, 1)
	FSTPQ (F0, F1), (R0)
	RET
