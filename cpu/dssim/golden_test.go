package dssim

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// goldenCases are synthetic pairs of assorted sizes (1×1, below and above
// the 8-pixel downscale limit, odd, every scale count) in every pixel
// format. Their values were recorded with %.17g from this implementation
// when it matched dssim-core 3.4.0 on the corpus to the printed 8
// decimals, so that any change in the arithmetic, even one ulp anywhere,
// shows up here (the speed-ups must keep dssim-core's float32 operations).
var goldenCases = []metrictest.GoldenCase{
	{W: 1, H: 1, Seed: 1, F: zenmetrics.RGB8},
	{W: 7, H: 9, Seed: 2, F: zenmetrics.RGBA8},
	{W: 8, H: 8, Seed: 3, F: zenmetrics.Gray8},
	{W: 37, H: 23, Seed: 4, F: zenmetrics.GrayA8},
	{W: 129, H: 77, Seed: 5, F: zenmetrics.RGB16},
	{W: 100, H: 131, Seed: 6, F: zenmetrics.RGBA16},
	{W: 203, H: 157, Seed: 7, F: zenmetrics.Gray16},
	{W: 256, H: 256, Seed: 8, F: zenmetrics.GrayA16},
	{W: 517, H: 389, Seed: 9, F: zenmetrics.RGB8},
}

var goldenValues = []string{
	"0", // one pixel: the pooled deviation of a one-value map is 0
	"0.0072610926158866995",
	"0.014115811856877825",
	"0.0021749011979519395",
	"0.0043598587362592145",
	"0.0023554189404402237",
	"0.0039275587687701563",
	"0.0023281792653091493",
	"0.0039813247061215584",
}

// TestGoldenBitIdentical checks every case against its recorded value bit
// for bit, on every architecture. DSSIM_GOLDEN=print prints the table
// instead.
func TestGoldenBitIdentical(t *testing.T) {
	metrictest.CheckGolden(t, "DSSIM_GOLDEN", goldenCases, goldenValues, 0, func(c metrictest.GoldenCase) float64 {
		ref, dist := c.Pair()
		v, _, err := Compare(ref, dist, Config{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		return v
	})
}
