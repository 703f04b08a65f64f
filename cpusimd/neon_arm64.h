// Advanced SIMD floating-point instructions that Go's arm64 assembler has
// no mnemonics for (it knows VFMLA/VFMLS but not FADD, FMUL, FDIV, FMAX,
// FCVTL, … on vectors), encoded by hand. Operands are register numbers,
// in the assembler's order: sources first, destination last. Each macro
// names the A64 instruction it encodes; `go tool objdump` of a test
// binary shows them decoded, which is how these were checked.
//
// .4S: four float32 lanes; .2D: two float64 lanes; Q=1 (128 bits).

// Vd.4S = Vn.4S + Vm.4S (FADD, vector)
#define FADD4(m, n, d) WORD $(0x4E20D400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S - Vm.4S (FSUB)
#define FSUB4(m, n, d) WORD $(0x4EA0D400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S * Vm.4S (FMUL)
#define FMUL4(m, n, d) WORD $(0x6E20DC00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S / Vm.4S (FDIV)
#define FDIV4(m, n, d) WORD $(0x6E20FC00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S += Vn.4S * Vm.4S, rounded once (FMLA)
#define FMLA4(m, n, d) WORD $(0x4E20CC00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S -= Vn.4S * Vm.4S, rounded once (FMLS)
#define FMLS4(m, n, d) WORD $(0x4EA0CC00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = -Vn.4S (FNEG)
#define FNEG4(n, d) WORD $(0x6EA0F800 | (n)<<5 | (d))
// Vd.4S = |Vn.4S| (FABS)
#define FABS4(n, d) WORD $(0x4EA0F800 | (n)<<5 | (d))
// Vd.4S = Vn.4S > 0 ? all ones : 0, lane by lane; NaN compares false (FCMGT, zero)
#define FCMGTZ4(n, d) WORD $(0x4EA0C800 | (n)<<5 | (d))
// Vd.4S = Vn.4S * Vm.4S, 32-bit integer lanes, low half of the product (MUL, vector)
#define IMUL4(m, n, d) WORD $(0x4EA09C00 | (m)<<16 | (n)<<5 | (d))

// By element: lane i (0..3) of Vm stands for a whole vector.
// Vd.4S += Vn.4S * Vm.S[i], rounded once (FMLA, by element)
#define FMLAE(m, i, n, d) WORD $(0x4F801000 | ((i)&1)<<21 | ((i)>>1)<<11 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S * Vm.S[i] (FMUL, by element)
#define FMULE(m, i, n, d) WORD $(0x4F809000 | ((i)&1)<<21 | ((i)>>1)<<11 | (m)<<16 | (n)<<5 | (d))

// float64 lanes.
// Vd.2D = Vn.2D + Vm.2D (FADD)
#define FADD2(m, n, d) WORD $(0x4E60D400 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = Vn.2D - Vm.2D (FSUB)
#define FSUB2(m, n, d) WORD $(0x4EE0D400 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = Vn.2D * Vm.2D (FMUL)
#define FMUL2(m, n, d) WORD $(0x6E60DC00 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = Vn.2D / Vm.2D (FDIV)
#define FDIV2(m, n, d) WORD $(0x6E60FC00 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = max(Vn.2D, Vm.2D), NaN if either is NaN, max(−0, +0) = +0 (FMAX), as Go's max
#define FMAX2(m, n, d) WORD $(0x4E60F400 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = -Vn.2D (FNEG)
#define FNEG2(n, d) WORD $(0x6EE0F800 | (n)<<5 | (d))

// Conversions (round to nearest even, as Go's float32(x)).
// Vd.2D = float64 of the low two lanes of Vn.4S (FCVTL)
#define FCVTL(n, d) WORD $(0x0E617800 | (n)<<5 | (d))
// Vd.2D = float64 of the high two lanes of Vn.4S (FCVTL2)
#define FCVTL2(n, d) WORD $(0x4E617800 | (n)<<5 | (d))
// low two lanes of Vd.4S = float32 of Vn.2D, high lanes zeroed (FCVTN)
#define FCVTN(n, d) WORD $(0x0E616800 | (n)<<5 | (d))
// high two lanes of Vd.4S = float32 of Vn.2D, low lanes kept (FCVTN2)
#define FCVTN2(n, d) WORD $(0x4E616800 | (n)<<5 | (d))

// Vd = Vn, all 128 bits (MOV, an alias of ORR Vd.16B, Vn.16B, Vn.16B)
#define VMOVR(n, d) WORD $(0x4EA01C00 | (n)<<16 | (n)<<5 | (d))

// Integer and bitwise lanes.
// Vd = Vn AND Vm, 128 bits (AND, vector)
#define VAND16(m, n, d) WORD $(0x4E201C00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = (Vn.4S AND Vm.4S) != 0 ? all ones : 0 (CMTST)
#define CMTST4(m, n, d) WORD $(0x4EA08C00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S >> 23, logical (USHR #23)
#define USHR23(n, d) WORD $(0x6F290400 | (n)<<5 | (d))
// Vd.4S = Vn.4S - Vm.4S, 32-bit integer lanes (SUB, vector)
#define ISUB4(m, n, d) WORD $(0x6EA08400 | (m)<<16 | (n)<<5 | (d))

// Comparisons and selection, for the Butteraugli kernels. A comparison
// sets a lane to all ones where it holds, else zero; NaN compares false.
// Vd.4S = Vn.4S > Vm.4S (FCMGT, register)
#define FCMGT4(m, n, d) WORD $(0x6EA0E400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S >= Vm.4S (FCMGE, register)
#define FCMGE4(m, n, d) WORD $(0x6E20E400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S < 0 (FCMLT, zero)
#define FCMLTZ4(n, d) WORD $(0x4EA0E800 | (n)<<5 | (d))
// Vd.2D = Vn.2D > Vm.2D (FCMGT, register)
#define FCMGT2(m, n, d) WORD $(0x6EE0E400 | (m)<<16 | (n)<<5 | (d))
// Vd.2D = Vn.2D < 0 (FCMLT, zero)
#define FCMLTZ2(n, d) WORD $(0x4EE0E800 | (n)<<5 | (d))
// Vd = Vd ? Vn : Vm, bit by bit (BSL): the mask in Vd is replaced
#define BSL16(m, n, d) WORD $(0x6E601C00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = min(Vn.4S, Vm.4S), NaN if either is, min(−0, +0) = −0 (FMIN), as Go's min
#define FMIN4(m, n, d) WORD $(0x4EA0F400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = max(Vn.4S, Vm.4S), NaN if either is, max(−0, +0) = +0 (FMAX), as Go's max
#define FMAX4(m, n, d) WORD $(0x4E20F400 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = sqrt(Vn.4S), correctly rounded (FSQRT)
#define FSQRT4(n, d) WORD $(0x6EA1F800 | (n)<<5 | (d))
// Vd = Vn OR Vm, 128 bits (ORR, vector)
#define VORR16(m, n, d) WORD $(0x4EA01C00 | (m)<<16 | (n)<<5 | (d))
// Vd.4S = Vn.4S >> 23, arithmetic (SSHR #23)
#define SSHR23(n, d) WORD $(0x4F290400 | (n)<<5 | (d))
// Vd.4S = Vn.4S << 23 (SHL #23)
#define SHL23(n, d) WORD $(0x4F375400 | (n)<<5 | (d))
// Vd.4S = float32 of the int32 lanes of Vn.4S, rounded to nearest (SCVTF, vector)
#define SCVTF4(n, d) WORD $(0x4E21D800 | (n)<<5 | (d))
