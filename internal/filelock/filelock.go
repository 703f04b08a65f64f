// Package filelock is the exclusive, process-wide file lock that the
// capability cache and the batch outputs share: flock(2) on Unix,
// LockFileEx on Windows (both released by the OS when the process dies,
// so a kill -9 never leaves a stale lock), and an O_EXCL file with a
// staleness timeout where neither exists.
//
// A lock file may carry its holder's identity (WriteOwner) so that a
// second process refused the lock can say who holds it.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrHeld is matched (errors.Is) by the error TryLock returns when another
// process, or another open of the file in this one, holds the lock.
var ErrHeld = errors.New("lock held by another process")

// HeldError says which lock file is held and by whom (the holder's
// WriteOwner text; empty when it wrote none).
type HeldError struct {
	Path   string
	Holder string
}

func (e *HeldError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("%s: %v", e.Path, ErrHeld)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Path, ErrHeld, e.Holder)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock is a held lock.
type Lock struct {
	f      *os.File
	path   string
	unlock func() error
}

// Acquire takes the lock on path (created if missing), waiting for a
// holder to let go; the wait honours ctx.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	wait := time.Millisecond
	for {
		l, err := TryLock(path)
		if !errors.Is(err, ErrHeld) {
			return l, err
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

// TryLock takes the lock on path (created if missing) without waiting; a
// held lock is a *HeldError naming the holder.
func TryLock(path string) (*Lock, error) {
	l, held, err := tryLock(path)
	if err != nil {
		return nil, err
	}
	if held {
		return nil, &HeldError{Path: path, Holder: Owner(path)}
	}
	return l, nil
}

// WriteOwner records this process as the holder: pid, host, start time
// and what for (e.g. "zmscore --out x.jsonl").
func (l *Lock) WriteOwner(what string) error {
	host, _ := os.Hostname()
	s := fmt.Sprintf("pid %d on %s since %s: %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339), what)
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(s), 0)
	return err
}

// Unlock releases the lock. The lock file stays: removing it would let a
// process that opened it just before take a lock on an unlinked file while
// a third creates a new one.
func (l *Lock) Unlock() error {
	if l == nil || l.unlock == nil {
		return nil
	}
	u := l.unlock
	l.unlock = nil
	return u()
}

// Owner is the holder text of a lock file ("" when none was written).
// It reads at most 512 bytes and keeps one printable line, so a lock
// file's content never floods a message.
func Owner(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	s, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
}
