//go:build !((linux && (amd64 || arm64)) || (windows && (amd64 || arm64)))

package cuda

import (
	"fmt"
	"runtime"
)

// There is no CUDA driver on macOS, and purego does not cover the other
// targets this module builds for.
const dlSupported = false

func dlOpen(string) (uintptr, error) {
	return 0, fmt.Errorf("no CUDA on %s/%s", runtime.GOOS, runtime.GOARCH)
}

func dlSym(uintptr, string) (uintptr, error) {
	return 0, fmt.Errorf("no CUDA on %s/%s", runtime.GOOS, runtime.GOARCH)
}
