//go:build windows && (amd64 || arm64)

package cuda

import "golang.org/x/sys/windows"

const dlSupported = true

// dlOpen searches the application and system directories for a bare name
// (nvcuda.dll lives in System32), never the working directory.
func dlOpen(path string) (uintptr, error) {
	h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_LIBRARY_SEARCH_DEFAULT_DIRS|windows.LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)
	return uintptr(h), err
}

func dlSym(h uintptr, name string) (uintptr, error) {
	return windows.GetProcAddress(windows.Handle(h), name)
}
