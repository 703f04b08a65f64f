// Package gputest is what the tests of the WebGPU metric packages share:
// the Dawn library lookup of TestMain and one device per test binary that
// skips the test when no WebGPU runtime is present (and fails it under
// CI=true, where a runtime is required).
package gputest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

var (
	once    sync.Once
	shared  *webgpu.Device
	openErr error
)

// Main is a test binary's TestMain: unless the environment names a Dawn
// library, it uses the repository's .tools/libwebgpu_wrapper.so (git-
// ignored; a developer convenience) when present; it runs the tests and
// closes the shared device.
func Main(m *testing.M) {
	if os.Getenv(wgpu.EnvLibrary) == "" {
		if root, ok := repoRoot(); ok {
			p := filepath.Join(root, ".tools", "libwebgpu_wrapper.so")
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

// repoRoot is the nearest directory above the working directory (the
// package's, under go test) holding go.mod.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}

// Device returns the device shared by the binary's tests, opened on first
// use. Without a runtime the test is skipped, except under CI=true where
// that is a failure.
func Device(t testing.TB) *webgpu.Device {
	t.Helper()
	once.Do(func() { shared, openErr = webgpu.Open(context.Background(), nil) })
	if openErr != nil {
		NoRuntime(t, openErr)
	}
	return shared
}

// NoRuntime skips t for a missing runtime (a library that does not load,
// no usable adapter) and fails it under CI=true or for any other error.
func NoRuntime(t testing.TB, err error) {
	t.Helper()
	var le *wgpu.LoadError
	var ne *webgpu.NoAdapterError
	if os.Getenv("CI") == "true" || !(errors.As(err, &le) || errors.As(err, &ne)) {
		t.Fatalf("no WebGPU runtime: %v", err)
	}
	t.Skipf("no WebGPU runtime (set CI=true to make this fail): %v", err)
}
