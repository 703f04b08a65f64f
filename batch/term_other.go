//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly && !windows

package batch

func isTerminal(fd uintptr) bool { return false }
