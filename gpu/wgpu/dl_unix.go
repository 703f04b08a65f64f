//go:build darwin || linux || freebsd || netbsd

package wgpu

import "github.com/ebitengine/purego"

const dlSupported = true

func dlOpen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlSym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

func bindFunc(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
