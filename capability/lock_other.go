//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package capability

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// lockFile falls back to an O_EXCL lock file on platforms without flock or
// LockFileEx. A lock older than staleLock is assumed to belong to a dead
// process and is broken, since this kind of lock is not freed by the OS.
func lockFile(ctx context.Context, path string) (func() error, error) {
	const staleLock = 2 * time.Minute
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(path+".excl", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() error { return os.Remove(path + ".excl") }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if st, serr := os.Stat(path + ".excl"); serr == nil && time.Since(st.ModTime()) > staleLock {
			os.Remove(path + ".excl")
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

func syncDir(string) {}
