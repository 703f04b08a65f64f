//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte lies: past any owner text, because
// a LockFileEx range also blocks other handles' reads of those bytes.
const lockOffset = 1 << 32

// tryLock takes an exclusive LockFileEx lock on one byte of path with
// LOCKFILE_FAIL_IMMEDIATELY; Windows releases it when the process dies.
func tryLock(path string) (*Lock, bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	h := windows.Handle(f.Fd())
	ol := &windows.Overlapped{Offset: lockOffset & 0xffffffff, OffsetHigh: lockOffset >> 32}
	err = windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch {
	case err == nil:
		return &Lock{f: f, path: path, unlock: func() error {
			uol := &windows.Overlapped{Offset: lockOffset & 0xffffffff, OffsetHigh: lockOffset >> 32}
			return errors.Join(windows.UnlockFileEx(h, 0, 1, 0, uol), f.Close())
		}}, false, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION), errors.Is(err, windows.ERROR_IO_PENDING):
		f.Close()
		return nil, true, nil
	}
	f.Close()
	return nil, false, err
}
