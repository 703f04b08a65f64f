package batch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zenmetrics-go/zenmetrics/internal/filelock"
)

// ErrOutputLocked is matched (errors.Is) when another run, or a merge,
// is writing the same output.
var ErrOutputLocked = errors.New("output is being written by another run")

// OutputLockedError names the output and, when it wrote itself into the
// lock file, the holder ("pid 123 on host since ...: zmscore writing x").
type OutputLockedError struct {
	Out    string
	Holder string
}

func (e *OutputLockedError) Error() string {
	h := e.Holder
	if h == "" {
		h = "holder unknown"
	}
	return fmt.Sprintf("%s: %v (%s); wait for it to finish, or write elsewhere with another --out", e.Out, ErrOutputLocked, h)
}

func (e *OutputLockedError) Unwrap() error { return ErrOutputLocked }

// lockPath is the lock file of an output: a sidecar rather than the output
// itself, because outputs are replaced by rename (--retry-failed rewrites,
// Parquet, merge), which would leave a lock on the old file.
func lockPath(out string) string { return out + ".lock" }

// lockOutput takes the exclusive lock of out for one run or merge, without
// waiting: two writers of one output tear its rows (issue #21: 18 torn
// lines, 29 of 120 rows lost), so the second one stops at once, naming the
// first. The OS frees the lock when its process dies, kill -9 included;
// the lock file itself stays, like the checkpoint beside it.
func lockOutput(out string) (*filelock.Lock, error) {
	l, err := filelock.TryLock(lockPath(out))
	if err != nil {
		var he *filelock.HeldError
		if errors.As(err, &he) {
			return nil, &OutputLockedError{Out: out, Holder: he.Holder}
		}
		return nil, fmt.Errorf("locking %s: %w", out, err)
	}
	// Best effort: a holder without its name still excludes.
	_ = l.WriteOwner(fmt.Sprintf("%s writing %s", filepath.Base(os.Args[0]), out))
	return l, nil
}
