package butteraugli

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"
)

// Every number bfPrelude hands the shaders is the CPU reference's
// (cpuba.GPUTables), bit for bit: each bit pattern is read back and
// compared.
func TestPreludeNumbers(t *testing.T) {
	got := map[string]uint32{}
	line := regexp.MustCompile(`(?m)^const (\w+)(?:: f32)? = (.*);$`)
	bits := regexp.MustCompile(`bitcast<f32>\(0x([0-9a-f]{8})u\)`)
	for _, m := range line.FindAllStringSubmatch(bfPrelude, -1) {
		vs := bits.FindAllStringSubmatch(m[2], -1)
		for i, v := range vs {
			n, err := strconv.ParseUint(v[1], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			name := m[1]
			if len(vs) > 1 {
				name = fmt.Sprintf("%s[%d]", m[1], i)
			}
			got[name] = uint32(n)
		}
	}
	tb := bfTables
	hi := float32(tb.SupMix)
	want := map[string]float32{
		"GAMMA_MUL": tb.GammaMul, "SUPPRESS_OMS": tb.SuppressOMS, "MAXCLAMP_MUL": tb.MaxclampMul,
		"MASK_BIAS": tb.MaskBias, "MASK_SQRT_BIAS": tb.MaskSqrtBias, "GLOBAL_SCALE": tb.GlobalScale,
		"ASYM_X": tb.Asym[0], "ASYM_Y": tb.Asym[1],
		"SUPMIX_HI": hi, "SUPMIX_LO": float32(tb.SupMix - float64(hi)),
	}
	for i, v := range tb.Mix {
		want[fmt.Sprintf("MIX%d", i)] = v
	}
	for b, band := range []string{"UHF", "HF", "MF"} {
		for c, ch := range []string{"X", "Y"} {
			for i, v := range tb.Malta[b][c] {
				want[fmt.Sprintf("MW_%s_%s[%d]", band, ch, i)] = v
			}
		}
	}
	for i, ch := range []string{"X", "Y", "B"} {
		want["L2MF_"+ch], want["L2LF_"+ch] = tb.L2MF[i], tb.L2LF[i]
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != math.Float32bits(w) {
			t.Errorf("%s: prelude %#x (present %v), reference %#x", name, g, ok, math.Float32bits(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("the prelude has %d numbers, the reference's tables %d", len(got), len(want))
	}
	for i, k := range []bfKernel{bfKernOpsin, bfKernLF, bfKernHF, bfKernUHF, bfKernMask} {
		if b := tb.Blurs[i]; k.off != b.Off || &k.full[0] != &b.Full[0] || &k.half[0] != &b.Half[0] {
			t.Errorf("blur %d is not the reference's", i)
		}
	}
}
