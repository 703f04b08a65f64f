package metrictest

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// GoldenCase is one synthetic pair (Synthetic(W, H, Seed, F)) whose score
// a CPU reference recorded, so that any change in its arithmetic, even of
// one ulp, shows up.
type GoldenCase struct {
	W, H int
	Seed int64
	F    zenmetrics.PixelFormat
}

// Pair is the case's reference and distorted image.
func (c GoldenCase) Pair() (ref, dist *zenmetrics.Image) { return Synthetic(c.W, c.H, c.Seed, c.F) }

// CheckGolden scores every case and compares it with its recorded value
// (printed with %.17g on amd64): bit for bit on amd64, and elsewhere
// within otherArchTol, or bit for bit too when otherArchTol is 0. With
// the environment variable env (when not "") set to "print" it logs a
// fresh table to paste instead. It returns the largest difference seen.
func CheckGolden(t *testing.T, env string, cases []GoldenCase, recorded []string, otherArchTol float64, score func(GoldenCase) float64) float64 {
	t.Helper()
	exact := runtime.GOARCH == "amd64" || otherArchTol == 0
	return CheckGoldenExact(t, env, cases, recorded, exact, otherArchTol, score)
}

// CheckGoldenExact is CheckGolden with the caller deciding where the
// recorded bits must come back: exact demands them bit for bit, otherwise
// within tol. A package whose scores go through code that has assembly
// on amd64 and a Go twin under -tags noasm (gonum's kernels) uses it to
// hold the default amd64 build to the bits and the noasm build to tol, as
// other architectures are.
func CheckGoldenExact(t *testing.T, env string, cases []GoldenCase, recorded []string, exact bool, tol float64, score func(GoldenCase) float64) float64 {
	t.Helper()
	if env != "" && os.Getenv(env) == "print" {
		var b strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&b, "\t%q,\n", fmt.Sprintf("%.17g", score(c)))
		}
		t.Log("\n" + b.String())
		return 0
	}
	if len(recorded) != len(cases) {
		t.Fatalf("%d recorded values for %d cases", len(recorded), len(cases))
	}
	var worst float64
	for i, c := range cases {
		got := score(c)
		var want float64
		if _, err := fmt.Sscan(recorded[i], &want); err != nil {
			t.Fatal(err)
		}
		d := math.Abs(got - want)
		worst = max(worst, d)
		if exact && math.Float64bits(got) != math.Float64bits(want) || !exact && !(d <= tol) {
			t.Errorf("%dx%d %v seed %d: got %.17g, recorded %s (|Δ| %.3g)", c.W, c.H, c.F, c.Seed, got, recorded[i], d)
		}
	}
	t.Logf("%s (bit for bit: %v): max |Δ| from the recorded amd64 values %.3g", runtime.GOARCH, exact, worst)
	return worst
}
