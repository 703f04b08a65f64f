package ssim2

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/zenmetrics-go/zenmetrics/internal/recgauss"
)

// The float32 constants of SSIMULACRA2 as libjxl computes them (the same
// values as cpu/ssim2's params.go: derived constants are computed in
// float32 at run time, as C++ does), handed to the kernels as #define
// lines with exact hexadecimal literals so NVRTC cannot round them
// differently.
var (
	opsinM00    float32 = 0.30
	opsinM02    float32 = 0.078
	opsinM01            = 1 - opsinM02 - opsinM00
	opsinM10    float32 = 0.23
	opsinM12    float32 = 0.078
	opsinM11            = 1 - opsinM12 - opsinM10
	opsinM20    float32 = 0.24342268924547819
	opsinM21    float32 = 0.20476744424496821
	opsinM22            = 1 - opsinM20 - opsinM21
	opsinBias   float32 = 0.0037930732552754493
	negBiasCbrt         = -float32(math.Cbrt(float64(opsinBias)))

	srgbThresh    float32 = 0.04045
	srgbLowDiv    float32 = 12.92
	srgbLowDivInv         = 1 / srgbLowDiv
	srgbP                 = [5]float32{2.200248328e-04, 1.043637593e-02, 1.624820318e-01, 7.961564959e-01, 8.210152774e-01}
	srgbQ                 = [5]float32{2.631846970e-01, 1.076976492e+00, 4.987528350e-01, -5.512498495e-02, 6.521209011e-03}

	third     float32 = 1.0 / 3
	fourThird float32 = 4.0 / 3
	one       float32 = 1
	scale8            = one / 255
	scale16           = one / 65535
)

const ssimC2 float32 = 0.0009

// hexf is a float32 as an exact C hexadecimal literal.
func hexf(v float32) string {
	if v == 0 {
		if math.Signbit(float64(v)) {
			return "(-0.0f)"
		}
		return "0.0f"
	}
	return "(" + strconv.FormatFloat(float64(v), 'x', -1, 32) + "f)"
}

// header is the #define block prepended to ssim2.cu.
func header() string {
	var b strings.Builder
	def := func(name string, v float32) { fmt.Fprintf(&b, "#define %s %s\n", name, hexf(v)) }
	g := recgauss.New(1.5)
	fmt.Fprintf(&b, "#define RADIUS %d\n", g.Radius)
	for k := 0; k < 3; k++ {
		def(fmt.Sprintf("N2_%d", k), g.N2[k])
		def(fmt.Sprintf("D1_%d", k), g.D1[k])
		for j := 0; j < 4; j++ {
			def(fmt.Sprintf("MI_%d_%d", k, j), g.MulIn[k][j])
			def(fmt.Sprintf("MP_%d_%d", k, j), g.MulPrev[k][j])
			def(fmt.Sprintf("MP2_%d_%d", k, j), g.MulPrev2[k][j])
		}
	}
	for i, v := range []float32{opsinM00, opsinM01, opsinM02, opsinM10, opsinM11, opsinM12, opsinM20, opsinM21, opsinM22} {
		def(fmt.Sprintf("OPSIN_M%d%d", i/3, i%3), v)
	}
	def("OPSIN_BIAS", opsinBias)
	def("NEG_BIAS_CBRT", negBiasCbrt)
	def("SRGB_THRESH", srgbThresh)
	def("SRGB_LOWDIVINV", srgbLowDivInv)
	for i := range srgbP {
		def(fmt.Sprintf("SRGB_P%d", i), srgbP[i])
		def(fmt.Sprintf("SRGB_Q%d", i), srgbQ[i])
	}
	def("CBRT_THIRD", third)
	def("CBRT_FOURTHIRD", fourThird)
	def("SCALE8", scale8)
	def("SCALE16", scale16)
	def("SSIM_C2", ssimC2)
	novec := 0
	if noVec {
		novec = 1
	}
	fmt.Fprintf(&b, "#define NOVEC %d\n", novec)
	return b.String()
}

// noVec makes the vertical pass load its tiles one float at a time even
// where rows are 16-byte aligned (ZENMETRICS_CUDA_SSIM2_VEC=off), to
// measure what the float4 path gains on a device; the results are the
// same bits either way.
var noVec = os.Getenv("ZENMETRICS_CUDA_SSIM2_VEC") == "off"
