package main

import (
	"fmt"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
)

// backendInfo describes one --backend value for the usage text.
type backendInfo struct {
	name, desc string
}

// backendList is what --help prints. Keep it in step with openBackend.
var backendList = []backendInfo{
	{"auto", "the best available backend (today: cpu)"},
	{"cpu", "CPU reference implementation (pure Go)"},
	{"webgpu", "WebGPU (alias gpu): not built yet"},
}

// usageError marks errors that are the user's to fix on the command line
// (exit status 2), as opposed to a backend that fails to start (1).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// openBackend opens the backend named on the command line. threads is
// --threads (0: all cores). An unknown name is a *usageError.
func openBackend(name string, threads int) (zenmetrics.Backend, error) {
	switch strings.ToLower(name) {
	case "auto":
		// The WebGPU backend goes here once it exists: try it first and
		// fall back to the CPU when no adapter is found, e.g.
		//	if b, err := openWebGPU(threads); err == nil { return b, nil }
		return cpu.New(cpu.Config{Threads: threads}), nil
	case "cpu":
		return cpu.New(cpu.Config{Threads: threads}), nil
	case "webgpu", "gpu":
		return nil, fmt.Errorf("%w: the %s backend is not built yet; use --backend cpu", zenmetrics.ErrUnsupported, name)
	}
	names := make([]string, len(backendList))
	for i, b := range backendList {
		names[i] = b.name
	}
	return nil, &usageError{fmt.Sprintf("unknown backend %q (known: %s)", name, strings.Join(names, ", "))}
}
