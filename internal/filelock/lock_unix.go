//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock on path with LOCK_NB. flock locks
// belong to the open file description, so a second open in this process
// conflicts too, and the kernel drops the lock when the process dies.
func tryLock(path string) (*Lock, bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	fd := int(f.Fd())
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return &Lock{f: f, path: path, unlock: func() error {
			return errors.Join(unix.Flock(fd, unix.LOCK_UN), f.Close())
		}}, false, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, true, nil
	}
	f.Close()
	return nil, false, err
}
