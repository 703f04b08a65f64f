package batch

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/refcache"
)

// hashingEngine is a BackendEngine that asks for reference hashes
// (RefHasher, as OrchestratorEngine does) and records what it got.
type hashingEngine struct {
	*BackendEngine
	mu     sync.Mutex
	hashes map[uint64]int // RefHash → jobs
	bad    int            // jobs whose RefHash is not HashImage(Ref)
}

func (e *hashingEngine) WantsRefHash() bool { return true }

func (e *hashingEngine) Submit(ctx context.Context, j Job) error {
	e.mu.Lock()
	if j.RefHash == 0 || j.RefHash != refcache.HashImage(j.Ref) {
		e.bad++
	}
	e.hashes[j.RefHash]++
	e.mu.Unlock()
	return e.BackendEngine.Submit(ctx, j)
}

// TestRefHashPassed: an engine that wants reference hashes gets, with
// every job, the hash of its decoded reference (computed once per
// reference by the decoder); one that does not gets 0.
func TestRefHashPassed(t *testing.T) {
	c := makeCorpus(t, 4, 5, false)
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	e := &hashingEngine{BackendEngine: newFakeEngine(t, &fakeBackend{name: "fake"}, 3), hashes: map[uint64]int{}}
	if _, err := Run(context.Background(), Config{Pairs: pairs, Metrics: twoMetrics, Out: filepath.Join(t.TempDir(), "a.jsonl"),
		Engine: e, Decoders: 3}); err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for _, n := range e.hashes {
		jobs += n
	}
	if e.bad != 0 || jobs != 2*c.pairs || len(e.hashes) > 4 {
		t.Fatalf("%d of %d jobs with a wrong hash, %d distinct hashes (4 references)", e.bad, jobs, len(e.hashes))
	}

	plain := &plainRecorder{BackendEngine: newFakeEngine(t, &fakeBackend{name: "fake"}, 3)}
	if _, err := Run(context.Background(), Config{Pairs: pairs, Metrics: twoMetrics, Out: filepath.Join(t.TempDir(), "b.jsonl"),
		Engine: plain, Decoders: 3}); err != nil {
		t.Fatal(err)
	}
	if plain.nonzero != 0 {
		t.Fatalf("%d jobs hashed for an engine that did not ask", plain.nonzero)
	}
}

type plainRecorder struct {
	*BackendEngine
	mu      sync.Mutex
	nonzero int
}

func (e *plainRecorder) Submit(ctx context.Context, j Job) error {
	e.mu.Lock()
	if j.RefHash != 0 {
		e.nonzero++
	}
	e.mu.Unlock()
	return e.BackendEngine.Submit(ctx, j)
}
