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
