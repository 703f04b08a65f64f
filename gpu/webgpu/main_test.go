package webgpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

func TestMain(m *testing.M) {
	// Developer convenience: the repository keeps its Dawn library in
	// .tools/ (git-ignored); use it unless the environment says otherwise.
	if os.Getenv(wgpu.EnvLibrary) == "" {
		if p, err := filepath.Abs("../../.tools/libwebgpu_wrapper.so"); err == nil {
			if _, err := os.Stat(p); err == nil {
				os.Setenv(wgpu.EnvLibrary, p)
			}
		}
	}
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

var (
	sharedOnce sync.Once
	shared     *Device
	sharedErr  error
)

// device returns one device shared by the tests. Without a runtime the test
// is skipped, except under CI=true where that is a failure.
func device(t testing.TB) *Device {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Open(context.Background(), nil) })
	if sharedErr != nil {
		noRuntime(t, sharedErr)
	}
	return shared
}

func noRuntime(t testing.TB, err error) {
	t.Helper()
	var le *wgpu.LoadError
	var ne *NoAdapterError
	if os.Getenv("CI") == "true" || !(errors.As(err, &le) || errors.As(err, &ne)) {
		t.Fatalf("no WebGPU runtime: %v", err)
	}
	t.Skipf("no WebGPU runtime (set CI=true to make this fail): %v", err)
}
