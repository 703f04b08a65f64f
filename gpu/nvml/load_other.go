//go:build !((linux && (amd64 || arm64)) || (windows && (amd64 || arm64)))

package nvml

import (
	"fmt"
	"runtime"

	"github.com/zenmetrics-go/zenmetrics"
)

// load reports NVML as unsupported: there is no NVIDIA management library
// on macOS, and purego does not cover the remaining targets.
func load() (*functions, error) {
	return nil, fmt.Errorf("%w: nvml: not available on %s/%s", zenmetrics.ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}
