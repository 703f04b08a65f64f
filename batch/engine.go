package batch

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
)

// Job is one scoring request: one metric on one decoded pair.
type Job struct {
	// Tag is the batch's handle for the job; the engine returns it unchanged.
	Tag uint64
	// Metric to compute.
	Metric zenmetrics.Metric
	// RefKey identifies the reference image's content (its path, size and
	// modification time): jobs with equal RefKey and Metric may reuse one
	// prepared reference. Engines that hash pixels themselves may ignore it.
	RefKey string
	// RefHash is refcache.HashImage(Ref), computed once per decoded
	// reference when the engine asks for it (RefHasher); 0 otherwise.
	RefHash uint64
	// Ref and Dist are the decoded images. They stay valid and unchanged
	// until the job's result has been returned by Next.
	Ref, Dist *zenmetrics.Image
}

// JobResult is the outcome of a Job: a score or an error, never both.
type JobResult struct {
	Tag     uint64
	Score   zenmetrics.Score
	Backend string        // the backend that produced it ("" if none ran)
	Elapsed time.Duration // prepare (if it ran for this job) + score
	Err     error

	// Timed says the engine split Elapsed: Prepare is the time the job
	// spent getting its prepared reference (preparing it, or waiting for a
	// worker preparing the same one), Prepared whether this job ran
	// Prepare, ScoreTime the time in the backend's Score and Scored
	// whether Score ran. Without Timed the batch books Elapsed as score.
	Timed              bool
	Prepared, Scored   bool
	Prepare, ScoreTime time.Duration
	// Idle is how long the worker that ran the job waited for it to
	// arrive: the scorer starved of decoded images (0 when unknown).
	Idle time.Duration
}

// Engine scores jobs. The batch calls Submit from several goroutines and
// Next from one; every submitted job yields exactly one result from Next,
// in any order. Submit may block while the engine is full. After
// CloseSubmit, Next returns io.EOF once every result has been returned.
// Close releases everything and may be called at any time (it unblocks
// Submit and Next with an error).
type Engine interface {
	Submit(ctx context.Context, j Job) error
	CloseSubmit()
	Next(ctx context.Context) (JobResult, error)
	Close() error
}

// BackendFor returns the backend that computes a metric.
type BackendFor func(m zenmetrics.Metric) (zenmetrics.Backend, error)

// BackendEngineConfig tunes NewBackendEngine.
type BackendEngineConfig struct {
	// Backend gives the backend for each metric (required).
	Backend BackendFor
	// Workers is the number of jobs scored at once (default 1). For a CPU
	// backend that threads inside one scoring, Workers × threads per
	// scoring should match the cores.
	Workers int
	// Options passed to Prepare.
	Options zenmetrics.Options
	// CacheRefs is how many prepared references to keep (default 2 ×
	// Workers); the least recently used unused one is released first.
	CacheRefs int
	// Lanes, when set, replaces Backend with one backend per lane: worker
	// i scores on lane i mod len(Lanes), and each lane prepares its own
	// copy of a reference. For a GPU the lanes are separate devices on
	// one adapter (each with its own device thread), so one device's
	// wait for its results overlaps the others' encoding and the GPU
	// runs their work back to back.
	Lanes []BackendFor
}

// BackendEngine is an Engine over plain zenmetrics.Backends: a pool of
// workers and a cache of prepared references keyed by (RefKey, metric), so
// one reference with many distorted variants is prepared once. Two workers
// asking for the same reference at once share one Prepare.
type BackendEngine struct {
	cfg     BackendEngineConfig
	jobs    chan Job
	results chan JobResult
	done    chan struct{}
	wg      sync.WaitGroup
	warm    sync.WaitGroup // Prewarm's goroutines

	closeSubmit sync.Once
	closeAll    sync.Once

	mu    sync.Mutex
	cache map[prepKey]*prepEntry
	lru   *list.List // of *prepEntry with users == 0, front = most recent
	// first holds, per metric, a channel closed when the first Prepare
	// of that metric (on any lane) has returned: a GPU compiles the
	// metric's kernels then, and the driver caches what it compiled, so
	// the other lanes' first Prepare waits for it instead of compiling
	// the same kernels beside it, each of them slower for the company.
	first map[zenmetrics.Metric]chan struct{}

	upMu sync.Mutex
	// meters are the backends used so far that measure their uploads,
	// with their counters when first used (guarded by upMu).
	meters map[UploadMeter]webgpu.UploadStats
}

type prepKey struct {
	ref    string
	metric zenmetrics.Metric
	lane   int
}

type prepEntry struct {
	key     prepKey
	ready   chan struct{}
	ref     zenmetrics.Reference
	backend string
	err     error
	users   int
	elem    *list.Element
}

// NewBackendEngine starts the workers.
func NewBackendEngine(cfg BackendEngineConfig) (*BackendEngine, error) {
	if cfg.Backend == nil && len(cfg.Lanes) == 0 {
		return nil, errors.New("batch: BackendEngineConfig.Backend is nil")
	}
	for _, l := range cfg.Lanes {
		if l == nil {
			return nil, errors.New("batch: BackendEngineConfig.Lanes holds a nil backend")
		}
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if cfg.CacheRefs < 1 {
		cfg.CacheRefs = 2 * cfg.Workers
	}
	e := &BackendEngine{
		cfg:     cfg,
		jobs:    make(chan Job, cfg.Workers),
		results: make(chan JobResult, cfg.Workers),
		done:    make(chan struct{}),
		cache:   map[prepKey]*prepEntry{},
		lru:     list.New(),
		first:   map[zenmetrics.Metric]chan struct{}{},
	}
	if len(cfg.Lanes) == 0 {
		e.cfg.Lanes = []BackendFor{cfg.Backend}
	}
	e.wg.Add(cfg.Workers)
	for i := 0; i < cfg.Workers; i++ {
		go e.worker(i % len(e.cfg.Lanes))
	}
	go func() {
		e.wg.Wait()
		close(e.results)
	}()
	return e, nil
}

var errEngineClosed = errors.New("batch: engine closed")

// Workers is the number of jobs scored at once.
func (e *BackendEngine) Workers() int { return e.cfg.Workers }

// Submit queues a job, blocking while every worker is busy.
func (e *BackendEngine) Submit(ctx context.Context, j Job) error {
	select {
	case e.jobs <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return errEngineClosed
	}
}

// CloseSubmit says no more jobs will come.
func (e *BackendEngine) CloseSubmit() { e.closeSubmit.Do(func() { close(e.jobs) }) }

// Next returns the next finished job, or io.EOF after the last.
func (e *BackendEngine) Next(ctx context.Context) (JobResult, error) {
	select {
	case r, ok := <-e.results:
		if !ok {
			return JobResult{}, io.EOF
		}
		return r, nil
	case <-ctx.Done():
		return JobResult{}, ctx.Err()
	case <-e.done:
		return JobResult{}, errEngineClosed
	}
}

// Close stops the workers (after their current job) and releases every
// cached reference. It does not close the backends.
func (e *BackendEngine) Close() error {
	e.closeAll.Do(func() {
		close(e.done)
		e.CloseSubmit()
		// Drain so that workers blocked on sending a result can finish.
		go func() {
			for range e.results {
			}
		}()
		e.wg.Wait()
		e.warm.Wait()
		e.mu.Lock()
		for k, ent := range e.cache {
			if ent.ref != nil {
				ent.ref.Release()
			}
			delete(e.cache, k)
		}
		e.lru.Init()
		e.mu.Unlock()
	})
	return nil
}

// Prewarm starts, in the background, what each lane's first Prepare of
// each metric pays once: on a GPU, compiling the metric's kernels (with a
// cold driver shader cache, most of a small-image batch's start-up). Every
// lane prepares and releases a small synthetic reference of each metric,
// all lanes at once, lane l starting with the (l mod metrics)-th metric so
// that the metrics compile side by side from the first moment. Seen on an
// H200 (cold cache): SSIMULACRA2's kernels take ~1.1 s, Butteraugli's
// ~0.2 s, a few pipelines each of which is one core's work for the
// driver, so lanes compiling at once cost little more than one; waiting
// for one lane's compile to warm the driver's cache for the others (the
// gate that jobs use, acquire) made the other lanes start scoring
// SSIMULACRA2 ~0.6 s later. A job's Prepare on a lane queues behind that
// lane's prewarm on the device thread and finds the kernels compiled, so
// prewarmed metrics need no gate. Errors are ignored: a job's own Prepare
// reports its metric's problems. Close waits for it.
func (e *BackendEngine) Prewarm(metrics []zenmetrics.Metric) {
	img := zenmetrics.NewImage(prewarmSide, prewarmSide, zenmetrics.RGB8)
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var todo []zenmetrics.Metric
	e.mu.Lock()
	for _, m := range metrics {
		if _, seen := e.first[m]; seen {
			continue
		}
		open := make(chan struct{})
		close(open)
		e.first[m] = open
		todo = append(todo, m)
	}
	e.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	for l := range e.cfg.Lanes {
		e.warm.Add(1)
		go func() {
			defer e.warm.Done()
			ctx, cancel := e.ctx()
			defer cancel()
			for k := range todo {
				e.prewarmOn(ctx, l, todo[(l+k)%len(todo)], img)
			}
		}()
	}
}

// prewarmSide is the side of Prewarm's synthetic reference: above every
// metric's minimum size (IW-SSIM's 161 px), small enough to cost nothing
// beyond the compile.
const prewarmSide = 192

// prewarmOn prepares and releases img for m on one lane.
func (e *BackendEngine) prewarmOn(ctx context.Context, lane int, m zenmetrics.Metric, img *zenmetrics.Image) {
	defer func() { _ = recover() }()
	if ctx.Err() != nil {
		return
	}
	b, err := e.cfg.Lanes[lane](m)
	if err != nil || b == nil {
		return
	}
	e.noteMeter(b)
	if r, err := b.Prepare(ctx, m, img, e.cfg.Options); err == nil && r != nil {
		r.Release()
	}
}

// Lanes is the number of backends the workers are spread over.
func (e *BackendEngine) Lanes() int { return len(e.cfg.Lanes) }

func (e *BackendEngine) worker(lane int) {
	defer e.wg.Done()
	for {
		t0 := time.Now()
		j, ok := <-e.jobs
		if !ok {
			return
		}
		idle := time.Since(t0)
		select {
		case <-e.done:
			continue // closing: drop the rest
		default:
		}
		r := e.run(j, lane)
		r.Idle = idle
		select {
		case e.results <- r:
		case <-e.done:
		}
	}
}

// ctx is the context given to backends; Close cancels it.
func (e *BackendEngine) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-e.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (e *BackendEngine) run(j Job, lane int) (res JobResult) {
	res.Tag = j.Tag
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			res.Err = &zenmetrics.PanicError{Value: v}
		}
		res.Elapsed = time.Since(start)
	}()
	if j.Ref == nil || j.Dist == nil {
		res.Err = fmt.Errorf("%w: job without images", zenmetrics.ErrBadInput)
		return res
	}
	if err := zenmetrics.CheckSameSize(j.Ref, j.Dist); err != nil {
		res.Err = err
		return res
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res.Timed = true
	ent, created := e.acquire(ctx, j, lane)
	defer e.releaseEntry(ent)
	res.Prepared = created
	res.Prepare = time.Since(start)
	res.Backend = ent.backend
	if ent.err != nil {
		res.Err = ent.err
		return res
	}
	t0 := time.Now()
	s, err := scoreSafely(ctx, ent.ref, j.Dist)
	res.ScoreTime, res.Scored = time.Since(t0), true
	if err == nil && (math.IsNaN(s.Value) || math.IsInf(s.Value, 0)) {
		err = fmt.Errorf("backend %s returned a non-finite score %v", ent.backend, s.Value)
	}
	res.Score, res.Err = s, err
	return res
}

func scoreSafely(ctx context.Context, r zenmetrics.Reference, dist *zenmetrics.Image) (s zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	return r.Score(ctx, dist)
}

// acquire returns the prepared reference for the job, preparing it once;
// created says this call prepared it.
func (e *BackendEngine) acquire(ctx context.Context, j Job, lane int) (ent *prepEntry, created bool) {
	k := prepKey{j.RefKey, j.Metric, lane}
	e.mu.Lock()
	ent, ok := e.cache[k]
	if ok && j.RefKey != "" {
		ent.users++
		if ent.elem != nil {
			e.lru.Remove(ent.elem)
			ent.elem = nil
		}
		e.mu.Unlock()
		<-ent.ready
		return ent, false
	}
	ent = &prepEntry{key: k, ready: make(chan struct{}), users: 1}
	if j.RefKey != "" {
		e.cache[k] = ent
	}
	gate, seen := e.first[j.Metric]
	if !seen {
		gate = make(chan struct{})
		e.first[j.Metric] = gate
	}
	e.mu.Unlock()
	if !seen {
		defer close(gate)
	} else if len(e.cfg.Lanes) > 1 {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	func() {
		defer close(ent.ready)
		defer zenmetrics.Recover(&ent.err)
		b, err := e.cfg.Lanes[lane](j.Metric)
		if err != nil {
			ent.err = err
			return
		}
		e.noteMeter(b)
		ent.backend = b.Name()
		ent.ref, ent.err = b.Prepare(ctx, j.Metric, j.Ref, e.cfg.Options)
	}()
	return ent, true
}

// releaseEntry drops a user; unused entries go on the LRU list, and the
// list is trimmed to CacheRefs. Failed preparations are not kept, so a
// later job retries.
func (e *BackendEngine) releaseEntry(ent *prepEntry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ent.users--
	if ent.users > 0 {
		return
	}
	if ent.err != nil || e.cache[ent.key] != ent {
		if e.cache[ent.key] == ent {
			delete(e.cache, ent.key)
		}
		if ent.ref != nil {
			ent.ref.Release()
		}
		return
	}
	ent.elem = e.lru.PushFront(ent)
	for e.lru.Len() > e.cfg.CacheRefs {
		old := e.lru.Remove(e.lru.Back()).(*prepEntry)
		old.elem = nil
		delete(e.cache, old.key)
		if old.ref != nil {
			old.ref.Release()
		}
	}
}

// UploadMeter is a backend that measures the host → device upload of the
// images it scores apart from the scoring (*webgpu.Backend; see
// webgpu.UploadStats for what exactly is timed). The batch discovers it
// with a type assertion, so that the stage table can show an upload row
// and the score row without it.
type UploadMeter interface {
	UploadStats() webgpu.UploadStats
}

// noteMeter remembers b, with its counters now, the first time it is used
// when it measures its uploads (before its first Prepare, so everything
// this engine does on it is counted). A backend of a type that cannot be a
// map key is not measured (no such backend exists; the check keeps an odd
// one from panicking).
func (e *BackendEngine) noteMeter(b zenmetrics.Backend) {
	m, ok := b.(UploadMeter)
	if !ok || !reflect.TypeOf(m).Comparable() {
		return
	}
	e.upMu.Lock()
	defer e.upMu.Unlock()
	if _, seen := e.meters[m]; seen {
		return
	}
	if e.meters == nil {
		e.meters = map[UploadMeter]webgpu.UploadStats{}
	}
	e.meters[m] = m.UploadStats()
}

// Uploads is the uploads made on the engine's backends since the engine
// first used each, summed over them; ok is false while no backend it used
// measures its uploads (a CPU backend: nothing is uploaded). The counters
// are the backends' own: uploads made on them by someone else at the same
// time are included, and two backends sharing one WebGPU device
// (webgpu.NewBackendOn) each report the device's uploads, so both count
// them.
func (e *BackendEngine) Uploads() (u webgpu.UploadStats, ok bool) {
	e.upMu.Lock()
	defer e.upMu.Unlock()
	for m, base := range e.meters {
		d := m.UploadStats().Sub(base)
		u.Count += d.Count
		u.Total += d.Total
		u.Bytes += d.Bytes
		u.RefCount += d.RefCount
		u.RefTotal += d.RefTotal
		u.RefBytes += d.RefBytes
	}
	return u, len(e.meters) > 0
}

// RefHasher is implemented by engines that key prepared references by a
// hash of the reference's pixels (the orchestrator's): the batch then
// hashes each decoded reference once, on its decoder, and passes the hash
// with every job (Job.RefHash) instead of the engine hashing it per job.
type RefHasher interface {
	WantsRefHash() bool
}
