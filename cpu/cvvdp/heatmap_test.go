package cvvdp

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// f16to32 converts IEEE 754 binary16 bits to float32.
func f16to32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h >> 10 & 0x1f)
	man := uint32(h & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: man·2⁻²⁴
		v := float32(math.Ldexp(float64(man), -24))
		if sign != 0 {
			v = -v
		}
		return v
	case 31:
		return math.Float32frombits(sign | 0xff<<23 | man<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | man<<13)
}

// TestHeatmapMatchesPycvvdp compares the distortion map with pycvvdp's
// raw heatmap for a 73×91 crop of the q20 pair (testdata/README.md), which
// pycvvdp stores as float16: every pixel within one float16 step (2⁻¹⁰
// relative) plus 1e-6 absolute. The map is float32 here, so the float16
// rounding (half a step, 4.9e-4 relative) is the whole of the expected
// difference.
func TestHeatmapMatchesPycvvdp(t *testing.T) {
	dir := sharedDir(t, "refvectors")
	raw, err := os.ReadFile(filepath.Join("testdata", "pycvvdp_heat_raw_q20_crop3_3_73x91.f16"))
	if err != nil {
		t.Fatal(err)
	}
	const w, h = 73, 91
	if len(raw) != 2*w*h {
		t.Fatalf("golden map has %d bytes", len(raw))
	}
	ref := crop(t, decode(t, dir, "ssimulacra2/jpeg_quality/source.png"), 3, 3, w, h)
	dist := crop(t, decode(t, dir, "ssimulacra2/jpeg_quality/q20.png"), 3, 3, w, h)
	r, err := Prepare(ref, Config{DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	res, err := r.ScoreContext(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	var maxd, maxPix float64
	for i, got := range res.DistMap.Pix {
		want := float64(f16to32(binary.LittleEndian.Uint16(raw[2*i:])))
		d := math.Abs(float64(got) - want)
		maxd, maxPix = max(maxd, d), max(maxPix, want)
		if !(d <= math.Abs(want)*0x1p-10+1e-6) {
			t.Errorf("pixel (%d, %d): %v, pycvvdp %v", i%w, i/w, got, want)
		}
	}
	if maxPix < 0.01 {
		t.Errorf("golden map is nearly empty (max %v)", maxPix)
	}
	t.Logf("heatmap: max |Δ| %.3g (map max %.3g)", maxd, maxPix)
}
