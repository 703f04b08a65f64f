// Package cudatest gives the CUDA tests one shared device per test binary,
// skipping cleanly (and saying why) where there is none, and failing
// instead under ZENMETRICS_REQUIRE_CUDA=1, which the device scripts set so
// that a skip can never pass for a run.
package cudatest

import (
	"os"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
)

// EnvRequire makes a missing CUDA device a test failure.
const EnvRequire = "ZENMETRICS_REQUIRE_CUDA"

// Required reports whether tests must fail without CUDA.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

var (
	once sync.Once
	dev  *cuda.Device
	err  error
)

// Device returns the test binary's device 0 (kept open for the process).
func Device(t testing.TB) *cuda.Device {
	t.Helper()
	once.Do(func() {
		var n int
		if n, err = cuda.DeviceCount(); err == nil && n == 0 {
			err = errNoDevice
		}
		if err == nil {
			dev, err = cuda.Open(0)
		}
	})
	if err != nil {
		Skip(t, err)
	}
	return dev
}

type noDevice struct{}

func (noDevice) Error() string { return "the CUDA driver loaded but reports no device" }

var errNoDevice error = noDevice{}

// Skip skips t because CUDA is unusable (err says why), or fails it under
// ZENMETRICS_REQUIRE_CUDA=1.
func Skip(t testing.TB, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("CUDA required (%s=1): %v", EnvRequire, err)
	}
	t.Skipf("no CUDA device: %v", err)
}
