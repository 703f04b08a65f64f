package capability

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestReadOnlyCacheUsesProfile: a valid profile in a directory where no
// file can be created is used as is: no bench, no lock attempted, no
// error. The tests run as root here, where chmod 0555 does not stop
// writes, so the read-only directory is simulated by a lock hook that
// fails as a read-only file system would (and counts its calls); when not
// root, the real chmod 0555 case runs too.
func TestReadOnlyCacheUsesProfile(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	ctx := context.Background()
	if res, err := Warm(ctx, warmCfg(dir, now, b)); err != nil || !res.Benched {
		t.Fatalf("first warm: %+v %v", res, err)
	}
	n := b.prepares.Load()

	var locks atomic.Int64
	cfg := warmCfg(dir, now.Add(time.Hour), b)
	cfg.Store.lock = func(_ context.Context, path string) (func() error, error) {
		locks.Add(1)
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}
	}
	res, err := Warm(ctx, cfg)
	if err != nil || res.Benched || res.Profile == nil || b.prepares.Load() != n {
		t.Fatalf("read-only cache with a fresh profile: %+v %v (prepares %d → %d)", res, err, n, b.prepares.Load())
	}
	if locks.Load() != 0 {
		t.Fatalf("%d lock attempts for a fresh profile; want none", locks.Load())
	}
	if len(res.Profile.Samples(zenmetrics.SSIMULACRA2, ClassCPU)) != 2 {
		t.Fatal("the read-only profile lost its samples")
	}
	// A stale profile there: benched (nothing else to do), the save fails
	// and says so, and the measured profile still comes back.
	cfg.Now = func() time.Time { return now.Add(30 * 24 * time.Hour) }
	res, err = Warm(ctx, cfg)
	if err == nil || res == nil || !res.Benched || res.Profile == nil {
		t.Fatalf("read-only cache with a stale profile: %+v %v", res, err)
	}

	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		res, err := Warm(ctx, warmCfg(dir, now.Add(2*time.Hour), b))
		if err != nil || res.Benched {
			t.Fatalf("chmod 0555 cache: %+v %v", res, err)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(m) > 0 {
			t.Logf("lock files from the first, writable warm: %v", m)
		}
	}
}

// gatedBackend holds its first Prepare until released: a bench that is
// certainly running while a second Warm starts.
type gatedBackend struct {
	*fakeBackend
	once             sync.Once
	started, release chan struct{}
}

func (g *gatedBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	g.once.Do(func() { close(g.started); <-g.release })
	return g.fakeBackend.Prepare(ctx, m, ref, o)
}

// TestConcurrentWarmsBenchOnce: two Warms on one cache at once (as two
// zmwarm processes; flock excludes two opens in one process as well): the
// second waits for the first one's bench and uses its profile instead of
// benching again.
func TestConcurrentWarmsBenchOnce(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeBackend{name: "cpu", nsPerPx: 0.1}
	g := &gatedBackend{fakeBackend: f, started: make(chan struct{}), release: make(chan struct{})}
	ctx := context.Background()
	cfgA := warmCfg(dir, now, f)
	cfgA.Bench.Targets = []BenchTarget{{Class: ClassCPU, Backend: g}}
	type out struct {
		res *WarmResult
		err error
	}
	a := make(chan out, 1)
	go func() { r, err := Warm(ctx, cfgA); a <- out{r, err} }()
	<-g.started // A holds the bench lock and is benching
	b := make(chan out, 1)
	go func() { r, err := Warm(ctx, warmCfg(dir, now, f)); b <- out{r, err} }()
	close(g.release)
	ra, rb := <-a, <-b
	if ra.err != nil || !ra.res.Benched {
		t.Fatalf("first warm: %+v %v", ra.res, ra.err)
	}
	if rb.err != nil || rb.res.Benched || rb.res.Profile == nil {
		t.Fatalf("second warm benched again (or failed): %+v %v", rb.res, rb.err)
	}
	if len(rb.res.Profile.Samples(zenmetrics.SSIMULACRA2, ClassCPU)) != 2 {
		t.Fatal("the second warm did not get the first one's samples")
	}
}
