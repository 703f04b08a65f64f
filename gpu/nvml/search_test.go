//go:build (linux || windows) && (amd64 || arm64)

package nvml

import (
	"strings"
	"testing"
)

// TestLibraryBySonameOnly: NVML is opened by its bare name, so the system
// loader alone finds it (Linux: LD_LIBRARY_PATH and the ld.so cache;
// Windows: the application and system directories), never a path built
// from the executable's location or the working directory (issue #21).
func TestLibraryBySonameOnly(t *testing.T) {
	if strings.ContainsAny(libName, `/\`) {
		t.Fatalf("NVML library %q is a path, not a name for the system loader", libName)
	}
}
