package dssim

import (
	"fmt"
	"math"
	"os"
	"strings"
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
var goldenCases = []struct {
	w, h int
	seed int64
	f    zenmetrics.PixelFormat
}{
	{1, 1, 1, zenmetrics.RGB8},
	{7, 9, 2, zenmetrics.RGBA8},
	{8, 8, 3, zenmetrics.Gray8},
	{37, 23, 4, zenmetrics.GrayA8},
	{129, 77, 5, zenmetrics.RGB16},
	{100, 131, 6, zenmetrics.RGBA16},
	{203, 157, 7, zenmetrics.Gray16},
	{256, 256, 8, zenmetrics.GrayA16},
	{517, 389, 9, zenmetrics.RGB8},
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

func goldenValue(t *testing.T, i int) float64 {
	c := goldenCases[i]
	ref, dist := metrictest.Synthetic(c.w, c.h, c.seed, c.f)
	v, _, err := Compare(ref, dist, Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGoldenBitIdentical checks every case against its recorded value bit
// for bit. DSSIM_GOLDEN=print prints the table instead.
func TestGoldenBitIdentical(t *testing.T) {
	if os.Getenv("DSSIM_GOLDEN") == "print" {
		var b strings.Builder
		for i := range goldenCases {
			fmt.Fprintf(&b, "\t%q,\n", fmt.Sprintf("%.17g", goldenValue(t, i)))
		}
		t.Log("\n" + b.String())
		return
	}
	if len(goldenValues) != len(goldenCases) {
		t.Fatalf("%d recorded values for %d cases", len(goldenValues), len(goldenCases))
	}
	for i, c := range goldenCases {
		got := goldenValue(t, i)
		var want float64
		if _, err := fmt.Sscan(goldenValues[i], &want); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%dx%d %v seed %d: got %.17g, recorded %s", c.w, c.h, c.f, c.seed, got, goldenValues[i])
		}
	}
}
