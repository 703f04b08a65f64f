//go:build !(darwin || linux || freebsd || netbsd || openbsd || windows)

package webgpu

import "time"

// processCPU cannot be read here: waits fall back to the wall clock.
func processCPU() (time.Duration, bool) { return 0, false }
