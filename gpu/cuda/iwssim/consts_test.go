package iwssim

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
)

// parseLit reads one of the header's literals back.
func parseLit(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "("), ")"), 64)
	if err != nil {
		t.Fatalf("literal %q: %v", s, err)
	}
	return v
}

// Every number the header hands iwssim.cu is the CPU reference's
// (cpuiw.KernelConstants, cpuiw.LumaConstants) or Go's logarithm's, bit
// for bit: each literal is parsed back and compared.
func TestHeaderNumbers(t *testing.T) {
	h := header()
	got := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^#define (\w+) (\S+)$`).FindAllStringSubmatch(h, -1) {
		got[m[1]] = parseLit(t, m[2])
	}
	c := cpuiw.KernelConstants()
	luma, rng := cpuiw.LumaConstants()
	want := map[string]float64{
		"C1": c.C1, "C2": c.C2, "BOX": c.Box, "NSQ": c.SigmaNsq, "INV_NSQ2": c.InvNsq2, "IW_EPS": c.Eps,
		"DATA_RANGE": rng, "LUMA_R": luma[0], "LUMA_G": luma[1], "LUMA_B": luma[2],
		// math/log.go's literals as Go rounds them.
		"GO_LN2HI": math.Float64frombits(0x3fe62e42fee00000), "GO_LN2LO": math.Float64frombits(0x3dea39ef35793c76),
		"GO_L1": math.Float64frombits(0x3FE5555555555593), "GO_L2": math.Float64frombits(0x3FD999999997FA04),
		"GO_L3": math.Float64frombits(0x3FD2492494229359), "GO_L4": math.Float64frombits(0x3FCC71C51D8E78AF),
		"GO_L5": math.Float64frombits(0x3FC7466496CB03DE), "GO_L6": math.Float64frombits(0x3FC39A09D078C69F),
		"GO_L7":     math.Float64frombits(0x3FC2F112DF3E5244),
		"GO_HSQRT2": math.Sqrt2 / 2, "GO_INVLN2": 1 / math.Ln2,
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Float64bits(g) != math.Float64bits(w) {
			t.Errorf("%s: header %v (present %v), want %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the header has %d numbers, the test knows %d", len(got), len(want))
	}
	for name, vs := range map[string][]float64{"PYR": c.Pyr[:], "GAUSS": c.Gauss[:]} {
		m := regexp.MustCompile(`__constant__ double ` + name + `\[(\d+)\] = \{([^}]*)\};`).FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("no %s array", name)
		}
		lits := strings.Split(m[2], ",")
		if n, _ := strconv.Atoi(m[1]); n != len(vs) || len(lits) != len(vs) {
			t.Fatalf("%s: %s entries declared, %d given, want %d", name, m[1], len(lits), len(vs))
		}
		for i, l := range lits {
			if g := parseLit(t, l); math.Float64bits(g) != math.Float64bits(vs[i]) {
				t.Errorf("%s[%d]: %v, want %v", name, i, g, vs[i])
			}
		}
	}
}
