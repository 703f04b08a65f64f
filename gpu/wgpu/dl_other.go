//go:build !(darwin || linux || freebsd || netbsd || windows)

package wgpu

import (
	"errors"
	"runtime"
)

const dlSupported = false

var errNoDL = errors.New("loading native libraries is not supported on " + runtime.GOOS + "/" + runtime.GOARCH)

func dlOpen(path string) (uintptr, error)           { return 0, errNoDL }
func dlSym(h uintptr, name string) (uintptr, error) { return 0, errNoDL }
func bindFunc(fptr any, sym uintptr)                {}
func newCallback(fn any) uintptr                    { return 0 }
