package dssim

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cpudssim "github.com/zenmetrics-go/zenmetrics/cpu/dssim"
)

// Every number the header hands dssim.cu is the CPU reference's
// (cpudssim.GPUTables), bit for bit: each literal is parsed back and
// compared; and so are the decoding tables.
func TestHeaderNumbers(t *testing.T) {
	got := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^#define (\w+) (\S+)$`).FindAllStringSubmatch(header(), -1) {
		s := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(m[2], "("), ")"), "f")
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: literal %q: %v", m[1], m[2], err)
		}
		got[m[1]] = v
	}
	tb := tables
	want := map[string]float32{
		"LAB_EPS": tb.LabEps, "LAB_K": tb.LabK, "LAB_OFF": tb.LabOff, "L_SCALE": tb.LScale,
		"A_SCALE": tb.AScale, "A_OFF": tb.AOff, "B_SCALE": tb.BScale, "B_OFF": tb.BOff,
		"SSIM_C1": tb.SSIMC1, "SSIM_C2": tb.SSIMC2, "THIRD": tb.Third,
		"KC": tb.Blur[0], "KE": tb.Blur[1], "KM": tb.Blur[2],
		"LUT8": lut8, "LUT16": lut16, "A8": alpha8, "A16": alpha16,
	}
	for i, v := range tb.RGBToXYZ {
		want[fmt.Sprintf("RGB_%c%d", "XYZ"[i/3], i%3)] = v
	}
	for i, v := range tb.CbrtSeed {
		want[fmt.Sprintf("CBRT_P%d", i)] = v
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Float64bits(g) != math.Float64bits(float64(w)) {
			t.Errorf("%s: header %v (present %v), reference %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the header has %d numbers, the reference's tables %d", len(got), len(want))
	}
	b := lutBytes()
	for i := 0; i < 65536; i++ {
		for _, e := range []struct {
			off int
			v   float32
		}{{lut16 + i, cpudssim.SRGBToLinear32(float32(i) / 65535)}, {alpha16 + i, float32(i) / 65535}} {
			if g := binary.LittleEndian.Uint32(b[4*e.off:]); g != math.Float32bits(e.v) {
				t.Fatalf("table entry %d: %#x, want %#x", e.off, g, math.Float32bits(e.v))
			}
		}
	}
}
