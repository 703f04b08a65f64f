package ssim2

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// TestSIMDGoldenScores runs goldenCases on the fast path, forced on so
// that it also runs with -tags noasm (on the Go twins), against the
// reference path's recorded scores: on amd64 with AVX2 the fast path gives
// exactly those bits for every case (its once-rounded FMAs never land on
// the rare float64 midpoint where the reference path's emulation differs),
// and AVX2, NEON and the Go twins are bit-exact with one another (package
// cpusimd tests that kernel by kernel). So the bits must match on amd64,
// and elsewhere to goldenOtherArchTol, the final math.Pow being the one
// step Go does not compute identically across architectures (see
// golden_test.go). Run under qemu-aarch64 by .ci/run.
func TestSIMDGoldenScores(t *testing.T) {
	defer setSIMD(true)()
	if len(goldenScores) != len(goldenCases) {
		t.Fatalf("%d recorded scores for %d cases", len(goldenScores), len(goldenCases))
	}
	var worst float64
	for i, c := range goldenCases {
		got := goldenScore(t, i)
		var want float64
		if _, err := fmt.Sscan(goldenScores[i], &want); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, math.Abs(got-want))
		if math.Float64bits(got) != math.Float64bits(want) && (runtime.GOARCH == "amd64" || math.Abs(got-want) > goldenOtherArchTol) {
			t.Errorf("%dx%d %v seed %d: fast path %.17g, recorded %s", c.w, c.h, c.f, c.seed, got, goldenScores[i])
		}
	}
	t.Logf("fast path on %s: max |Δ| from the recorded amd64 scores %.3g", runtime.GOARCH, worst)
}
