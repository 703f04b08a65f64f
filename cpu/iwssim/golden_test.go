package iwssim

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// goldenCases are synthetic pairs in every pixel format, from the smallest
// size piq accepts with five scales to sizes whose bands are odd at every
// scale. Their scores were recorded with %.17g on amd64 from this
// implementation while it matched piq 0.8.0 on the corpus to 4.7e-11, so
// that any change in the arithmetic, even one ulp anywhere, shows up here.
var goldenCases = []struct {
	w, h int
	seed int64
	f    zenmetrics.PixelFormat
}{
	{minSide, minSide, 1, zenmetrics.RGB8},
	{minSide + 1, minSide + 7, 2, zenmetrics.RGBA8},
	{200, 181, 3, zenmetrics.Gray8},
	{181, 200, 4, zenmetrics.GrayA8},
	{211, 197, 5, zenmetrics.RGB16},
	{256, 256, 6, zenmetrics.RGBA16},
	{301, 223, 7, zenmetrics.Gray16},
	{333, 257, 8, zenmetrics.GrayA16},
}

var goldenValues = []string{
	"0.98450489951071762",
	"0.98040050290427905",
	"0.98183406260495532",
	"0.98204068936418543",
	"0.98236512856506086",
	"0.9843612663232103",
	"0.97947775064215292",
	"0.97889232111967284",
}

func goldenValue(t *testing.T, i int) float64 {
	c := goldenCases[i]
	ref, dist := metrictest.Synthetic(c.w, c.h, c.seed, c.f)
	v, err := Score(ref, dist, Config{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// goldenOtherArchTol: on amd64 the recorded scores must come back bit for
// bit. Elsewhere the arithmetic of this package gives the same bits (its
// products are rounded explicitly, so arm64 does not fuse them into FMAs),
// but two things it calls do not promise that: math.Log2 (assembly-backed
// on amd64, Go on arm64) and gonum's eigen-decomposition, whose dot
// products use assembly on amd64 and plain Go elsewhere, summed in another
// order. Each moves a weight by an ulp or so: seen under qemu-aarch64,
// 3.3e-16 at most over these cases (8.9e-16 before the products were
// rounded explicitly). 1e-13 on a 0..1 score is ~900 ulps of it, room for
// other inputs and still far below the 1e-8 that anyone could notice.
const goldenOtherArchTol = 1e-13

// TestGoldenBitIdentical checks every case against its recorded value.
// IWSSIM_GOLDEN=print prints the table instead.
func TestGoldenBitIdentical(t *testing.T) {
	if os.Getenv("IWSSIM_GOLDEN") == "print" {
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
	var worst float64
	for i, c := range goldenCases {
		got := goldenValue(t, i)
		var want float64
		if _, err := fmt.Sscan(goldenValues[i], &want); err != nil {
			t.Fatal(err)
		}
		d := math.Abs(got - want)
		worst = max(worst, d)
		if runtime.GOARCH == "amd64" && math.Float64bits(got) != math.Float64bits(want) ||
			runtime.GOARCH != "amd64" && !(d <= goldenOtherArchTol) {
			t.Errorf("%dx%d %v seed %d: got %.17g, recorded %s (|Δ| %.3g)", c.w, c.h, c.f, c.seed, got, goldenValues[i], d)
		}
	}
	t.Logf("%s: max |Δ| from the recorded amd64 scores %.3g", runtime.GOARCH, worst)
}
