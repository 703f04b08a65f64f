//go:build unix

package safeio

import (
	"os"
	"syscall"
)

// openNonBlocking opens with O_NONBLOCK, which makes open(2) of a FIFO
// without a writer return at once instead of waiting for one; for a
// regular file the flag changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
