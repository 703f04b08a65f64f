package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/ladder"
	"github.com/zenmetrics-go/zenmetrics/refcache"
)

// slot is one backend with its queue and workers: for a GPU adapter one
// worker (the device serialises work anyway, and one owner keeps its
// memory predictable) or as many as the backend's ConcurrentScores (two
// for WebGPU: one fills its upload and submits while the other's work
// runs), MaxParallelCPU workers for the CPU.
type slot struct {
	backendSlot
	o *Orchestrator

	mu        sync.Mutex
	cond      *sync.Cond
	queue     []*job
	limit     int // workers allowed to take jobs
	spawned   int
	closed    bool
	backlogNs float64 // predicted work queued or running here
	inflight  int64   // predicted bytes of attempts running now

	openMu  sync.Mutex
	be      atomic.Pointer[backendBox]
	openErr error
	lost    atomic.Bool

	freeMu    sync.Mutex
	freeAt    time.Time
	freeVal   int64
	totalVal  int64
	freeValid bool

	st slotStats // live statistics and measured speeds (balance.go)
}

type backendBox struct{ b zenmetrics.Backend }

func newSlot(o *Orchestrator, b backendSlot) *slot {
	s := &slot{backendSlot: b, o: o}
	s.cond = sync.NewCond(&s.mu)
	if b.backend != nil {
		s.be.Store(&backendBox{b.backend})
	}
	return s
}

// backendNow is the opened backend, or nil while a lazy GPU is cold.
func (s *slot) backendNow() zenmetrics.Backend {
	if bx := s.be.Load(); bx != nil {
		return bx.b
	}
	return nil
}

// openBackend opens a lazy backend once; a failure marks the slot lost.
func (s *slot) openBackend(ctx context.Context) (zenmetrics.Backend, error) {
	if b := s.backendNow(); b != nil {
		return b, nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if b := s.backendNow(); b != nil {
		return b, nil
	}
	if s.openErr != nil {
		return nil, s.openErr
	}
	if s.open == nil {
		s.openErr = fmt.Errorf("%w: %s has no backend", zenmetrics.ErrUnsupported, s.name)
		return nil, s.openErr
	}
	var b zenmetrics.Backend
	err := func() (err error) {
		defer zenmetrics.Recover(&err)
		t0 := time.Now()
		b, err = s.open(ctx)
		if err == nil && b == nil {
			err = fmt.Errorf("%w: %s: open returned no backend", zenmetrics.ErrUnsupported, s.name)
		}
		s.o.log.Debug("backend opened", "backend", s.name, "init", time.Since(t0), "err", err)
		return err
	}()
	if err != nil {
		if ctx.Err() == nil {
			s.openErr = err // a cancelled open may be retried
		}
		return nil, err
	}
	s.be.Store(&backendBox{b})
	if n := concurrentScores(b); n > 1 {
		s.setLimit(n)
	}
	return b, nil
}

// concurrentScores is how many workers a GPU slot runs: one, unless the
// backend says it overlaps concurrent scores (webgpu.Backend: 2, one
// filling its upload while the other's work runs on the GPU). The device
// still runs one task's GPU work at a time; the memory check sees both
// attempts (inflight).
func concurrentScores(b zenmetrics.Backend) int {
	c, ok := b.(interface{ ConcurrentScores() int })
	if !ok {
		return 1
	}
	return min(max(c.ConcurrentScores(), 1), 4)
}

// estimate asks the backend; a cold lazy backend is assumed able, at an
// unknown size (the worker re-checks once it is open).
func (s *slot) estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (bytes int64, ok bool) {
	b := s.backendNow()
	if b == nil {
		return 0, !s.lost.Load()
	}
	defer func() {
		if recover() != nil {
			bytes, ok = 0, false
		}
	}()
	return b.Estimate(m, w, h, mode)
}

// sampleFree reads the live free/total memory, reusing a reading younger
// than interval (0: the pool's VRAMSampleInterval).
func (s *slot) sampleFree(interval time.Duration) (free, total int64, ok bool) {
	if s.free == nil {
		return 0, 0, false
	}
	if interval <= 0 {
		interval = s.o.poolConfig().VRAMSampleInterval
		if interval <= 0 {
			interval = 100 * time.Millisecond
		}
	}
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	now := time.Now()
	if !s.freeValid || now.Sub(s.freeAt) >= interval {
		f, t, ok := s.free()
		s.freeVal, s.totalVal, s.freeValid, s.freeAt = f, t, ok, now
	}
	return s.freeVal, s.totalVal, s.freeValid
}

// freeBytes is the memory a new task may count on: the live reading (NVML)
// when there is one, else the device heap minus what this process holds
// (prepared references plus running attempts); -1 when unknown.
func (s *slot) freeBytes() int64 {
	if f, _, ok := s.sampleFree(0); ok {
		return f
	}
	if s.heapBytes > 0 {
		s.mu.Lock()
		in := s.inflight
		s.mu.Unlock()
		return max(0, s.heapBytes-s.o.cache.BytesOf(s.name)-in)
	}
	return -1
}

// initNs is the initialisation cost still to pay before this slot can run
// anything: zero once open, else the profile's measured init_ms, else a
// typical device creation time.
func (s *slot) initNs(p *capability.Profile) float64 {
	if s.backendNow() != nil {
		return 0
	}
	if p != nil && s.gpuIndex >= 0 && s.gpuIndex < len(p.GPUs) && p.GPUs[s.gpuIndex].InitMs > 0 {
		return p.GPUs[s.gpuIndex].InitMs * 1e6
	}
	if s.initGuess > 0 {
		return float64(s.initGuess)
	}
	return float64(250 * time.Millisecond)
}

func (s *slot) backlog() (ns float64, workers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backlogNs, max(1, s.limit)
}

// setLimit changes the number of workers that take jobs, starting more
// goroutines if needed; surplus ones idle until the limit rises again.
func (s *slot) setLimit(n int) {
	if n < 1 {
		n = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
	for !s.closed && s.spawned < n {
		i := s.spawned
		s.spawned++
		s.o.workers.Add(1)
		go s.work(i)
	}
	s.cond.Broadcast()
}

func (s *slot) enqueue(j *job) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.o.finish(j, Result{Err: closedErr(j.task.ID), Backend: s.name})
		return
	}
	s.queue = append(s.queue, j)
	s.backlogNs += j.predNs
	s.cond.Broadcast()
	s.mu.Unlock()
	s.depthAdd(1)
}

// work is one worker's loop.
func (s *slot) work(i int) {
	defer s.o.workers.Done()
	for {
		s.mu.Lock()
		for !s.closed && (len(s.queue) == 0 || i >= s.limit) {
			s.cond.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		j := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.o.run(s, j)
	}
}

// sweep ends the queued jobs of one batch (RunAll/RunSingle whose ctx
// ended, or nil batch = all at Close) with err.
func (o *Orchestrator) sweep(batch any, err error) {
	for _, s := range o.slots {
		var gone []*job
		s.mu.Lock()
		kept := s.queue[:0]
		for _, j := range s.queue {
			if j.batch == batch && batch != nil {
				gone = append(gone, j)
				s.backlogNs -= j.predNs
			} else {
				kept = append(kept, j)
			}
		}
		clear(s.queue[len(kept):])
		s.queue = kept
		s.mu.Unlock()
		s.depthAdd(-len(gone))
		for _, j := range gone {
			o.finish(j, Result{Err: cancelled(j.task.ID, err)})
		}
	}
}

// close stops the workers and ends every queued job.
func (s *slot) close() {
	s.mu.Lock()
	s.closed = true
	q := s.queue
	s.queue = nil
	s.backlogNs = 0
	s.cond.Broadcast()
	s.mu.Unlock()
	s.depthAdd(-len(q))
	for _, j := range q {
		s.o.finish(j, Result{Err: closedErr(j.task.ID)})
	}
}

func (s *slot) closeBackend() (err error) {
	defer zenmetrics.Recover(&err)
	if b := s.backendNow(); b != nil {
		return b.Close()
	}
	return nil
}

// run is one attempt of a job on this slot, and what follows from it:
// the result, or the next rung. A panic anywhere in here (orchestrator bug
// or backend) still ends the task with a result.
func (o *Orchestrator) run(s *slot, j *job) {
	s.mu.Lock()
	pred := j.predNs
	s.mu.Unlock()
	// The job leaves this slot's queue (depth and backlog) before its
	// result is delivered or it moves on, not after: Stats read right
	// after the last result shows nothing queued (TestStatsCounts saw a
	// depth of 1 under the race detector), and a rerouted job is never
	// counted on two slots.
	leave := sync.OnceFunc(func() {
		s.mu.Lock()
		s.backlogNs -= pred
		s.mu.Unlock()
		s.depthAdd(-1)
	})
	defer leave()
	finish := func(res Result) {
		leave()
		o.finish(j, res)
	}
	defer func() {
		if v := recover(); v != nil {
			finish(Result{Err: &zenmetrics.PanicError{Value: v}, Backend: s.name})
		}
	}()
	if err := j.ctx.Err(); err != nil {
		finish(Result{Err: cancelled(j.task.ID, err), Backend: s.name})
		return
	}
	if j.started.IsZero() {
		j.started = o.now()
	}
	// reroute sends the job on to the next rung (or slot), counting it as
	// a fallback of this slot.
	reroute := func() {
		leave()
		s.fellBack()
		o.route(j)
	}
	if s.lost.Load() && !o.cfg.mut.noLostRule {
		// The device was lost while this job waited in its queue.
		j.plan.Refuse(j.rung, s.name, ladder.TriggerDeviceLost, s.name+" was lost")
		reroute()
		return
	}
	b, err := s.openBackend(j.ctx)
	if err != nil {
		if j.ctx.Err() != nil {
			finish(Result{Err: cancelled(j.task.ID, j.ctx.Err()), Backend: s.name})
			return
		}
		s.lost.Store(true)
		o.log.Warn("backend unusable; its tasks move down the ladder", "backend", s.name, "err", err)
		j.plan.Refuse(j.rung, s.name, ladder.TriggerUnsupported, "backend failed to open: "+err.Error())
		reroute()
		o.drainLost(s)
		return
	}
	m := j.task.Metric
	w, h := j.ref.Width, j.ref.Height
	mode := j.rung.Mode()
	est, ok := s.estimate(m, w, h, mode)
	if !ok {
		j.plan.Refuse(j.rung, s.name, ladder.TriggerUnsupported, fmt.Sprintf("%s cannot run %s in %s mode", s.name, m, mode))
		reroute()
		return
	}
	if s.gpu && (j.meta == nil || j.meta.slot != s) {
		// A cell recorded while this job waited in the queue (the task
		// ahead of it ran out of memory at this size) applies to it too:
		// without this check a queue of equal tasks would each hit the
		// same OOM once.
		v := s.view(o.snapshot(), m, j.rung)
		if blocked, at := v.blocked(j.ref.Pixels()); blocked {
			j.plan.Refuse(j.rung, s.name, ladder.TriggerPredicted,
				fmt.Sprintf("%s ran out of memory at %d pixels while this task was queued", v.class, at))
			reroute()
			return
		}
		if why, ok := o.waitForMemory(s, j, v, est); !ok {
			j.plan.Refuse(j.rung, s.name, ladder.TriggerPredicted, why)
			reroute()
			return
		}
	}
	s.mu.Lock()
	s.inflight += est
	s.mu.Unlock()
	t0 := time.Now()
	res, trig, err := o.attempt(s, b, j, est)
	elapsed := time.Since(t0)
	s.mu.Lock()
	s.inflight -= est
	s.mu.Unlock()
	if j.upload == nil && j.ctx.Err() == nil {
		// Every completed task teaches the slot's speed estimate
		// (uploads only prepare, and cancelled attempts stopped early).
		px := j.ref.Pixels()
		v := s.view(o.snapshot(), m, j.rung)
		s.observe(j.rung, v.key(m, px), v.nsPerPx(px), px, elapsed, err == nil, trig.IsOOM(), o.cfg.mut.noEMA)
	}
	if err == nil {
		j.plan.Succeed(j.rung, s.name)
		res.Backend = s.name
		finish(res)
		return
	}
	if cerr := j.ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (after: %v)", cancelled(j.task.ID, cerr), err)
		}
		finish(Result{Err: err, Backend: s.name, CacheHit: res.CacheHit})
		return
	}
	switch {
	case trig.IsOOM():
		// Free what idle prepared references hold before anything else
		// runs here: they may be why memory ran out.
		o.cache.Purge(s.name)
	case trig == ladder.TriggerDeviceLost:
		s.lost.Store(true)
		o.cache.Purge(s.name)
		o.log.Warn("device lost; its tasks move down the ladder", "backend", s.name, "err", err)
		defer o.drainLost(s) // after this job has moved on
	}
	if j.plan.FailAs(j.ctx, j.rung, s.class(j.rung), s.name, trig, err) {
		reroute()
		return
	}
	if trig.IsOOM() { // NoFallback
		finish(Result{Err: j.plan.Exhausted(), Backend: s.name})
		return
	}
	finish(Result{Err: err, Backend: s.name, CacheHit: res.CacheHit})
}

// drainLost moves every job queued on a lost slot on at once (the next
// rung, on another device or the CPU) instead of leaving them for this
// slot's workers, which may be stuck in the failed device's last call.
func (o *Orchestrator) drainLost(s *slot) {
	if o.cfg.mut.noLostRule {
		return
	}
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	for _, j := range q {
		s.backlogNs -= j.predNs
	}
	s.mu.Unlock()
	s.depthAdd(-len(q))
	for _, j := range q {
		func() {
			defer func() {
				if v := recover(); v != nil {
					o.finish(j, Result{Err: &zenmetrics.PanicError{Value: v}, Backend: s.name})
				}
			}()
			j.plan.Refuse(j.rung, s.name, ladder.TriggerDeviceLost, s.name+" was lost")
			s.fellBack()
			o.route(j)
		}()
	}
}

// waitForMemory re-checks live free memory just before a GPU attempt (the
// chooser's reading may be old), first dropping idle cached references of
// this backend, then waiting up to PoolConfig.VRAMStall for memory that
// another process may be about to free. v is the slot's cells on the
// job's rung.
func (o *Orchestrator) waitForMemory(s *slot, j *job, v cellView, est int64) (string, bool) {
	pc := o.poolConfig()
	px := j.ref.Pixels()
	need := predictBytes(v.samples, px, est)
	floor := pc.VRAMSafetyFloorMiB << 20
	ok, why := vramAdmits(need, s.freeBytes(), floor)
	if ok {
		return "", true
	}
	o.cache.Purge(s.name)
	deadline := time.Now().Add(pc.VRAMStall)
	interval := pc.VRAMSampleInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	for {
		if ok, why = vramAdmits(need, s.freeBytes(), floor); ok {
			return "", true
		}
		if !time.Now().Before(deadline) {
			return why + " (at start)", false
		}
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-j.ctx.Done():
			t.Stop()
			return "cancelled while waiting for memory", false
		}
	}
}

// attempt prepares (or reuses) the reference on backend b and scores the
// distorted image. trig classifies a failure for the ladder.
func (o *Orchestrator) attempt(s *slot, b zenmetrics.Backend, j *job, est int64) (res Result, trig ladder.Trigger, err error) {
	m := j.task.Metric
	opt := j.task.Options
	opt.Mode = j.rung.Mode()
	if j.meta != nil {
		o.hMu.Lock()
		_, live := o.handles[j.task.RefHandle]
		o.hMu.Unlock()
		if !live {
			return res, ladder.TriggerFailed, fmt.Errorf("task %d: %w: handle %d", j.task.ID, ErrReferenceDropped, j.task.RefHandle)
		}
	}
	var entry *refcache.Entry
	if j.meta != nil && j.meta.slot == s && j.meta.rung == j.rung {
		entry, err = o.cache.Use(j.task.RefHandle)
		if err != nil {
			return res, ladder.TriggerFailed, fmt.Errorf("task %d: %w", j.task.ID, err)
		}
		res.CacheHit = true
	} else {
		if !j.hashed {
			j.hash, j.hashed = refcache.HashImage(j.ref), true
		}
		key := refcache.Key{Backend: s.name, Metric: m, Width: j.ref.Width, Height: j.ref.Height,
			Format: j.ref.Format, Hash: j.hash, Options: opt}
		ref := j.ref
		prepare := func() (zenmetrics.Reference, error) { return b.Prepare(j.ctx, m, ref, opt) }
		if j.upload != nil {
			return o.pin(s, j, key, est, prepare)
		}
		entry, res.CacheHit, err = o.cache.Acquire(j.ctx, key, est, prepare)
		if err != nil {
			return res, ladder.Classify(err, true), err
		}
	}
	defer entry.Done()
	res.Score, err = scoreSafely(j.ctx, entry.Ref(), j.task.Dist)
	if err != nil {
		return res, ladder.Classify(err, false), err
	}
	return res, ladder.TriggerNone, nil
}

// pin finishes an UploadReference job: the prepared entry is pinned under
// a new handle that remembers where it lives.
func (o *Orchestrator) pin(s *slot, j *job, key refcache.Key, est int64, prepare func() (zenmetrics.Reference, error)) (Result, ladder.Trigger, error) {
	h, _, err := o.cache.Pin(j.ctx, key, est, nil, prepare)
	if err != nil {
		return Result{}, ladder.Classify(err, true), err
	}
	o.hMu.Lock()
	o.handles[h] = &handleMeta{metric: j.task.Metric, ref: j.ref, opt: j.task.Options, hash: j.hash, slot: s, rung: j.rung}
	o.hMu.Unlock()
	j.upload.handle = h
	return Result{}, ladder.TriggerNone, nil
}

// scoreSafely turns a panic inside the metric into the task's error.
func scoreSafely(ctx context.Context, r zenmetrics.Reference, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	return r.Score(ctx, dist)
}
