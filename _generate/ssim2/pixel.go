package main

import "fmt"

// Table of the XYB kernel (must match cpusimd's xybTab): 21 entries of 8
// equal 32-bit values. Entries 0..8 are the opsin matrix, row-major.
const (
	xBias = 9 + iota
	xAdd
	xThird
	xFourThird
	xHalf
	xPosXMul
	xPosXAdd
	xPosYAdd
	xPosBAdd
	xSign
	xGuessMul
	xGuessSub
)

func xt(i int) string { return fmt.Sprintf("%d(R11)", 32*i) }

// xyb: positive XYB of n (a multiple of 8) linear pixels, exactly the
// float32 operations of cpusimd's xybGo (libjxl's opsin absorbance, its
// cube root with three Newton steps and a refinement, the positive-XYB
// offsets), eight pixels per instruction.
//
//	func xybAVX2(r, g, b, dx, dy, db []float32, n int, tab *[xybTabLen][8]float32)
func xyb() {
	out.WriteString("// func xybAVX2(r []float32, g []float32, b []float32, dx []float32, dy []float32, db []float32, n int, tab *[21][8]float32)\n")
	out.WriteString("// Requires: AVX, AVX2, FMA3\n")
	out.WriteString("TEXT ·xybAVX2(SB), NOSPLIT, $0-160\n")
	p("MOVQ r_base+0(FP), SI")
	p("MOVQ g_base+24(FP), DI")
	p("MOVQ b_base+48(FP), DX")
	p("MOVQ dx_base+72(FP), R8")
	p("MOVQ dy_base+96(FP), R9")
	p("MOVQ db_base+120(FP), R10")
	p("MOVQ n+144(FP), CX")
	p("MOVQ tab+152(FP), R11")
	p("SHLQ $2, CX")
	p("XORQ AX, AX")
	p("TESTQ CX, CX")
	p("JZ xyb_done")
	label("xyb_loop")
	p("VMOVUPS (SI)(AX*1), Y9")
	p("VMOVUPS (DI)(AX*1), Y10")
	p("VMOVUPS (DX)(AX*1), Y11")
	p("VXORPS Y15, Y15, Y15")
	comment("opsin: m_c = M[c][0]·r + (M[c][1]·g + (M[c][2]·b + bias)), then m_c > 0 ? m_c : 0")
	for c := 0; c < 3; c++ {
		m := y(c)
		p("VMOVUPS %s, %s", xt(xBias), m)
		p("VFMADD231PS %s, Y11, %s", xt(3*c+2), m)
		p("VFMADD231PS %s, Y10, %s", xt(3*c+1), m)
		p("VFMADD231PS %s, Y9, %s", xt(3*c+0), m)
		p("VMAXPS Y15, %s, %s", m, m)
	}
	comment("cube root: x in Y0..Y2, -(x/3) in Y3..Y5, r in Y6..Y8; q Y9..Y11, t Y12..Y14")
	for c := 0; c < 3; c++ {
		p("VMULPS %s, %s, %s", xt(xThird), y(c), y(3+c))
		p("VXORPS %s, %s, %s", xt(xSign), y(3+c), y(3+c))
		p("VPSRAD $23, %s, %s", y(c), y(6+c))
		p("VPMULLD %s, %s, %s", xt(xGuessMul), y(6+c), y(6+c))
		p("VMOVDQU %s, %s", xt(xGuessSub), y(9+c))
		p("VPSUBD %s, %s, %s", y(6+c), y(9+c), y(6+c))
		p("VPCMPEQD Y15, %s, %s", y(c), y(9+c))
		p("VPANDN %s, %s, %s", y(6+c), y(9+c), y(6+c))
	}
	for it := 0; it < 3; it++ {
		for c := 0; c < 3; c++ {
			p("VMULPS %s, %s, %s", y(6+c), y(6+c), y(9+c))
			p("VMULPS %s, %s, %s", y(9+c), y(9+c), y(9+c))
			p("VMULPS %s, %s, %s", xt(xFourThird), y(6+c), y(12+c))
			p("VFMADD231PS %s, %s, %s", y(3+c), y(9+c), y(12+c))
			p("VMOVAPS %s, %s", y(12+c), y(6+c))
		}
	}
	for c := 0; c < 3; c++ {
		p("VMULPS %s, %s, %s", y(6+c), y(6+c), y(9+c))
		p("VMULPS %s, %s, %s", y(9+c), y(9+c), y(9+c))
		p("VXORPS %s, %s, Y15", xt(xSign), y(c))
		p("VMOVAPS %s, %s", y(6+c), y(12+c))
		p("VFMADD231PS Y15, %s, %s", y(9+c), y(12+c))
		p("VFMADD231PS %s, %s, %s", xt(xThird), y(12+c), y(6+c))
	}
	for c := 0; c < 3; c++ {
		p("VMULPS %s, %s, %s", y(6+c), y(6+c), y(9+c))
		p("VMOVUPS %s, %s", xt(xAdd), y(12+c))
		p("VFMADD231PS %s, %s, %s", y(c), y(9+c), y(12+c))
	}
	comment("X = 14·(0.5·(m0−m1)) + 0.42, Y = 0.5·(m0+m1) + 0.01, B = (m2−Y) + 0.55")
	p("VSUBPS Y13, Y12, Y0")
	p("VMULPS %s, Y0, Y0", xt(xHalf))
	p("VMULPS %s, Y0, Y0", xt(xPosXMul))
	p("VADDPS %s, Y0, Y0", xt(xPosXAdd))
	p("VMOVUPS Y0, (R8)(AX*1)")
	p("VADDPS Y13, Y12, Y1")
	p("VMULPS %s, Y1, Y1", xt(xHalf))
	p("VADDPS %s, Y1, Y2", xt(xPosYAdd))
	p("VMOVUPS Y2, (R9)(AX*1)")
	p("VSUBPS Y1, Y14, Y3")
	p("VADDPS %s, Y3, Y3", xt(xPosBAdd))
	p("VMOVUPS Y3, (R10)(AX*1)")
	p("ADDQ $32, AX")
	p("CMPQ AX, CX")
	p("JLT xyb_loop")
	label("xyb_done")
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}

// Table of the error-terms kernel (cpusimd's termsTab): 32-byte entries.
const (
	tOne32  = iota // 1.0f ×8
	tC2            // ssimC2 ×8
	tAbs32         // 0x7fffffff ×8
	tOne64         // 1.0 ×4
	tSign64        // sign bit ×4
)

func tt(i int) string { return fmt.Sprintf("%d(R12)", 32*i) }

// rowTerms: the SSIM and edge-difference terms of n pixels (a multiple of
// 8): the float32 part eight pixels at a time, the float64 part in two
// halves of four, summed into four lanes per term (lane i takes the pixels
// x ≡ i mod 4, in order), stored to acc.
//
//	func rowTermsAVX2(img1, mu1, vr1, img2, mu2, s22, s12 []float32, n int, acc *[6][4]float64, tab *[termsTabLen][8]float32)
func rowTerms() {
	out.WriteString("// func rowTermsAVX2(img1 []float32, mu1 []float32, vr1 []float32, img2 []float32, mu2 []float32, s22 []float32, s12 []float32, n int, acc *[6][4]float64, tab *[5][8]float32)\n")
	out.WriteString("// Requires: AVX, AVX2\n")
	out.WriteString("TEXT ·rowTermsAVX2(SB), NOSPLIT, $0-192\n")
	p("MOVQ img1_base+0(FP), SI")
	p("MOVQ mu1_base+24(FP), DI")
	p("MOVQ vr1_base+48(FP), DX")
	p("MOVQ img2_base+72(FP), BX")
	p("MOVQ mu2_base+96(FP), R8")
	p("MOVQ s22_base+120(FP), R9")
	p("MOVQ s12_base+144(FP), R10")
	p("MOVQ n+168(FP), CX")
	p("MOVQ acc+176(FP), R13")
	p("MOVQ tab+184(FP), R12")
	comment("sums: ssim Y10, ssim⁴ Y11, artifact Y12, artifact⁴ Y13, detail lost Y14, detail lost⁴ Y15")
	for i := 10; i < 16; i++ {
		p("VXORPD %s, %s, %s", y(i), y(i), y(i))
	}
	p("SHLQ $2, CX")
	p("XORQ AX, AX")
	p("TESTQ CX, CX")
	p("JZ terms_done")
	label("terms_loop")
	p("VMOVUPS (DI)(AX*1), Y0")     // m1
	p("VMOVUPS (R8)(AX*1), Y1")     // m2
	p("VSUBPS Y1, Y0, Y2")          // diff = m1 − m2
	p("VMULPS Y2, Y2, Y2")          // diff²
	p("VMOVUPS %s, Y3", tt(tOne32)) //
	p("VSUBPS Y2, Y3, Y2")          // numM = 1 − diff²
	p("VMULPS Y1, Y0, Y3")          // m1·m2
	p("VMOVUPS (R10)(AX*1), Y4")    // s12
	p("VSUBPS Y3, Y4, Y4")          // s12 − m1·m2
	p("VADDPS Y4, Y4, Y4")          // ·2
	p("VADDPS %s, Y4, Y4", tt(tC2)) // numS
	p("VMULPS Y1, Y1, Y3")          // m2²
	p("VMOVUPS (R9)(AX*1), Y5")     // s22
	p("VSUBPS Y3, Y5, Y5")          // s22 − m2²
	p("VADDPS (DX)(AX*1), Y5, Y5")  // vr1 + (s22 − m2²)
	p("VADDPS %s, Y5, Y5", tt(tC2)) // denS
	p("VMULPS Y4, Y2, Y2")          // numM·numS
	p("VDIVPS Y5, Y2, Y2")          // q = numM·numS / denS
	p("VMOVUPS (BX)(AX*1), Y3")     // img2
	p("VSUBPS Y1, Y3, Y3")
	p("VANDPS %s, Y3, Y3", tt(tAbs32)) // e2 = |img2 − m2|
	p("VMOVUPS (SI)(AX*1), Y4")        // img1
	p("VSUBPS Y0, Y4, Y4")
	p("VANDPS %s, Y4, Y4", tt(tAbs32)) // e1 = |img1 − m1|
	p("VXORPD Y8, Y8, Y8")
	for half := 0; half < 2; half++ {
		q, e2, e1 := "X2", "X3", "X4"
		if half == 1 {
			p("VEXTRACTF128 $1, Y2, X0")
			p("VEXTRACTF128 $1, Y3, X1")
			p("VEXTRACTF128 $1, Y4, X5")
			q, e2, e1 = "X0", "X1", "X5"
		}
		p("VCVTPS2PD %s, Y6", q)
		p("VMOVUPD %s, Y7", tt(tOne64))
		p("VSUBPD Y6, Y7, Y7") // d = 1 − q
		p("VMAXPD Y7, Y8, Y7") // max(0, d), d when d is 0 or NaN
		p("VADDPD Y7, Y10, Y10")
		p("VMULPD Y7, Y7, Y7")
		p("VMULPD Y7, Y7, Y7")
		p("VADDPD Y7, Y11, Y11")
		p("VCVTPS2PD %s, Y6", e2)
		p("VCVTPS2PD %s, Y7", e1)
		p("VADDPD %s, Y6, Y6", tt(tOne64)) // 1 + e2
		p("VADDPD %s, Y7, Y7", tt(tOne64)) // 1 + e1
		p("VDIVPD Y7, Y6, Y6")
		p("VSUBPD %s, Y6, Y6", tt(tOne64)) // d1 = (1+e2)/(1+e1) − 1
		p("VMAXPD Y6, Y8, Y7")             // artifact = max(0, d1)
		p("VXORPD %s, Y6, Y6", tt(tSign64))
		p("VMAXPD Y6, Y8, Y6") // detail lost = max(0, −d1)
		p("VADDPD Y7, Y12, Y12")
		p("VMULPD Y7, Y7, Y7")
		p("VMULPD Y7, Y7, Y7")
		p("VADDPD Y7, Y13, Y13")
		p("VADDPD Y6, Y14, Y14")
		p("VMULPD Y6, Y6, Y6")
		p("VMULPD Y6, Y6, Y6")
		p("VADDPD Y6, Y15, Y15")
	}
	p("ADDQ $32, AX")
	p("CMPQ AX, CX")
	p("JLT terms_loop")
	label("terms_done")
	for i := 0; i < 6; i++ {
		p("VMOVUPD %s, %d(R13)", y(10+i), 32*i)
	}
	p("VZEROUPPER")
	p("RET")
	out.WriteString("\n")
}
