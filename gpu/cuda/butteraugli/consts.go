package butteraugli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Butteraugli's constants as the CPU reference (cpu/butteraugli, libjxl
// v0.12.0) rounds them, handed to butteraugli.cu as #define lines and
// __constant__ tables with exact hexadecimal literals: values the reference
// derives in mixed float32/float64 arithmetic are derived here the same way
// (the same derivations as gpu/webgpu/butteraugli/consts.go), so NVRTC has
// nothing left to round. Plain decimal constants in the kernels are written
// with an f suffix, which rounds to the nearest float32 like Go's float32
// constants.

// mix are the opsin absorbance mixing weights.
var mix = [12]float32{
	0.29956550340058319, 0.63373087833825936, 0.077705617820981968, 1.7557483643287353,
	0.22158691104574774, 0.69391388044116142, 0.0987313588422, 1.7557483643287353,
	0.02, 0.02, 0.20480129041026129, 12.226454707163354,
}

// wmul: HF X, HF Y, HF B (unused), MF X, MF Y, MF B, LF X, LF Y, LF B.
var wmul = [9]float64{
	400.0, 1.50815703118, 0,
	2150.0, 10.6195433239, 16.2176043152,
	29.2353797994, 0.844626970982, 0.703646627719,
}

// maltaWeights returns (norm1, weight of the symmetric term, weight of the
// half-open terms) of one Malta difference image, as cpu/butteraugli's
// makeMaltaWeights: sqrt and quotients in double, rounded once.
func maltaWeights(w0gt1, w0lt1, norm1 float64, lf bool) [3]float32 {
	const length = 3.75
	mulli := 0.39905817637
	if lf {
		mulli = 0.611612573796
	}
	k0 := float64(float32(0.5))
	k1 := float64(float32(0.33))
	pre0 := mulli * math.Sqrt(k0*w0gt1) / (length*2 + 1)
	pre1 := mulli * math.Sqrt(k1*w0lt1) / (length*2 + 1)
	return [3]float32{float32(norm1), float32(pre0 * norm1), float32(pre1 * norm1)}
}

// blurKernel is one truncated Gaussian as the CPU reference builds it: the
// radius is int(2.25·σ) in float32, the taps exp(−i²/2σ²) rounded to
// float32, their float32 sum and its reciprocal; half[i] = full[i]/sum
// for the outermost tap (i = 0) to the centre (i = off).
type blurKernel struct {
	off  int
	full []float32
	half []float32
}

func makeKernel(sigma float32) blurKernel {
	s := float64(sigma)
	scaler := -1.0 / (2.0 * s * s)
	off := int(float32(2.25) * float32(math.Abs(s)))
	if off < 1 {
		off = 1
	}
	k := blurKernel{off: off, full: make([]float32, 2*off+1)}
	for i := -off; i <= off; i++ {
		k.full[i+off] = float32(math.Exp(scaler * float64(i) * float64(i)))
	}
	var sum float32
	for _, v := range k.full {
		sum += v
	}
	inv := 1 / sum
	k.half = make([]float32, off+1)
	for i := range k.half {
		k.half[i] = k.full[i] * inv
	}
	return k
}

// The five blurs: opsin (5 taps, mirrored borders), LF (33), HF (15), UHF
// (7), masking (13). The kernels' template names (KLF, ...) and radii are
// fixed in butteraugli.cu; blurs checks the radii against it.
var blurs = []struct {
	name string
	k    blurKernel
}{
	{"OPSIN", makeKernel(1.2)},
	{"LF", makeKernel(7.15593339443)},
	{"HF", makeKernel(3.22489901262)},
	{"UHF", makeKernel(1.56416327805)},
	{"MASK", makeKernel(2.7)},
}

// srgbToLinear is libjxl's rational sRGB decoding curve as the CPU
// reference evaluates it (float32 with fused multiply-adds rounded through
// float64, exactly as cpu/butteraugli's fma32); the unpack kernel reads it
// through a table per sample value, so the device never evaluates it.
func srgbToLinear(x float32) float32 {
	if x <= 0.04045 {
		return x * (1 / float32(12.92))
	}
	f := func(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }
	p := [5]float32{2.200248328e-04, 1.043637593e-02, 1.624820318e-01, 7.961564959e-01, 8.210152774e-01}
	q := [5]float32{2.631846970e-01, 1.076976492e+00, 4.987528350e-01, -5.512498495e-02, 6.521209011e-03}
	yp := f(f(f(f(p[4], x, p[3]), x, p[2]), x, p[1]), x, p[0])
	yq := f(f(f(f(q[4], x, q[3]), x, q[2]), x, q[1]), x, q[0])
	return yp / yq
}

// lutBytes is the decoding table for samples of 1 or 2 bytes, as the
// little-endian float32 words the device reads.
func lutBytes(bytesPerSample int) []byte {
	n := 256
	if bytesPerSample == 2 {
		n = 65536
	}
	out := make([]byte, 4*n)
	scale := 1 / float32(n-1)
	for i := 0; i < n; i++ {
		b := math.Float32bits(srgbToLinear(float32(i) * scale))
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return out
}

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

// hexd is a float64 as an exact C hexadecimal literal.
func hexd(v float64) string {
	if v == 0 {
		return "0.0"
	}
	return "(" + strconv.FormatFloat(v, 'x', -1, 64) + ")"
}

// header is the block prepended to butteraugli.cu.
func header() string {
	var b strings.Builder
	def := func(name string, v float32) { fmt.Fprintf(&b, "#define %s %s\n", name, hexf(v)) }
	defd := func(name string, v float64) { fmt.Fprintf(&b, "#define %s %s\n", name, hexd(v)) }
	def3 := func(name string, v [3]float32) {
		for i, s := range []string{"N", "GT", "LT"} {
			def(name+"_"+s, v[i])
		}
	}
	b.WriteString("// Generated by gpu/cuda/butteraugli/consts.go.\n")
	for i, v := range mix {
		def(fmt.Sprintf("MIX%d", i), v)
	}
	gm1, gm2 := float32(19.245013259874995), float32(0.6931471805599453)
	def("GAMMA_MUL", gm1*gm2)
	def("SUPPRESS_OMS", float32(1.0-0.653020556257))
	mm, mb := float32(6.19424080439), float32(12.61050594197)
	bias := mm * mb
	def("MASK_BIAS", bias)
	def("MASK_SQRT_BIAS", float32(math.Sqrt(float64(bias))))
	a, ih := float32(17.83), float32(0.79079917404)
	// The mask curves run in double from the float32 global scale.
	defd("GLOBAL_SCALE", float64(float32(1.0/float64(a*ih))))
	def3("MW_UHF_X", maltaWeights(173.5, 173.5, 5.0, false))
	def3("MW_UHF_Y", maltaWeights(1.10039032555, 1.10039032555, 71.7800275169, false))
	def3("MW_HF_X", maltaWeights(6923.99476109, 6923.99476109, 8051.15833247, true))
	def3("MW_HF_Y", maltaWeights(18.7237414387, 18.7237414387, 4498534.45232, true))
	def3("MW_MF_X", maltaWeights(8246.75321353, 8246.75321353, 1009002.70582, true))
	def3("MW_MF_Y", maltaWeights(37.0819870399, 37.0819870399, 130262059.556, true))
	def("ASYM_X", float32(float64(float32(wmul[0]))*0.8))
	def("ASYM_Y", float32(float64(float32(wmul[1]))*0.8))
	for i, n := range []string{"X", "Y", "B"} {
		def("L2MF_"+n, float32(wmul[3+i]))
		def("L2LF_"+n, float32(wmul[6+i]))
	}
	defd("SUPMIX", 1.0-0.3*float64(float32(0.5)))
	for _, bl := range blurs {
		k := bl.k
		fmt.Fprintf(&b, "#define OFF_%s %d\n", bl.name, k.off)
		if bl.name == "OPSIN" {
			// The 5-tap mirrored blur: centre, ±1, ±2 weights.
			def("OPSIN_W0", k.half[2])
			def("OPSIN_W1", k.half[1])
			def("OPSIN_W2", k.half[0])
			continue
		}
		table := func(kind string, v []float32) {
			fmt.Fprintf(&b, "__constant__ float K%s_%s[%d] = {", kind, bl.name, len(v))
			for i, x := range v {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(hexf(x))
			}
			b.WriteString("};\n")
		}
		table("F", k.full)
		table("H", k.half)
	}
	return b.String()
}
