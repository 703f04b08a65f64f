//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package capability

import "os"

// syncDir makes the rename durable; failure only weakens durability after
// a power cut, so it is ignored.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
