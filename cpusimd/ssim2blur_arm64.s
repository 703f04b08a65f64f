//go:build arm64 && !noasm

// NEON kernels of SSIMULACRA2's recursive Gaussian (see ssim2blur.go).
// Hand-written: avo, which generates the amd64 twins of these, has no
// arm64 backend. Each routine does, lane by lane, exactly the float32
// operations of its Go twin in the same order: one FMLA (one rounding)
// per fma32, one FMUL per rounded product, the three filters' outputs
// summed as v0 + (v1 + v2). Go's assembler writes operands sources first,
// destination last; the FP macros (neon_arm64.h) follow that order.

#include "textflag.h"
#include "neon_arm64.h"

// The vertical pass, one filter of one 4-column vector: with cur = y[n−1]
// and old = y[n−2], old becomes y[n] = n2·sum − (d1·cur + old), as
// colsGo's fma32(N2, s, −fma32(D1, y1, y2)): FMLA, exact negation, FMLA.
// V30 holds d1[0..2] and V31 n2[0..2] (colConsts).
#define VFILT(cur, old, k, sum) FMLAE(30, k, cur, old); FNEG4(old, old); FMLAE(31, k, sum, old)

// All three filters of one vector, states c0/o0, c1/o1, c2/o2.
#define VROW(c0, o0, c1, o1, c2, o2, sum) VFILT(c0, o0, 0, sum); VFILT(c1, o1, 1, sum); VFILT(c2, o2, 2, sum)

// t = o0 + (o1 + o2): the output of one vector.
#define VOUT(o0, o1, o2, t) FADD4(o2, o1, t); FADD4(t, o0, t)

// func colsNEON(in, out []float32, w, h, x0, radius int, k *[8]float32)
//
// The vertical pass over the 16 columns x0 … x0+15 of the w×h plane in
// into out, each column the plain recurrence over rows n = 1−radius … h−1
// (rows below 0 only warm the filters up), its input the sum of rows
// n−radius−1 and n+radius−1 where they exist. The 24 filter states (four
// vectors × three filters × y[n−1], y[n−2]) stay in V0–V23: filter k of
// vector s in V(6s+2k) and V(6s+2k+1), whose roles swap every row, so the
// loop body is two rows, "a" (even registers hold y[n−1]) and "b".
//
// R0 = n, R1 = &in[top row][x0], R2 = &in[bottom row][x0],
// R3 = &out[n][x0], R4 = row stride in bytes, R5 = h, R6 = radius+1 (the
// top row exists while n ≥ R6), R7 = h−radius+1 (the bottom row exists
// while n < R7); V24–V27 the four input sums, V28/V29 scratch.
TEXT ·colsNEON(SB), NOSPLIT, $0-88
	MOVD in_base+0(FP), R1
	MOVD out_base+24(FP), R3
	MOVD w+48(FP), R4
	MOVD h+56(FP), R5
	MOVD x0+64(FP), R8
	MOVD radius+72(FP), R9
	MOVD k+80(FP), R10
	FLDPQ (R10), (F30, F31)

	MOVD $1, R0
	SUB  R9, R0, R0  // n = 1 − radius
	ADD  $1, R9, R6
	SUB  R9, R5, R7
	ADD  $1, R7, R7

	// R11 = byte offset of (n, x0); out and the row-n base of in.
	MUL  R0, R4, R11
	ADD  R8, R11, R11
	LSL  $2, R11, R11
	ADD  R11, R3, R3
	ADD  R11, R1, R2
	LSL  $2, R4, R4
	MUL  R6, R4, R12
	SUB  R12, R2, R1 // top = row n − radius − 1
	SUB  $1, R9, R12
	MUL  R12, R4, R12
	ADD  R12, R2, R2 // bottom = row n + radius − 1

	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16

cols_a:
	CMP  R5, R0
	BGE  cols_done
	CMP  R6, R0
	BLT  a_notop
	VLD1 (R1), [V24.S4, V25.S4, V26.S4, V27.S4]
	CMP  R7, R0
	BGE  a_sum
	FLDPQ (R2), (F28, F29)
	FADD4(28, 24, 24)
	FADD4(29, 25, 25)
	FLDPQ 32(R2), (F28, F29)
	FADD4(28, 26, 26)
	FADD4(29, 27, 27)
	B    a_sum

a_notop:
	CMP  R7, R0
	BGE  a_zero
	VLD1 (R2), [V24.S4, V25.S4, V26.S4, V27.S4]
	B    a_sum

a_zero:
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16

a_sum:
	// Row "a": y[n−1] in the even registers, y[n] into the odd ones.
	VROW(0, 1, 2, 3, 4, 5, 24)
	VROW(6, 7, 8, 9, 10, 11, 25)
	VROW(12, 13, 14, 15, 16, 17, 26)
	VROW(18, 19, 20, 21, 22, 23, 27)
	TBNZ $63, R0, a_next // n < 0: warm-up row, no output
	VOUT(1, 3, 5, 28)
	VOUT(7, 9, 11, 29)
	FSTPQ (F28, F29), (R3)
	VOUT(13, 15, 17, 28)
	VOUT(19, 21, 23, 29)
	FSTPQ (F28, F29), 32(R3)

a_next:
	ADD  R4, R1, R1
	ADD  R4, R2, R2
	ADD  R4, R3, R3
	ADD  $1, R0, R0

	CMP  R5, R0
	BGE  cols_done
	CMP  R6, R0
	BLT  b_notop
	VLD1 (R1), [V24.S4, V25.S4, V26.S4, V27.S4]
	CMP  R7, R0
	BGE  b_sum
	FLDPQ (R2), (F28, F29)
	FADD4(28, 24, 24)
	FADD4(29, 25, 25)
	FLDPQ 32(R2), (F28, F29)
	FADD4(28, 26, 26)
	FADD4(29, 27, 27)
	B    b_sum

b_notop:
	CMP  R7, R0
	BGE  b_zero
	VLD1 (R2), [V24.S4, V25.S4, V26.S4, V27.S4]
	B    b_sum

b_zero:
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16

b_sum:
	// Row "b": y[n−1] in the odd registers, y[n] into the even ones.
	VROW(1, 0, 3, 2, 5, 4, 24)
	VROW(7, 6, 9, 8, 11, 10, 25)
	VROW(13, 12, 15, 14, 17, 16, 26)
	VROW(19, 18, 21, 20, 23, 22, 27)
	TBNZ $63, R0, b_next
	VOUT(0, 2, 4, 28)
	VOUT(6, 8, 10, 29)
	FSTPQ (F28, F29), (R3)
	VOUT(12, 14, 16, 28)
	VOUT(18, 20, 22, 29)
	FSTPQ (F28, F29), 32(R3)

b_next:
	ADD  R4, R1, R1
	ADD  R4, R2, R2
	ADD  R4, R3, R3
	ADD  $1, R0, R0
	B    cols_a

cols_done:
	RET

// func vrowNEON(top, bot, out, st []float32, n, mode, set int, k *[8]float32)
//
// One output row of the vertical pass over n columns (a multiple of 8),
// as vrowGo: the input sum per mode (bit 0: top exists, bit 1: bottom),
// the filter states of columns 8g … 8g+7 in the 48 floats at st[48g:],
// filter k of set s at st[48g+8(3s+k):], y[n−1] in set "set" (cur), y[n−2]
// in the other (old), which receives y[n].
//
// R0 = top, R1 = bottom, R2 = out, R3 = cur states, R4 = old states,
// R5 = bytes left, R6 = mode; V24/V25 the sum of eight columns, V0–V5 cur
// and V6–V11 old (filter k in V(2k), V(2k+1) and V(6+2k), V(7+2k)).
TEXT ·vrowNEON(SB), NOSPLIT, $0-128
	MOVD top_base+0(FP), R0
	MOVD bot_base+24(FP), R1
	MOVD out_base+48(FP), R2
	MOVD st_base+72(FP), R4
	MOVD n+96(FP), R5
	MOVD mode+104(FP), R6
	MOVD set+112(FP), R7
	MOVD k+120(FP), R10
	FLDPQ (R10), (F30, F31)

	// cur = st + 96·set bytes, old = st + 96·(1−set).
	MOVD $96, R8
	MUL  R7, R8, R9
	ADD  R9, R4, R3
	SUB  R9, R8, R9
	ADD  R9, R4, R4
	LSL  $2, R5, R5
	CBZ  R5, vrow_done

vrow_loop:
	CMP  $1, R6
	BLT  vrow_zero
	BEQ  vrow_top
	CMP  $2, R6
	BEQ  vrow_bot
	FLDPQ (R0), (F24, F25)
	FLDPQ (R1), (F26, F27)
	FADD4(26, 24, 24)
	FADD4(27, 25, 25)
	B    vrow_sum

vrow_top:
	FLDPQ (R0), (F24, F25)
	B     vrow_sum

vrow_bot:
	FLDPQ (R1), (F24, F25)
	B     vrow_sum

vrow_zero:
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16

vrow_sum:
	FLDPQ (R3), (F0, F1)
	FLDPQ 32(R3), (F2, F3)
	FLDPQ 64(R3), (F4, F5)
	FLDPQ (R4), (F6, F7)
	FLDPQ 32(R4), (F8, F9)
	FLDPQ 64(R4), (F10, F11)
	VFILT(0, 6, 0, 24)
	VFILT(1, 7, 0, 25)
	VFILT(2, 8, 1, 24)
	VFILT(3, 9, 1, 25)
	VFILT(4, 10, 2, 24)
	VFILT(5, 11, 2, 25)
	FSTPQ (F6, F7), (R4)
	FSTPQ (F8, F9), 32(R4)
	FSTPQ (F10, F11), 64(R4)
	VOUT(6, 8, 10, 28)
	VOUT(7, 9, 11, 29)
	FSTPQ (F28, F29), (R2)

	ADD  $32, R0, R0
	ADD  $32, R1, R1
	ADD  $32, R2, R2
	ADD  $192, R3, R3
	ADD  $192, R4, R4
	SUBS $32, R5, R5
	BNE  vrow_loop

vrow_done:
	RET

// The horizontal pass, one border step for one filter f: x = s·mulIn[f][0]
// (rounded), then x += mulPrev2[f][0]·p2, x += mulPrev[f][0]·p1 (FMLA
// each), p2 = p1, p1 = x. The constants of filter f are V(16+3f) (mulIn),
// V(17+3f) (mulPrev2), V(18+3f) (mulPrev); its states p1 in V(f), p2 in
// V(3+f); s in V6, x into V(10+f).
#define HSTEP(f) FMULE(16+3*(f), 0, 6, 10+(f)); FMLAE(17+3*(f), 0, 3+(f), 10+(f)); FMLAE(18+3*(f), 0, (f), 10+(f)); VMOVR((f), 3+(f)); VMOVR(10+(f), (f))

// The interior, one filter f over four outputs: libjxl's powers of the
// recurrence, as hblurGo computes them. f0…f3 (V6–V9) are the four input
// sums, a0…a3 (V10–V13) the outputs; then p2 = a2, p1 = a3.
#define HQUAD(f) \
	FMULE(16+3*(f), 0, 6, 10); \
	FMULE(16+3*(f), 1, 6, 11); \
	FMULE(16+3*(f), 2, 6, 12); \
	FMULE(16+3*(f), 3, 6, 13); \
	FMLAE(16+3*(f), 0, 7, 11); \
	FMLAE(16+3*(f), 1, 7, 12); \
	FMLAE(16+3*(f), 2, 7, 13); \
	FMLAE(16+3*(f), 0, 8, 12); \
	FMLAE(16+3*(f), 1, 8, 13); \
	FMLAE(16+3*(f), 0, 9, 13); \
	FMLAE(17+3*(f), 0, 3+(f), 10); \
	FMLAE(18+3*(f), 0, (f), 10); \
	FMLAE(17+3*(f), 1, 3+(f), 11); \
	FMLAE(18+3*(f), 1, (f), 11); \
	FMLAE(17+3*(f), 2, 3+(f), 12); \
	FMLAE(18+3*(f), 2, (f), 12); \
	FMLAE(17+3*(f), 3, 3+(f), 13); \
	FMLAE(18+3*(f), 3, (f), 13)

// func hblurNEON(t, o []float32, n0, e1, e2, xs, radius int, k *[36]float32)
//
// The horizontal pass over four of Rows8's eight transposed rows: column
// x of them is the four floats at t[8x:] (zero outside the row), its
// output goes to o[8x:]; the caller shifts both slices by four floats for
// the other four rows. Column 0 is at the slices' base; the kernel reads t
// from column n0−radius−1 (negative) and writes o from column n0. Border
// steps over [n0, e1) and [e2, xs), four-output steps over [e1, e2), as
// hblurGo; lane r is row r.
//
// R0 = n, R1 = &t[n−radius−1], R2 = &t[n+radius−1], R3 = &o[n], R4 = e1,
// R5 = e2, R6 = xs (columns are 32 bytes apart); V16–V24 the constants
// (k: per filter mulIn[0..3], mulPrev2[0..3], mulPrev[0..3]), V0–V5 the
// states, V25 scratch, V26–V29 the interior's output sums.
TEXT ·hblurNEON(SB), NOSPLIT, $0-96
	MOVD t_base+0(FP), R1
	MOVD o_base+24(FP), R3
	MOVD n0+48(FP), R0
	MOVD e1+56(FP), R4
	MOVD e2+64(FP), R5
	MOVD xs+72(FP), R6
	MOVD radius+80(FP), R9
	MOVD k+88(FP), R10
	VLD1.P 64(R10), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P 64(R10), [V20.S4, V21.S4, V22.S4, V23.S4]
	VLD1 (R10), [V24.S4]

	LSL  $5, R0, R8
	ADD  R8, R3, R3
	ADD  R8, R1, R2
	ADD  $1, R9, R10
	LSL  $5, R10, R10
	SUB  R10, R2, R1 // left input: column n − radius − 1
	SUB  $1, R9, R10
	LSL  $5, R10, R10
	ADD  R10, R2, R2 // right input: column n + radius − 1

	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16

	// Border steps before the interior.
	CMP  R4, R0
	BGE  head_done

head:
	FMOVQ (R1), F6
	FMOVQ (R2), F25
	FADD4(25, 6, 6)
	HSTEP(0)
	HSTEP(1)
	HSTEP(2)
	VOUT(10, 11, 12, 25)
	FMOVQ F25, (R3)
	ADD  $32, R1, R1
	ADD  $32, R2, R2
	ADD  $32, R3, R3
	ADD  $1, R0, R0
	CMP  R4, R0
	BLT  head

head_done:
	// Interior: four outputs per step. Filters in the order 1, 2, 0 so
	// that the sums come out as f0 + (f1 + f2).
	CMP  R5, R0
	BGE  inner_done

inner:
	FMOVQ (R1), F6
	FMOVQ (R2), F25
	FADD4(25, 6, 6)
	FMOVQ 32(R1), F7
	FMOVQ 32(R2), F25
	FADD4(25, 7, 7)
	FMOVQ 64(R1), F8
	FMOVQ 64(R2), F25
	FADD4(25, 8, 8)
	FMOVQ 96(R1), F9
	FMOVQ 96(R2), F25
	FADD4(25, 9, 9)

	HQUAD(1)
	VMOV V12.B16, V4.B16
	VMOV V13.B16, V1.B16
	VMOV V10.B16, V26.B16
	VMOV V11.B16, V27.B16
	VMOV V12.B16, V28.B16
	VMOV V13.B16, V29.B16

	HQUAD(2)
	VMOV V12.B16, V5.B16
	VMOV V13.B16, V2.B16
	FADD4(26, 10, 26)
	FADD4(27, 11, 27)
	FADD4(28, 12, 28)
	FADD4(29, 13, 29)

	HQUAD(0)
	VMOV V12.B16, V3.B16
	VMOV V13.B16, V0.B16
	FADD4(26, 10, 26)
	FADD4(27, 11, 27)
	FADD4(28, 12, 28)
	FADD4(29, 13, 29)
	FMOVQ F26, (R3)
	FMOVQ F27, 32(R3)
	FMOVQ F28, 64(R3)
	FMOVQ F29, 96(R3)

	ADD  $128, R1, R1
	ADD  $128, R2, R2
	ADD  $128, R3, R3
	ADD  $4, R0, R0
	CMP  R5, R0
	BLT  inner

inner_done:
	// Border steps after the interior.
	CMP  R6, R0
	BGE  tail_done

tail:
	FMOVQ (R1), F6
	FMOVQ (R2), F25
	FADD4(25, 6, 6)
	HSTEP(0)
	HSTEP(1)
	HSTEP(2)
	VOUT(10, 11, 12, 25)
	FMOVQ F25, (R3)
	ADD  $32, R1, R1
	ADD  $32, R2, R2
	ADD  $32, R3, R3
	ADD  $1, R0, R0
	CMP  R6, R0
	BLT  tail

tail_done:
	RET
