//go:build darwin

package sysmem

import "golang.org/x/sys/unix"

// probe is sysctl hw.memsize; what is available is not probed (0).
func probe() (total, available int64) {
	v, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, 0
	}
	return int64(v), 0
}
