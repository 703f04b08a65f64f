package cvvdp

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
)

// Every number the header hands cvvdp.cu is the CPU reference's, bit for
// bit: each #define literal is parsed back and compared with
// cpucv.KernelConstants and FastMathTables (and the float64 constants
// with Go's own rounding of them), every table entry likewise; and the
// per-display buffers hold the Plan's matrix, HLG parameters, CSF rows and
// sample tables.
func TestHeaderNumbers(t *testing.T) {
	hdr := header()
	parse := func(lit string) float64 {
		s := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(lit, "("), ")"), "f")
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("literal %q: %v", lit, err)
		}
		return v
	}
	got := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^#define (\w+) (\S+)$`).FindAllStringSubmatch(hdr, -1) {
		got[m[1]] = parse(m[2])
	}
	want := map[string]float64{}
	for k, v := range floats() {
		want[k] = float64(v)
	}
	for k, v := range doubles() {
		want[k] = v
	}
	want["PU_PAD"] = float64(kc.PUPad)
	want["KB_DKL"], want["KB_HLG"], want["KB_CSF"], want["LUT16"] = kbDKL, kbHLG, kbCSF, lut16At
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Float64bits(g) != math.Float64bits(w) {
			t.Errorf("%s: header %v (present %v), reference %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the header defines %d numbers, the reference has %d", len(got), len(want))
	}
	// A few by hand, so that a wrong mapping in floats() shows too.
	c := cpucv.KernelConstants()
	for name, v := range map[string]float32{"EPS": c.Eps, "MASK_Q1": c.MaskQ[1], "XCM21": c.Xcm[2][1], "KE2": c.Expand[2], "PU12": c.PU[12]} {
		if float32(got[name]) != v {
			t.Errorf("%s: %v, want %v", name, got[name], v)
		}
	}
	tm := cpucv.FastMathTables()
	for name, tab := range map[string]*[128]float64{"LOG_INV": &tm.LogInv, "LOG_C": &tm.LogC, "EXP2_T": &tm.Exp2T} {
		m := regexp.MustCompile(`(?s)` + name + `\[128\] = \{(.*?)\};`).FindStringSubmatch(hdr)
		if m == nil {
			t.Fatalf("no table %s", name)
		}
		items := strings.Split(m[1], ",")
		if len(items) != 128 {
			t.Fatalf("%s: %d entries", name, len(items))
		}
		for i, it := range items {
			if v := parse(strings.TrimSpace(it)); math.Float64bits(v) != math.Float64bits(tab[i]) {
				t.Errorf("%s[%d] = %v, want %v", name, i, v, tab[i])
			}
		}
	}
	for _, disp := range []string{"", "standard_hdr_hlg"} {
		p, err := cpucv.NewPlan(300, 200, disp)
		if err != nil {
			t.Fatal(err)
		}
		k := kbFloats(p)
		ph := p.Photometry
		if k[kbDKL+5] != ph.ToDKL[1][2] || k[kbHLG] != ph.Gamma1 || k[kbHLG+2] != ph.Luma[1] || k[kbHLG+7] != ph.Expo ||
			k[kbCSF+(3*(p.Levels-1)+2)*lutN+31] != p.CSF[p.Levels-1][2][31] || len(k) != kbCSF+3*lutN*p.Levels {
			t.Errorf("%q: the constants buffer does not hold the plan's values", disp)
		}
		l := lutFloats(p)
		if len(l) != lutLen || l[200] != p.LUT(255)[200] || l[lut16At+40000] != p.LUT(65535)[40000] {
			t.Errorf("%q: the sample tables are not the plan's", disp)
		}
	}
}
