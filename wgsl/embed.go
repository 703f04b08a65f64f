// Package wgsl holds the project's WGSL compute shaders, embedded in the
// binary. Drop a new file here (name.wgsl) and read it with Source("name").
//
// Conventions: workgroup sizes are WGSL `override` constants (set per
// pipeline through webgpu.Constants), never hard-coded numbers.
package wgsl

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

//go:embed *.wgsl
var files embed.FS

// Source returns the text of a shader by name, with or without ".wgsl".
func Source(name string) (string, error) {
	if !strings.HasSuffix(name, ".wgsl") {
		name += ".wgsl"
	}
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("wgsl: no shader %q (have %s): %w", name, strings.Join(Names(), ", "), zenmetrics.ErrUnsupported)
	}
	return string(b), nil
}

// MustSource is Source for shaders known to exist; it panics otherwise.
func MustSource(name string) string {
	s, err := Source(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Names lists the embedded shaders (without ".wgsl"), sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".wgsl"))
	}
	sort.Strings(out)
	return out
}
