// Package orchestrator turns tasks (a metric, a reference, a distorted
// image) into results, using every compute path the machine has: a worker
// per GPU adapter (two for a WebGPU backend, whose scores then overlap the
// next upload with the current GPU work: Backend.ConcurrentScores) and a
// pool of CPU workers. For each task it asks the
// reference cache whether the reference is already prepared, asks the
// chooser which rung of the fallback ladder to start on (from the capability
// profile's measured costs, the live free memory and the recorded
// out-of-memory cells), runs the attempt on that backend's worker and, on
// an out-of-memory failure, records the cell, persists the profile and moves
// down the ladder.
//
// It owns every goroutine of the library. Every task ends in exactly one
// result: a score, its error, or a cancellation; a panic inside a metric
// becomes that task's *zenmetrics.PanicError.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/ladder"
	"github.com/zenmetrics-go/zenmetrics/refcache"
)

// Errors of the orchestrator itself; metric and backend errors pass
// through unchanged (wrapped) so errors.Is keeps working on them.
var (
	// ErrClosed: the orchestrator was closed. Tasks still queued at Close
	// end with an error matching both ErrClosed and context.Canceled.
	ErrClosed = errors.New("orchestrator: closed")
	// ErrNoPending: PollAnyBlocking was called with nothing submitted and
	// no result waiting, so it would block forever.
	ErrNoPending = errors.New("orchestrator: no pending tasks")
	// ErrReferenceDropped: the task named a RefHandle that was dropped.
	ErrReferenceDropped = refcache.ErrDropped
	// ErrNoBackend: discovery found nothing to run on.
	ErrNoBackend = errors.New("orchestrator: no backend available")
)

// TaskID correlates a result with its task. Zero asks Submit/RunAll to
// assign one; callers should either set every ID or none.
type TaskID uint64

// RefHandle names a reference prepared ahead with UploadReference.
type RefHandle = refcache.Handle

// Task is one comparison.
type Task struct {
	ID     TaskID
	Metric zenmetrics.Metric
	// Ref is the reference image; leave it nil and set RefHandle to use a
	// reference uploaded ahead (the handle's Options then apply, and
	// Options below is ignored).
	Ref       *zenmetrics.Image
	RefHandle RefHandle
	// RefHash, when not 0, is refcache.HashImage(Ref), computed by a
	// caller that submits one decoded reference with many distorted
	// images (the batch): the orchestrator then does not hash Ref again
	// for every task. Hashing a 16 MP reference (48 MB of xxh3) on each
	// submit capped a two-GPU batch at about 100 tasks/s. Tasks with the
	// same RefHash share a prepared reference, so it must be the hash of
	// Ref's current pixels; 0: the orchestrator hashes Ref itself.
	RefHash uint64
	Dist    *zenmetrics.Image
	// Options are the metric's options. Options.Mode is chosen by the
	// ladder rung and any value set here is ignored.
	Options zenmetrics.Options
}

// Result is the outcome of one task.
type Result struct {
	ID    TaskID
	Score zenmetrics.Score
	// Err is nil on success. Cancellation matches context.Canceled (or
	// DeadlineExceeded); a panic in a metric is a *zenmetrics.PanicError;
	// a task no rung could run matches ladder.ErrExhausted.
	Err error
	// Backend is the name of the backend of the last attempt.
	Backend string
	// Rung is where the task ended: the rung that scored it, failed it or
	// held it when it was cancelled; ladder.FullyExhausted when no rung
	// could run it or it never reached one (invalid input).
	Rung ladder.Rung
	// Attempts counts rungs on which a backend actually ran.
	Attempts int
	// Trace lists every rung skipped, failed or won, with the reason.
	Trace []ladder.Step
	// Wait is the time from submission to the first attempt; Duration is
	// the time from the first attempt to the result.
	Wait, Duration time.Duration
	// CacheHit is true when the prepared reference was reused.
	CacheHit bool
}

// PoolConfig can be changed while tasks run (SetPoolConfig).
type PoolConfig struct {
	// MaxParallelCPU is the number of CPU workers (0: keep).
	MaxParallelCPU int
	// VRAMSafetyFloorMiB must stay free on a GPU after a task's predicted
	// use, for GPUs shared with a desktop or another job.
	VRAMSafetyFloorMiB int64
	// VRAMSampleInterval is how long a live free-VRAM reading is reused
	// (NVML calls are cheap but not free). 0: 100 ms.
	VRAMSampleInterval time.Duration
	// VRAMStall is how long a GPU task whose memory is not free at the
	// moment it would start waits for it (another process may be about to
	// finish) before moving down the ladder. 0: do not wait.
	VRAMStall time.Duration
}

// Config configures New. The zero value is usable.
type Config struct {
	// CacheDir holds the capability profile ("": capability.DefaultCacheDir).
	CacheDir string
	// CacheValidity is how old a profile may be before Warm re-measures it
	// (0: capability.DefaultCacheValidity, 7 days).
	CacheValidity time.Duration
	// OomRetry: ladder.Fallback (default) or ladder.NoFallback.
	OomRetry ladder.OomRetry
	// MaxParallelCPU is the number of CPU workers (0: runtime.NumCPU()).
	MaxParallelCPU int
	// CPUThreads is the threads each CPU task may use (0: 1 when there are
	// several CPU workers, which is the throughput setting for batches).
	CPUThreads int
	// DisableGPU uses the CPU only.
	DisableGPU bool
	// GPUs restricts the GPU slots to these GPU ordinals: WebGPU adapter i
	// of the probe's GPU list (zmprobe's order) and CUDA device i (the
	// probe's "cuda" section); nil: every GPU. An ordinal must exist in at
	// least one of the two (a multi-GPU NVIDIA host shows one WebGPU
	// adapter, the first GPU, and every GPU through CUDA). It exists to
	// compare one GPU with several on the same machine (issue #19's
	// one-vs-two runs) and to keep a GPU free for other work.
	GPUs []int
	// ReadOnlyProfile never writes OOM cells to the profile file (they
	// then last only for this process); Warm and Bench still write.
	ReadOnlyProfile bool
	// Logger receives warnings and debug traces (nil: discarded).
	Logger *slog.Logger
	// RefCacheWindow is how many recent references are kept prepared
	// (0: refcache.DefaultWindow, 32).
	RefCacheWindow int
	// RefCacheCPUBytes bounds prepared references on the CPU
	// (0: a quarter of RAM, at most 4 GiB).
	RefCacheCPUBytes int64
	// RefCacheGPUFraction bounds prepared references on a GPU as a share
	// of its memory (0: 0.25).
	RefCacheGPUFraction float64
	// BenchTimeLimit is the soft limit of Warm's quick bench (0:
	// capability.DefaultBenchTimeLimit, 15 s).
	BenchTimeLimit time.Duration
	// BenchMetrics are the metrics Warm measures (nil: every metric a
	// backend supports).
	BenchMetrics []zenmetrics.Metric
	// BenchSides are the square sizes Warm measures (nil: 512, 1024,
	// 2048, 4096; the CPU stops at 2048).
	BenchSides []int
	// BenchRuns and BenchRunBudget override the bench's timed runs per
	// cell and the time after which a cell stops repeating (0: the
	// capability defaults, 3 runs, 5 on a GPU, and 250 ms). A slow,
	// thorough bench (more runs, a longer budget) is the yardstick
	// zmwarm's --compare-routing checks the quick bench's routing against.
	BenchRuns      int
	BenchRunBudget time.Duration
	// Pool is the initial pool configuration.
	Pool PoolConfig
	// Balance shares tasks among GPU slots (default BalanceAdaptive).
	Balance Balance
	// GPUQueueSweetSpot is the queue depth (tasks queued or running) past
	// which a GPU slot counts as backed up: when every GPU slot is, a task
	// the CPU is predicted to finish sooner goes to the CPU
	// (backpressure). 0: measured per slot, the smallest depth at which
	// its throughput saturates (twice its workers until 32 tasks ran).
	GPUQueueSweetSpot int

	// Test hooks, unexported so only this package's tests can set them.
	discover func(ctx context.Context, cfg Config, rep *capability.Report) ([]backendSlot, error)
	probe    func(ctx context.Context) (*capability.Report, error)
	now      func() time.Time
	mut      mutations // rules switched off by the mutation checks
}

// Orchestrator schedules tasks over the machine's backends. All methods
// are safe for concurrent use.
type Orchestrator struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	report *capability.Report
	store  *capability.Store
	hash   string

	slots []*slot
	cpu   *slot
	gpus  []*slot

	ladder *ladder.Ladder
	cache  *refcache.Cache

	profMu  sync.RWMutex
	profile *capability.Profile // copy-on-write; nil: defaults

	poolMu sync.Mutex
	pool   PoolConfig

	rr        atomic.Uint64 // BalanceRoundRobin's turn
	nextID    atomic.Uint64
	closed    atomic.Bool
	closeOnce sync.Once
	workers   sync.WaitGroup

	resMu     sync.Mutex
	results   []Result
	resWake   chan struct{} // closed and replaced on each new result
	submitted int           // Submit tasks whose result is not queued yet

	hMu     sync.Mutex
	handles map[RefHandle]*handleMeta
}

// handleMeta is what a RefHandle stands for.
type handleMeta struct {
	metric zenmetrics.Metric
	ref    *zenmetrics.Image
	opt    zenmetrics.Options
	hash   uint64
	slot   *slot
	rung   ladder.Rung
}

// New probes the machine, discovers the backends and loads the capability
// profile if there is a usable one. It does not bench: call Warm for that
// (a missing profile only means the chooser uses its defaults).
func New(ctx context.Context, cfg Config) (o *Orchestrator, err error) {
	defer func() {
		if err != nil {
			o = nil // never hand out a half-built orchestrator
		}
	}()
	defer zenmetrics.Recover(&err)
	o = &Orchestrator{cfg: cfg, log: cfg.Logger, now: cfg.now, resWake: make(chan struct{}), handles: map[RefHandle]*handleMeta{}}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	probe := cfg.probe
	if probe == nil {
		// With GPUs disabled the report has none, so the profile is a
		// CPU-only one of its own (another machine hash): the numbers of a
		// GPU run would not describe this configuration anyway.
		probe = func(ctx context.Context) (*capability.Report, error) {
			return capability.Probe(ctx, capability.ProbeOptions{SkipGPU: cfg.DisableGPU})
		}
	}
	if o.report, err = probe(ctx); err != nil || o.report == nil {
		// Without a probe we know nothing about GPUs: run on the CPU with
		// an anonymous profile rather than not at all.
		o.log.Warn("capability probe failed; using the CPU with default costs", "err", err)
		o.report = &capability.Report{}
	}
	for _, p := range o.report.Problems {
		o.log.Debug("probe", "problem", p)
	}
	o.hash = capability.ReportHash(o.report)
	o.store = &capability.Store{Dir: cfg.CacheDir}
	o.loadProfile(ctx)

	discover := cfg.discover
	if discover == nil {
		discover = discoverBackends
	}
	bslots, err := discover(ctx, cfg, o.report)
	if err != nil {
		return nil, err
	}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.pool = cfg.Pool
	if o.pool.MaxParallelCPU <= 0 {
		o.pool.MaxParallelCPU = cfg.MaxParallelCPU
	}
	if o.pool.MaxParallelCPU <= 0 {
		o.pool.MaxParallelCPU = runtime.NumCPU()
	}
	for _, b := range bslots {
		s := newSlot(o, b)
		o.slots = append(o.slots, s)
		if b.gpu {
			o.gpus = append(o.gpus, s)
		} else if o.cpu == nil {
			o.cpu = s
		}
	}
	if len(o.slots) == 0 {
		return nil, ErrNoBackend
	}
	o.ladder = &ladder.Ladder{Retry: cfg.OomRetry, Recorder: o}
	o.cache = refcache.New(refcache.Config{Window: cfg.RefCacheWindow, Budget: o.cacheBudget})
	for _, s := range o.slots {
		n := 1
		if s == o.cpu {
			n = o.pool.MaxParallelCPU
		} else if b := s.backendNow(); b != nil {
			n = concurrentScores(b)
		}
		s.setLimit(n)
	}
	names := make([]string, len(o.slots))
	for i, s := range o.slots {
		names[i] = s.name
	}
	o.log.Debug("orchestrator ready", "backends", names, "cpu_workers", o.pool.MaxParallelCPU, "machine", o.hash)
	return o, nil
}

// cacheBudget is the byte budget of prepared references per backend.
func (o *Orchestrator) cacheBudget(backend string) int64 {
	for _, s := range o.slots {
		if s.name != backend {
			continue
		}
		if s.gpu {
			frac := o.cfg.RefCacheGPUFraction
			if frac <= 0 {
				frac = 0.25
			}
			total := s.heapBytes
			if _, t, ok := s.sampleFree(0); ok {
				total = t
			}
			if total <= 0 {
				return 1 << 30
			}
			return int64(frac * float64(total))
		}
	}
	if o.cfg.RefCacheCPUBytes > 0 {
		return o.cfg.RefCacheCPUBytes
	}
	ram := o.report.CPU.RAMMiB << 20
	if ram <= 0 {
		return 1 << 30
	}
	return min(ram/4, 4<<30)
}

// Close cancels what is queued (each such task ends with an error matching
// ErrClosed and context.Canceled), waits for running attempts to return,
// releases every prepared reference and closes the backends. Results not
// yet polled stay pollable. Close is idempotent.
func (o *Orchestrator) Close() error {
	var errs []error
	o.closeOnce.Do(func() {
		o.closed.Store(true)
		o.cancel()
		for _, s := range o.slots {
			s.close()
		}
		o.workers.Wait()
		o.cache.Close()
		for _, s := range o.slots {
			if err := s.closeBackend(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", s.name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// job is a task in flight.
type job struct {
	task      Task
	ctx       context.Context
	sink      func(Result)
	batch     any // identifies the RunAll/RunSingle call, for sweeps
	plan      *ladder.Plan
	rung      ladder.Rung
	predNs    float64
	ref       *zenmetrics.Image // the reference pixels (from Task or handle)
	meta      *handleMeta       // non-nil for handle tasks
	hash      uint64
	hashed    bool
	submitted time.Time
	started   time.Time
	upload    *uploadReply // non-nil for UploadReference jobs
	finished  atomic.Bool
}

// uploadReply carries an UploadReference job's outcome back.
type uploadReply struct {
	handle RefHandle
	entry  *refcache.Entry
}

func (o *Orchestrator) assignID(t *Task) {
	if t.ID == 0 {
		t.ID = TaskID(o.nextID.Add(1))
	}
}

// start validates a task, plans it and queues it; invalid or cancelled
// tasks end at once, through the same sink, so the caller's bookkeeping
// (one result per task) holds whatever happens.
//
// memo (may be nil) maps reference images already hashed in the same call
// to their hash: RunAll's tasks often share one *Image, and the caller may
// not change its pixels while those tasks run, so one hash serves them all.
func (o *Orchestrator) start(ctx context.Context, t Task, sink func(Result), batch any, memo map[*zenmetrics.Image]uint64) {
	j := &job{task: t, ctx: ctx, sink: sink, batch: batch, submitted: o.now(), rung: ladder.FullyExhausted}
	defer func() {
		if v := recover(); v != nil {
			o.finish(j, Result{Err: &zenmetrics.PanicError{Value: v}})
		}
	}()
	if err := o.prepareJob(j); err != nil {
		o.finish(j, Result{Err: err})
		return
	}
	// Hash the reference here, on the submitting goroutine, not on the
	// worker: a 16 MP reference is ~48 MB of xxh3 (~3 ms), which on a GPU
	// worker would sit between two kernels' worth of work and eat most of
	// what the reference cache saves. Here it overlaps the worker's
	// previous task.
	if !j.hashed && j.ref != nil && t.RefHash != 0 && j.ref == t.Ref {
		j.hash, j.hashed = t.RefHash, true
	}
	if !j.hashed && j.ref != nil {
		if h, ok := memo[j.ref]; ok {
			j.hash, j.hashed = h, true
		} else {
			j.hash, j.hashed = refcache.HashImage(j.ref), true
			if memo != nil {
				memo[j.ref] = j.hash
			}
		}
	}
	if err := ctx.Err(); err != nil {
		o.finish(j, Result{Err: cancelled(t.ID, err)})
		return
	}
	if o.closed.Load() {
		o.finish(j, Result{Err: closedErr(t.ID)})
		return
	}
	hasGPU := len(o.gpus) > 0
	if j.meta != nil && !j.meta.slot.gpu {
		// A reference uploaded to the CPU stays there: going through
		// the GPU rungs would prepare it again from scratch.
		hasGPU = false
	}
	j.plan = o.ladder.Begin(t.Metric, j.ref.Pixels(), hasGPU)
	o.route(j)
}

// prepareJob checks the task's inputs and resolves its reference.
func (o *Orchestrator) prepareJob(j *job) error {
	t := &j.task
	if !t.Metric.Valid() {
		return fmt.Errorf("%w: task %d: invalid metric %v", zenmetrics.ErrUnsupported, t.ID, t.Metric)
	}
	if t.RefHandle != 0 {
		o.hMu.Lock()
		j.meta = o.handles[t.RefHandle]
		o.hMu.Unlock()
		if j.meta == nil {
			return fmt.Errorf("task %d: %w: handle %d", t.ID, ErrReferenceDropped, t.RefHandle)
		}
		if j.meta.metric != t.Metric {
			return fmt.Errorf("%w: task %d: handle %d was uploaded for %s, task is %s",
				zenmetrics.ErrBadInput, t.ID, t.RefHandle, j.meta.metric, t.Metric)
		}
		j.ref = j.meta.ref
		j.hash, j.hashed = j.meta.hash, true
		t.Options = j.meta.opt
	} else {
		j.ref = t.Ref
		if err := t.Ref.Validate(); err != nil {
			return &zenmetrics.InputError{Path: fmt.Sprintf("task %d reference", t.ID), Err: err}
		}
	}
	if j.upload != nil {
		return nil
	}
	if err := t.Dist.Validate(); err != nil {
		return &zenmetrics.InputError{Path: fmt.Sprintf("task %d distorted", t.ID), Err: err}
	}
	return zenmetrics.CheckSameSize(j.ref, t.Dist)
}

// finish delivers the job's one result. A second call (which would be a
// bug) is ignored rather than delivering twice.
func (o *Orchestrator) finish(j *job, r Result) {
	if !j.finished.CompareAndSwap(false, true) && !o.cfg.mut.noExactlyOnce {
		o.log.Error("orchestrator: task finished twice; second result dropped", "id", j.task.ID)
		return
	}
	r.ID = j.task.ID
	r.Rung = j.rung
	if r.Err != nil && errors.Is(r.Err, ladder.ErrExhausted) {
		r.Rung = ladder.FullyExhausted
	}
	if j.plan != nil {
		r.Trace = j.plan.Trace()
		r.Attempts = j.plan.Attempts()
	}
	now := o.now()
	if !j.started.IsZero() {
		r.Wait = j.started.Sub(j.submitted)
		r.Duration = now.Sub(j.started)
	} else {
		r.Wait = now.Sub(j.submitted)
	}
	j.sink(r)
}

func cancelled(id TaskID, err error) error {
	return fmt.Errorf("orchestrator: task %d cancelled: %w", id, err)
}

func closedErr(id TaskID) error {
	return fmt.Errorf("task %d: %w: %w", id, ErrClosed, context.Canceled)
}

// RunSingle runs one task and waits for its result. Cancelling ctx ends a
// queued task at once and a running one as soon as its backend notices.
func (o *Orchestrator) RunSingle(ctx context.Context, t Task) Result {
	o.assignID(&t)
	ch := make(chan Result, 1)
	batch := new(int)
	stop := context.AfterFunc(ctx, func() { o.sweep(batch, ctx.Err()) })
	defer stop()
	o.start(ctx, t, func(r Result) { ch <- r }, batch, nil)
	return <-ch
}

// RunAll runs tasks and returns their results in completion order on a
// channel that is closed after the last one. The channel is buffered for
// every task, so a slow reader never stalls the workers. Cancelling ctx
// ends the queued tasks of this call at once (each with a cancelled
// result); the channel still gets exactly one result per task.
func (o *Orchestrator) RunAll(ctx context.Context, tasks []Task) <-chan Result {
	out := make(chan Result, len(tasks))
	if len(tasks) == 0 {
		close(out)
		return out
	}
	batch := new(int)
	var remaining atomic.Int64
	remaining.Store(int64(len(tasks)))
	var stop func() bool
	var stopMu sync.Mutex
	sink := func(r Result) {
		out <- r
		if remaining.Add(-1) == 0 {
			stopMu.Lock()
			if stop != nil {
				stop()
			}
			stopMu.Unlock()
			close(out)
		}
	}
	stopMu.Lock()
	stop = context.AfterFunc(ctx, func() { o.sweep(batch, ctx.Err()) })
	stopMu.Unlock()
	memo := map[*zenmetrics.Image]uint64{}
	for _, t := range tasks {
		o.assignID(&t)
		o.start(ctx, t, sink, batch, memo)
	}
	return out
}

// Submit queues a task whose result PollAny/PollAnyBlocking will return.
// It fails only when the orchestrator is closed; invalid tasks produce an
// error result like any other failure.
func (o *Orchestrator) Submit(t Task) (TaskID, error) {
	if o.closed.Load() {
		return 0, ErrClosed
	}
	o.assignID(&t)
	o.resMu.Lock()
	o.submitted++
	o.resMu.Unlock()
	o.start(o.ctx, t, o.pushResult, nil, nil)
	return t.ID, nil
}

func (o *Orchestrator) pushResult(r Result) {
	o.resMu.Lock()
	o.results = append(o.results, r)
	o.submitted--
	close(o.resWake)
	o.resWake = make(chan struct{})
	o.resMu.Unlock()
}

// PollAny returns a finished result of a submitted task, if there is one.
func (o *Orchestrator) PollAny() (Result, bool) {
	o.resMu.Lock()
	defer o.resMu.Unlock()
	if len(o.results) == 0 {
		return Result{}, false
	}
	r := o.results[0]
	o.results[0] = Result{}
	o.results = o.results[1:]
	return r, true
}

// PollAnyBlocking waits for the next result of a submitted task. It
// returns ErrNoPending at once when nothing is submitted or waiting, and
// ctx's error if ctx ends first.
func (o *Orchestrator) PollAnyBlocking(ctx context.Context) (Result, error) {
	for {
		o.resMu.Lock()
		if len(o.results) > 0 {
			r := o.results[0]
			o.results[0] = Result{}
			o.results = o.results[1:]
			o.resMu.Unlock()
			return r, nil
		}
		if o.submitted == 0 {
			o.resMu.Unlock()
			return Result{}, ErrNoPending
		}
		wake := o.resWake
		o.resMu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
}

// UploadReference prepares a reference once, on the backend the chooser
// picks for it (falling back down the ladder like a task), and keeps it
// until DropReference. Tasks that carry the handle instead of pixels reuse
// it without hashing. ref's pixels must not change until the handle is
// dropped: a task that falls back to another backend prepares from them.
func (o *Orchestrator) UploadReference(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (RefHandle, error) {
	if o.closed.Load() {
		return 0, ErrClosed
	}
	reply := &uploadReply{}
	t := Task{Metric: m, Ref: ref, Options: opt}
	o.assignID(&t)
	ch := make(chan Result, 1)
	batch := new(int)
	stop := context.AfterFunc(ctx, func() { o.sweep(batch, ctx.Err()) })
	defer stop()
	j := &job{task: t, ctx: ctx, sink: func(r Result) { ch <- r }, batch: batch, submitted: o.now(), upload: reply, rung: ladder.FullyExhausted}
	func() {
		defer func() {
			if v := recover(); v != nil {
				o.finish(j, Result{Err: &zenmetrics.PanicError{Value: v}})
			}
		}()
		if err := o.prepareJob(j); err != nil {
			o.finish(j, Result{Err: err})
			return
		}
		j.plan = o.ladder.Begin(m, ref.Pixels(), len(o.gpus) > 0)
		o.route(j)
	}()
	r := <-ch
	if r.Err != nil {
		return 0, r.Err
	}
	return reply.handle, nil
}

// DropReference releases an uploaded reference. Tasks already running with
// it finish normally; tasks still queued with it end with an error matching
// ErrReferenceDropped.
func (o *Orchestrator) DropReference(h RefHandle) error {
	o.hMu.Lock()
	_, ok := o.handles[h]
	delete(o.handles, h)
	o.hMu.Unlock()
	if !ok {
		return fmt.Errorf("%w: handle %d", ErrReferenceDropped, h)
	}
	return o.cache.Drop(h)
}

// CachedRefStats reports the reference cache's hits, misses and size.
func (o *Orchestrator) CachedRefStats() refcache.Stats { return o.cache.Stats() }

// SetPoolConfig changes the pool while tasks run: more or fewer CPU
// workers take effect at the next task boundary.
func (o *Orchestrator) SetPoolConfig(pc PoolConfig) {
	o.poolMu.Lock()
	if pc.MaxParallelCPU <= 0 {
		pc.MaxParallelCPU = o.pool.MaxParallelCPU
	}
	o.pool = pc
	o.poolMu.Unlock()
	if o.cpu != nil {
		o.cpu.setLimit(pc.MaxParallelCPU)
	}
}

func (o *Orchestrator) poolConfig() PoolConfig {
	o.poolMu.Lock()
	defer o.poolMu.Unlock()
	return o.pool
}

// Backends lists the discovered backends' names (GPU ones first).
func (o *Orchestrator) Backends() []string {
	var out []string
	for _, s := range o.gpus {
		out = append(out, s.name)
	}
	if o.cpu != nil {
		out = append(out, o.cpu.name)
	}
	return out
}

// Report is the probe this orchestrator was built from.
func (o *Orchestrator) Report() *capability.Report { return o.report }
