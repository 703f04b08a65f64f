//go:build !(linux || darwin || windows)

package capability

// totalRAM is unknown on this OS.
func totalRAM() int64 { return 0 }
