package iwssim

import (
	"context"
	"errors"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestFlat: flat images get the CPU reference's semantics (cpu/iwssim's
// TestFlat says why): a flat reference against a textured image and the
// reverse are scored within tol of the CPU, and two flat images are refused
// with the CPU's error (ErrBadInput, the same scale), decided on the host
// (uniform) because a float32 pyramid may leave rounding noise in a flat
// image's bands above piq's float64 threshold on the 3×3 variance.
func TestFlat(t *testing.T) {
	b := backend(t)
	c := cpu.New(cpu.Config{})
	flat := func(v byte) *zenmetrics.Image {
		im := zenmetrics.NewImage(200, 190, zenmetrics.RGB8)
		for i := range im.Pix {
			im.Pix[i] = v + byte(i%3)
		}
		return im
	}
	grey, dark := flat(128), flat(90)
	_, tex := metrictest.Synthetic(200, 190, 5, zenmetrics.RGB8)
	ctx := context.Background()
	for _, p := range [][2]*zenmetrics.Image{{grey, tex}, {tex, grey}} {
		got, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.IWSSIM, p[0], p[1], zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := zenmetrics.ScoreOnce(ctx, c, zenmetrics.IWSSIM, p[0], p[1], zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := math.Abs(got.Value - want.Value)
		t.Logf("webgpu %.10f, cpu %.10f, |Δ| %.3g", got.Value, want.Value, d)
		if !(d <= tol) {
			t.Errorf("|Δ| %.3g > %g", d, tol)
		}
	}
	for _, p := range [][2]*zenmetrics.Image{{grey, grey}, {grey, dark}, {flat(0), flat(0)}} {
		got, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.IWSSIM, p[0], p[1], zenmetrics.Options{})
		_, cerr := zenmetrics.ScoreOnce(ctx, c, zenmetrics.IWSSIM, p[0], p[1], zenmetrics.Options{})
		if !errors.Is(err, zenmetrics.ErrBadInput) || cerr == nil || err.Error() != cerr.Error() {
			t.Errorf("flat %d against flat %d: %v, %v; want the CPU's error %v", p[0].Pix[0], p[1].Pix[0], got.Value, err, cerr)
		}
	}
}
