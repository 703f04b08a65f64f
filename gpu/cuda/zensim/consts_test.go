package zensim

import (
	"encoding/binary"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
)

// Every number the header hands zensim.cu is the CPU reference's, bit for
// bit: each literal is parsed back and compared (the opsin constants with
// cpuz.OpsinConstants, the literals with the float32 values cpu/zensim's
// expressions round them to); and so are the tables.
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
	want := map[string]float32{
		// As cpu/zensim writes them: fma32(x, 14, 0.42), y + 0.01,
		// float32(t2-y) + 0.55, float32(a) * (1.0 / 255.0) and
		// (1.0 / 65535.0), ssimC2 = float32(0.0009), float32(1)/float32(11).
		"XYB_X_OFF": 0.42, "XYB_Y_OFF": 0.01, "XYB_B_OFF": 0.55,
		"INV255": 1.0 / 255.0, "INV65535": 1.0 / 65535.0, "SSIM_C2": 0.0009, "INV_DIAM": float32(1) / float32(11),
		"TAB_LUT8": tabLUT8, "TAB_LUT16": tabLUT16, "TAB_BG": tabBG,
		"MODE_EDGE": float32(cpuz.ModeEdge), "MODE_FULL": float32(cpuz.ModeFull),
	}
	for i, v := range cpuz.OpsinConstants() {
		want[opsinNames[i]] = v
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Float64bits(g) != math.Float64bits(float64(w)) {
			t.Errorf("%s: header %v (present %v), reference %v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the header has %d numbers, the reference's tables %d", len(got), len(want))
	}
	lut8, lut16, bg := cpuz.Tables()
	b := tabBytes()
	for _, tb := range []struct {
		off int
		v   []float32
	}{{tabLUT8, lut8}, {tabLUT16, lut16}, {tabBG, bg}} {
		for i, v := range tb.v {
			if g := binary.LittleEndian.Uint32(b[4*(tb.off+i):]); g != math.Float32bits(v) {
				t.Fatalf("table entry %d: %#x, want %#x", tb.off+i, g, math.Float32bits(v))
			}
		}
	}
	if len(b) != 4*tabLen || tabLen != 256+65536+4096 {
		t.Errorf("tables of %d bytes", len(b))
	}
}

// The kernels implement the channel modes none, edge and full; the
// default weights use only edge and full (zensim's active_channels), and
// the packed modes say so per channel.
func TestModes(t *testing.T) {
	if !supported() {
		t.Fatal("the default weights need the MSE-only mode, which the kernels lack")
	}
	for s := 0; s < cpuz.NumScales; s++ {
		m := modesOf(s)
		for c := 0; c < 3; c++ {
			if got, want := (m>>(8*c))&0xff, cpuz.ChannelMode(s, c); got != want {
				t.Errorf("scale %d channel %d: packed %d, cpu/zensim %d", s, c, got, want)
			}
		}
	}
}
