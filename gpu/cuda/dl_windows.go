//go:build windows && (amd64 || arm64)

package cuda

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

const dlSupported = true

// dlOpen searches the application and system directories for a bare name
// (nvcuda.dll lives in System32), never the working directory; a full path
// (NVRTC under %CUDA_PATH%) also lets the DLL's own directory serve its
// dependencies (nvrtc-builtins), which Windows only allows for full paths.
func dlOpen(path string) (uintptr, error) {
	flags := uintptr(windows.LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)
	if filepath.IsAbs(path) {
		flags |= windows.LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR
	}
	h, err := windows.LoadLibraryEx(path, 0, flags)
	return uintptr(h), err
}

func dlSym(h uintptr, name string) (uintptr, error) {
	return windows.GetProcAddress(windows.Handle(h), name)
}
