package dssim

import (
	"math"
	"testing"

	cpudssim "github.com/zenmetrics-go/zenmetrics/cpu/dssim"
)

// The constant table the kernels read holds the CPU reference's numbers
// (cpudssim.GPUTables and its decoding curve), bit for bit.
func TestConstantsAreReference(t *testing.T) {
	c := cpudssim.GPUTables()
	want := append(append([]float32{}, c.RGBToXYZ[:]...), c.LabEps, c.LabK, c.LabOff, c.LScale,
		c.AScale, c.AOff, c.BScale, c.BOff, c.CbrtSeed[0], c.CbrtSeed[1], c.CbrtSeed[2], c.SSIMC1, c.SSIMC2)
	got := constants()
	for i, w := range want {
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			t.Errorf("entry %d: %v, reference %v", i, got[i], w)
		}
	}
	for i := 0; i < 65536; i++ {
		if w := cpudssim.SRGBToLinear32(float32(i) / 65535); math.Float32bits(got[kcLUT16+i]) != math.Float32bits(w) {
			t.Fatalf("16-bit sample %d: %v, reference %v", i, got[kcLUT16+i], w)
		}
	}
}
