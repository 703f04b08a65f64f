//go:build !unix

package imageio

// processCPU is not measured on this platform.
func processCPU() (int64, bool) { return 0, false }
