package ssim2

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
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
	metrictest.CheckGolden(t, "", goldenCases, goldenScores, goldenOtherArchTol, goldenScore(t))
}
