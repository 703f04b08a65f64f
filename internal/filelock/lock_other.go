//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package filelock

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// staleLock is the age after which an O_EXCL lock is taken to belong to a
// dead process: this kind of lock is not freed by the OS.
const staleLock = 2 * time.Minute

// tryLock falls back to an O_EXCL file beside path on platforms without
// flock or LockFileEx; path itself is opened for the owner text.
func tryLock(path string) (*Lock, bool, error) {
	excl := path + ".excl"
	for {
		f, err := os.OpenFile(excl, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			pf, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				os.Remove(excl)
				return nil, false, err
			}
			return &Lock{f: pf, path: path, unlock: func() error {
				return errors.Join(pf.Close(), os.Remove(excl))
			}}, false, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		if st, serr := os.Stat(excl); serr == nil && time.Since(st.ModTime()) > staleLock {
			os.Remove(excl)
			continue
		}
		return nil, true, nil
	}
}
