//go:build windows

package wgpu

import (
	"syscall"

	"github.com/ebitengine/purego"
)

const dlSupported = true

func dlOpen(path string) (uintptr, error) {
	h, err := syscall.LoadLibrary(path)
	return uintptr(h), err
}

func dlSym(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}

func bindFunc(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
