//go:build windows && (amd64 || arm64)

package nvml

import "golang.org/x/sys/windows"

// libName is found through the system search path (System32 on current
// drivers).
const libName = "nvml.dll"

func openLibrary() (uintptr, error) {
	h, err := windows.LoadLibraryEx(libName, 0, windows.LOAD_LIBRARY_SEARCH_SYSTEM32|windows.LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)
	return uintptr(h), err
}

func hasSymbol(h uintptr, name string) bool {
	_, err := windows.GetProcAddress(windows.Handle(h), name)
	return err == nil
}
