//go:build windows

package capability

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive LockFileEx lock on the first byte of path
// (created if missing), polling with LOCKFILE_FAIL_IMMEDIATELY so the wait
// honours ctx. Windows releases the lock when the process dies.
func lockFile(ctx context.Context, path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	h := windows.Handle(f.Fd())
	wait := time.Millisecond
	for {
		ol := new(windows.Overlapped)
		err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
		if err == nil {
			return func() error {
				uerr := windows.UnlockFileEx(h, 0, 1, 0, new(windows.Overlapped))
				return errors.Join(uerr, f.Close())
			}, nil
		}
		if !errors.Is(err, windows.ERROR_LOCK_VIOLATION) && !errors.Is(err, windows.ERROR_IO_PENDING) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// syncDir is a no-op: Windows cannot open a directory for syncing, and
// MoveFileEx (os.Rename) is already atomic on NTFS.
func syncDir(string) {}
