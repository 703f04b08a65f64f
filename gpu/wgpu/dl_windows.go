//go:build windows

package wgpu

import (
	"strings"
	"syscall"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/windows"
)

const dlSupported = true

// dlOpen loads a path as named; a bare name is looked up in the
// application's directory and the system directories only
// (LOAD_LIBRARY_SEARCH_DEFAULT_DIRS), not in the working directory or
// PATH, which plain LoadLibrary would also search.
func dlOpen(path string) (uintptr, error) {
	if !strings.ContainsAny(path, `\/:`) {
		h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)
		return uintptr(h), err
	}
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

func dlSym(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}

func bindFunc(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
