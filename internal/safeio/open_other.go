//go:build !unix

package safeio

import "os"

// openNonBlocking is a plain open where the OS has no O_NONBLOCK: Windows
// named pipes live in their own namespace (\\.\pipe\) and Stat has already
// refused every non-regular path.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
