package capability

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Store reads and writes profiles in one cache directory. Writes hold an
// exclusive lock on a file next to the profile and go to a temporary file
// that is synced and renamed over the old one, so two processes (or two
// goroutines) sharing a cache directory never see or leave a half-written
// profile. Reads take no lock: a rename replaces the file whole, so a
// reader sees the old profile or the new one. That is what lets a
// read-only cache directory (the README's Kubernetes recipe mounts one)
// serve its profile without trying to create a lock file there.
type Store struct {
	// Dir holds the profiles; "" means DefaultCacheDir.
	Dir string
	// LockTimeout bounds the wait for another process's lock (default 30 s).
	LockTimeout time.Duration

	// lock takes a lock file (nil: lockFile); tests inject a failing one
	// to stand for a read-only directory, since they run as root here,
	// where chmod 0555 does not stop writes.
	lock func(ctx context.Context, path string) (func() error, error)
}

func (s *Store) lockFn() func(ctx context.Context, path string) (func() error, error) {
	if s.lock != nil {
		return s.lock
	}
	return lockFile
}

// dir resolves the cache directory.
func (s *Store) dir() (string, error) {
	if s.Dir != "" {
		return s.Dir, nil
	}
	return DefaultCacheDir()
}

// Path is the profile file of the machine with this hash.
func (s *Store) Path(hash string) (string, error) {
	d, err := s.dir()
	if err != nil {
		return "", err
	}
	return ProfilePath(d, hash), nil
}

// Load reads the profile of the machine with this hash, without a lock
// (see Store). Errors wrap
// ErrNoProfile, ErrCorruptProfile, ErrSchemaMismatch or ErrForeignProfile
// when the file is missing or unusable (re-measure), or are I/O errors.
func (s *Store) Load(ctx context.Context, hash string) (*Profile, error) {
	path, err := s.Path(hash)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return readProfile(path, hash)
}

// Save writes p atomically under the lock.
func (s *Store) Save(ctx context.Context, p *Profile) error {
	path, err := s.Path(p.MachineHash)
	if err != nil {
		return err
	}
	return s.withLock(ctx, path, func() error { return writeAtomic(path, p) })
}

// Update runs a read-modify-write under one lock: fn receives the profile on
// disk (nil when missing or unusable, with the reason in loadErr) and returns
// the profile to write, or nil to write nothing. This is how concurrent
// processes merge what they learn (an OOM cell from each) instead of the
// last writer erasing the first.
func (s *Store) Update(ctx context.Context, hash string, fn func(cur *Profile, loadErr error) (*Profile, error)) error {
	path, err := s.Path(hash)
	if err != nil {
		return err
	}
	return s.withLock(ctx, path, func() error {
		cur, lerr := readProfile(path, hash)
		if lerr != nil && !isUnusable(lerr) {
			return lerr
		}
		next, err := fn(cur, lerr)
		if err != nil || next == nil {
			return err
		}
		return writeAtomic(path, next)
	})
}

// isUnusable reports whether err means "the file is there but must be
// re-measured" (or is simply missing) rather than an I/O failure.
func isUnusable(err error) bool {
	return errors.Is(err, ErrNoProfile) || errors.Is(err, ErrCorruptProfile) ||
		errors.Is(err, ErrSchemaMismatch) || errors.Is(err, ErrForeignProfile)
}

// IsUnusable reports whether a Load error means the profile must be
// re-measured (missing, corrupt, other schema, other machine).
func IsUnusable(err error) bool { return isUnusable(err) }

func (s *Store) withLock(ctx context.Context, path string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("capability: cache directory: %w", err)
	}
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	unlock, err := s.lockFn()(lctx, path+".lock")
	if err != nil {
		return fmt.Errorf("capability: lock %s: %w", path, err)
	}
	defer unlock()
	return fn()
}

// benchWait bounds the wait for another process's bench (a quick bench
// takes about half a minute on 2 cores; a time-limited one can take more).
const benchWait = 15 * time.Minute

// benchLock takes the machine's bench lock (a file beside the profile,
// apart from the write lock so that a bench holding it can still save),
// waiting for a bench in another process to finish.
func (s *Store) benchLock(ctx context.Context, hash string) (func() error, error) {
	path, err := s.Path(hash)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, benchWait)
	defer cancel()
	return s.lockFn()(lctx, path+".bench.lock")
}

func readProfile(path, hash string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoProfile, path)
	}
	if err != nil {
		return nil, fmt.Errorf("capability: read %s: %w", path, err)
	}
	p, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.MachineHash != hash {
		return nil, fmt.Errorf("%w: %s has machine_hash %s, this machine is %s", ErrForeignProfile, path, p.MachineHash, hash)
	}
	if MachineHash(p.CPU, p.GPUs) != p.MachineHash {
		return nil, fmt.Errorf("%w: %s: its [cpu]/[[gpu]] do not hash to its machine_hash", ErrForeignProfile, path)
	}
	return p, nil
}

// writeAtomic writes p to a temporary file in the same directory, syncs it
// and renames it over path, so a reader sees the old or the new profile and
// never a mixture, even if this process dies half-way.
func writeAtomic(path string, p *Profile) (err error) {
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".capability_*.tmp")
	if err != nil {
		return fmt.Errorf("capability: temp file: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("capability: write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("capability: sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("capability: close %s: %w", tmp, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("capability: chmod %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("capability: rename %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}
