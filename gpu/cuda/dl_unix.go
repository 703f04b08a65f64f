//go:build linux && (amd64 || arm64)

package cuda

import "github.com/ebitengine/purego"

const dlSupported = true

// dlOpen loads with RTLD_LOCAL: the driver's and NVRTC's symbols are only
// ever looked up through their handles.
func dlOpen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlSym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }
