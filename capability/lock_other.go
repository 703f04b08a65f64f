//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package capability

func syncDir(string) {}
