package imageio

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestDSSIMMapImage checks the dssim tool's colouring on hand-computed
// values: map {1, 0.9, 0.5, 0.99} has mean 0.8475, mean deviation
// 0.17375, so the blue divisor is (1 − 0.82625)·4 = 0.695; each byte is
// v·256 truncated (d = 0.1: R 0.16→40, G 0.3→76, B 0.1439→36; d = 0.5:
// R 4 and G 1.5 saturate to 255, B 0.7194→184; d = 0.01: R 0.0016→0,
// G 0.03→7, B 0.01439→3). The values are far from byte boundaries, so
// float32 rounding cannot move them.
func TestDSSIMMapImage(t *testing.T) {
	p := &zenmetrics.FloatPlane{Width: 2, Height: 2, Pix: []float32{1, 0.9, 0.5, 0.99}}
	im := DSSIMMapImage(p)
	if im == nil || im.Format != zenmetrics.RGBA8 || im.Width != 2 || im.Height != 2 {
		t.Fatalf("image %+v", im)
	}
	want := [][4]byte{{0, 0, 0, 255}, {40, 76, 36, 255}, {255, 255, 184, 255}, {0, 7, 3, 255}}
	for i, w := range want {
		x, y := i%2, i/2
		got := [4]byte{byte(im.Sample(x, y, 0)), byte(im.Sample(x, y, 1)), byte(im.Sample(x, y, 2)), byte(im.Sample(x, y, 3))}
		if got != w {
			t.Errorf("pixel %d (ssim %v): %v, want %v", i, p.Pix[i], got, w)
		}
	}
	if DSSIMMapImage(nil) != nil || DSSIMMapImage(&zenmetrics.FloatPlane{Width: 2, Height: 2, Pix: make([]float32, 3)}) != nil {
		t.Error("inconsistent plane accepted")
	}
	// An all-ones map (identical images): d = 0 everywhere and 0/0 in blue
	// is NaN, which the tool writes as 0.
	one := DSSIMMapImage(&zenmetrics.FloatPlane{Width: 1, Height: 1, Pix: []float32{1}})
	if one.Pix[0] != 0 || one.Pix[1] != 0 || one.Pix[2] != 0 || one.Pix[3] != 255 {
		t.Errorf("identical: %v", one.Pix)
	}
}
