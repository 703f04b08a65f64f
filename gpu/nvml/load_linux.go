//go:build linux && (amd64 || arm64)

package nvml

import "github.com/ebitengine/purego"

// libName is the soname the driver installs (the unversioned .so exists
// only with development packages).
const libName = "libnvidia-ml.so.1"

func openLibrary() (uintptr, error) {
	return purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func hasSymbol(h uintptr, name string) bool {
	_, err := purego.Dlsym(h, name)
	return err == nil
}
