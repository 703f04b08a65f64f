package butteraugli

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cpuba "github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
)

// defineRE and tableRE match the header's #define lines and __constant__
// tables.
var (
	defineRE = regexp.MustCompile(`(?m)^#define (\w+) (\S+)$`)
	tableRE  = regexp.MustCompile(`(?m)^__constant__ float (\w+)\[(\d+)\] = \{(.*)\};$`)
)

// parseLiteral reads a literal the header writes (hexf, hexd or an int)
// back as the number it stands for.
func parseLiteral(t *testing.T, s string) float64 {
	t.Helper()
	s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(s, "("), ")"), "f")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("literal %q: %v", s, err)
	}
	return v
}

// Every number the header hands butteraugli.cu is the CPU reference's
// (cpuba.GPUTables), bit for bit: each literal is parsed back and compared.
func TestHeaderNumbers(t *testing.T) {
	h := header()
	got := map[string]float64{}
	for _, m := range defineRE.FindAllStringSubmatch(h, -1) {
		got[m[1]] = parseLiteral(t, m[2])
	}
	for _, m := range tableRE.FindAllStringSubmatch(h, -1) {
		for i, lit := range strings.Split(m[3], ", ") {
			got[fmt.Sprintf("%s[%d]", m[1], i)] = parseLiteral(t, lit)
		}
	}
	tb := tables
	want := map[string]float64{
		"GAMMA_MUL": float64(tb.GammaMul), "SUPPRESS_OMS": float64(tb.SuppressOMS),
		"MASK_BIAS": float64(tb.MaskBias), "MASK_SQRT_BIAS": float64(tb.MaskSqrtBias),
		"GLOBAL_SCALE": float64(tb.GlobalScale), "SUPMIX": tb.SupMix,
		"ASYM_X": float64(tb.Asym[0]), "ASYM_Y": float64(tb.Asym[1]),
	}
	for i, v := range tb.Mix {
		want[fmt.Sprintf("MIX%d", i)] = float64(v)
	}
	for b, band := range []string{"UHF", "HF", "MF"} {
		for c, ch := range []string{"X", "Y"} {
			for i, part := range []string{"N", "GT", "LT"} {
				want["MW_"+band+"_"+ch+"_"+part] = float64(tb.Malta[b][c][i])
			}
		}
	}
	for i, ch := range []string{"X", "Y", "B"} {
		want["L2MF_"+ch], want["L2LF_"+ch] = float64(tb.L2MF[i]), float64(tb.L2LF[i])
	}
	for i, name := range []string{"OPSIN", "LF", "HF", "UHF", "MASK"} {
		bl := tb.Blurs[i]
		want["OFF_"+name] = float64(bl.Off)
		if name == "OPSIN" {
			for j := 0; j < 3; j++ {
				want[fmt.Sprintf("OPSIN_W%d", j)] = float64(bl.Half[2-j])
			}
			continue
		}
		for j, v := range bl.Full {
			want[fmt.Sprintf("KF_%s[%d]", name, j)] = float64(v)
		}
		for j, v := range bl.Half {
			want[fmt.Sprintf("KH_%s[%d]", name, j)] = float64(v)
		}
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: not in the header", name)
		} else if math.Float64bits(g) != math.Float64bits(w) {
			t.Errorf("%s: header %v (%#x), reference %v (%#x)", name, g, math.Float64bits(g), w, math.Float64bits(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("the header has %d numbers, the reference's tables %d", len(got), len(want))
	}
	// The decoding tables are the reference's.
	for _, bps := range []int{1, 2} {
		b, ref := lutTable(bps), cpuba.LinearTable(bps)
		for i, v := range ref {
			if g := binary.LittleEndian.Uint32(b[4*i:]); g != math.Float32bits(v) {
				t.Fatalf("%d-byte table, sample %d: %#x, reference %#x", bps, i, g, math.Float32bits(v))
			}
		}
	}
}
