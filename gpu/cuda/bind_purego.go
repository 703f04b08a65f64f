//go:build (linux && (amd64 || arm64)) || (windows && (amd64 || arm64))

package cuda

import "github.com/ebitengine/purego"

func bindFunc(fptr any, sym uintptr) { purego.RegisterFunc(fptr, sym) }
