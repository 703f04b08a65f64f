package batch

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// OrchestratorEngine adapts an *orchestrator.Orchestrator to Engine: the
// orchestrator routes every job to a backend (GPU or CPU, with its
// fallback ladder and its reference cache keyed by the pixels' XXH3), and
// this adapter adds the backpressure the batch needs (at most MaxInFlight
// jobs submitted and not yet returned) and the end-of-stream signal.
type OrchestratorEngine struct {
	o    *orchestrator.Orchestrator
	slot chan struct{}

	mu      sync.Mutex
	tags    map[orchestrator.TaskID]uint64
	pending int
	closed  bool
	wake    chan struct{}
}

// NewOrchestratorEngine wraps o; maxInFlight ≤ 0 means 64. The caller
// still owns o and closes it after the run.
func NewOrchestratorEngine(o *orchestrator.Orchestrator, maxInFlight int) *OrchestratorEngine {
	if maxInFlight <= 0 {
		maxInFlight = 64
	}
	return &OrchestratorEngine{o: o, slot: make(chan struct{}, maxInFlight),
		tags: map[orchestrator.TaskID]uint64{}, wake: make(chan struct{})}
}

func (e *OrchestratorEngine) signal() {
	close(e.wake)
	e.wake = make(chan struct{})
}

// Submit hands the job to the orchestrator, waiting for a free slot.
func (e *OrchestratorEngine) Submit(ctx context.Context, j Job) error {
	select {
	case e.slot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		<-e.slot
		return errEngineClosed
	}
	id, err := e.o.Submit(orchestrator.Task{Metric: j.Metric, Ref: j.Ref, RefHash: j.RefHash, Dist: j.Dist})
	if err != nil {
		<-e.slot
		return err
	}
	e.tags[id] = j.Tag
	e.pending++
	e.signal()
	return nil
}

// WantsRefHash implements RefHasher: the orchestrator keys its reference
// cache by the pixels' hash.
func (e *OrchestratorEngine) WantsRefHash() bool { return true }

// CloseSubmit says no more jobs will come.
func (e *OrchestratorEngine) CloseSubmit() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		e.signal()
	}
	e.mu.Unlock()
}

// Next returns the next result, or io.EOF after CloseSubmit and the last.
func (e *OrchestratorEngine) Next(ctx context.Context) (JobResult, error) {
	for {
		e.mu.Lock()
		if e.pending == 0 {
			if e.closed {
				e.mu.Unlock()
				return JobResult{}, io.EOF
			}
			wake := e.wake
			e.mu.Unlock()
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return JobResult{}, ctx.Err()
			}
		}
		e.mu.Unlock()
		r, err := e.o.PollAnyBlocking(ctx)
		if errors.Is(err, orchestrator.ErrNoPending) {
			continue // raced with a Submit that had not reached the orchestrator
		}
		if err != nil {
			return JobResult{}, err
		}
		e.mu.Lock() // Submit holds the lock until the id is recorded
		tag, ok := e.tags[r.ID]
		delete(e.tags, r.ID)
		if ok {
			e.pending--
		}
		e.mu.Unlock()
		if !ok {
			continue // not one of ours
		}
		<-e.slot
		return JobResult{Tag: tag, Score: r.Score, Backend: r.Backend, Elapsed: r.Duration, Err: r.Err}, nil
	}
}

// Close marks the engine closed; it does not close the orchestrator.
func (e *OrchestratorEngine) Close() error {
	e.CloseSubmit()
	return nil
}
