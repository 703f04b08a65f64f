//go:build darwin

package capability

import "golang.org/x/sys/unix"

// totalRAM is sysctl hw.memsize (bytes, 0 if unknown).
func totalRAM() int64 {
	v, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return int64(v)
}
