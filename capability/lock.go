package capability

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics/internal/filelock"
)

// lockFile takes the exclusive lock on path (created if missing), waiting
// as long as ctx allows, and returns the function that releases it. It is
// internal/filelock's lock, which the batch outputs use too: flock or
// LockFileEx, freed by the OS when the process dies, so a crashed writer
// never leaves the cache locked.
func lockFile(ctx context.Context, path string) (func() error, error) {
	l, err := filelock.Acquire(ctx, path)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}
