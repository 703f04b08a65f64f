package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/refcache"
)

// Config describes one batch run.
type Config struct {
	// Pairs to score (from ReadManifest or PairDirs).
	Pairs []Pair
	// Metrics for pairs that do not name their own.
	Metrics []zenmetrics.Metric
	// Out is the output file; "-" writes JSONL or CSV to Stdout without
	// crash safety or resume.
	Out    string
	Stdout io.Writer
	// Format of Out; "" chooses by Out's extension, JSONL when it has none.
	Format Format
	// Resume keeps the rows already in Out and scores only what is missing.
	// Force starts Out over. With neither, an existing Out is an error.
	Resume, Force bool
	// RetryFailed (with Resume) scores again the pairs whose earlier row
	// is an error row; the new row replaces the old one.
	RetryFailed bool
	// Shard restricts the run to one part of the pairs.
	Shard Shard
	// Engine scores the jobs (required). Run does not close it.
	Engine Engine
	// Decode decodes image files; nil uses imageio.DecodeFile (as the CLI does).
	Decode DecodeFunc
	// Decoders is how many files are decoded at once (default: the number of
	// CPUs). Each reference is decoded once and shared by all its pairs.
	Decoders int
	// MemoryBudget bounds the bytes of decoded images held for jobs in
	// flight and for the references their pairs share (default 2 GiB).
	// Decoding runs ahead of scoring until the budget is used; each
	// decoder may in addition hold the one pair it has just decoded while
	// it waits for budget. A pair that does not fit even when nothing else
	// is in flight still runs, alone. With Probe, a pair whose predicted
	// memory (both decodes plus WorkingSet) exceeds it gets error rows
	// matching zenmetrics.ErrOutOfMemory instead, before any decoding.
	MemoryBudget int64
	// Probe reads image headers so that sizes are compared, minimum sizes
	// checked and memory predicted before anything is decoded (nil: sizes
	// are compared after decoding).
	Probe ProbeFunc
	// WorkingSet predicts the scoring memory of a pair beyond its images
	// (the CLI sets it for the CPU backend); nil counts none.
	WorkingSet WorkingSetFunc
	// FlushInterval and FlushRows bound how much finished work a crash can
	// lose: rows are committed (written and fsynced) when FlushRows are
	// waiting or FlushInterval has passed (defaults 2 s and 1000).
	FlushInterval time.Duration
	FlushRows     int
	// Progress reports progress while the run goes (nil: none).
	Progress *Progress
	// Log receives warnings (nil: discarded).
	Log io.Writer
}

// Counts are rows by outcome.
type Counts struct {
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Summary is what a run did.
type Summary struct {
	Out   string `json:"out"`
	Shard string `json:"shard"`
	// Pairs in this shard and the (pair, metric) rows they call for.
	Pairs int `json:"pairs"`
	Total int `json:"total"`
	Counts
	// SkippedFailed are skipped rows that are error rows from an earlier
	// run (use RetryFailed to score them again).
	SkippedFailed int `json:"skipped_failed"`
	// ByBackend splits the counts by backend name ("none" for rows that
	// failed before any backend ran, e.g. a missing file).
	ByBackend map[string]*Counts `json:"by_backend"`
	Elapsed   time.Duration      `json:"-"`
	Seconds   float64            `json:"seconds"`
	// Stages splits the run's time by stage (PrintStages prints it).
	Stages Stages `json:"stages"`
}

// AllOK reports whether every row of the shard holds a score.
func (s *Summary) AllOK() bool { return s.Failed == 0 && s.SkippedFailed == 0 }

func (s *Summary) add(backend string, ok, skipped bool) {
	if backend == "" {
		backend = "none"
	}
	c := s.ByBackend[backend]
	if c == nil {
		c = &Counts{}
		s.ByBackend[backend] = c
	}
	switch {
	case skipped:
		c.Skipped++
		s.Skipped++
		if !ok {
			s.SkippedFailed++
		}
	case ok:
		c.OK++
		s.OK++
	default:
		c.Failed++
		s.Failed++
	}
}

// ConfigError is a problem with the run's configuration or input (exit
// code 2 in the CLI).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// work is one pair with the metrics still to score.
type work struct {
	pair    *Pair
	metrics []zenmetrics.Metric
}

// Run scores the pairs and writes the rows. It returns the summary and a
// non-nil error only for fatal problems (bad configuration, an output that
// cannot be written, cancellation); failed pairs are error rows, counted in
// the summary.
func Run(ctx context.Context, cfg Config) (sum Summary, err error) {
	start := time.Now()
	sum.ByBackend = map[string]*Counts{}
	sum.Shard = cfg.Shard.String()
	clock := &stageClock{}
	workers := 0
	if we, ok := cfg.Engine.(interface{ Workers() int }); ok {
		workers = we.Workers()
	}
	// The engine's upload counters now: the run's uploads are the
	// difference at the end (the engine may have scored before).
	var up0 webgpu.UploadStats
	if ue, ok := cfg.Engine.(uploadEngine); ok {
		up0, _ = ue.Uploads()
	}
	var progress *Progress // stopped once the summary is complete
	defer func() {
		sum.Elapsed = time.Since(start)
		sum.Seconds = sum.Elapsed.Seconds()
		clock.uploadsSince(cfg.Engine, up0)
		sum.Stages = clock.stages(cfg.Decoders, workers)
		if progress != nil {
			progress.stop(&sum)
		}
	}()
	warn := func(s string) {
		if cfg.Log != nil {
			fmt.Fprintln(cfg.Log, "zmscore: warning:", s)
		}
	}
	if cfg.Engine == nil {
		return sum, errors.New("batch: Config.Engine is nil")
	}
	if cfg.Decode == nil {
		cfg.Decode = decodeStd
	}
	if cfg.Decoders < 1 {
		cfg.Decoders = runtime.NumCPU()
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 2 << 30
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 2 * time.Second
	}
	if cfg.FlushRows <= 0 {
		cfg.FlushRows = 1000
	}
	if cfg.Out == "" {
		return sum, &ConfigError{"no output file (--out)"}
	}
	sum.Out = cfg.Out
	if cfg.Format == "" {
		cfg.Format = JSONL
		if f, ok := FormatFromPath(cfg.Out); ok && f != TSV {
			cfg.Format = f
		}
	}
	if cfg.Format != JSONL && cfg.Format != CSV && cfg.Format != Parquet {
		return sum, &ConfigError{fmt.Sprintf("output format %s not supported (jsonl, csv, parquet)", cfg.Format)}
	}

	// The rows this shard calls for.
	var todo []work
	seen := map[Key]*Pair{}
	var dups examples // repeated (id, metric) rows: one warning for all
	for i := range cfg.Pairs {
		p := &cfg.Pairs[i]
		if !cfg.Shard.Contains(p.ID) {
			continue
		}
		ms := p.Metrics
		if len(ms) == 0 {
			ms = cfg.Metrics
		}
		if len(ms) == 0 {
			return sum, &ConfigError{fmt.Sprintf("pair %s has no metric (give --metric)", p.ID)}
		}
		w := work{pair: p}
		for _, m := range ms {
			k := Key{p.ID, m.String()}
			if q, dup := seen[k]; dup {
				if q.Ref != p.Ref || q.Dist != p.Dist {
					return sum, &ConfigError{fmt.Sprintf("pair id %q is used for %s|%s (line %d) and %s|%s (line %d)",
						p.ID, q.Ref, q.Dist, q.Line, p.Ref, p.Dist, p.Line)}
				}
				dups.add(fmt.Sprintf("%s (%s, line %d)", p.ID, m, p.Line))
				continue
			}
			seen[k] = p
			w.metrics = append(w.metrics, m)
		}
		if len(w.metrics) > 0 {
			todo = append(todo, w)
			sum.Pairs++
			sum.Total += len(w.metrics)
		}
	}
	if dups.n > 0 {
		warn(fmt.Sprintf("%d manifest rows repeat an earlier pair and metric and are scored once: %s", dups.n, dups))
	}

	// One writer per output, for the whole run (outlock.go).
	if cfg.Out != "-" {
		lk, err := lockOutput(cfg.Out)
		if err != nil {
			return sum, err
		}
		defer lk.Unlock()
	}

	// Open the output; at resume, learn what is done.
	mode := modeCreate
	switch {
	case cfg.Resume:
		mode = modeResume
	case cfg.Force:
		mode = modeForce
	}
	done := map[Key]Row{}
	var kept []Row // every row found, for --retry-failed rewrites
	onRow := func(r Row) {
		done[r.Key()] = Row{Backend: r.Backend, Error: r.Error, Score: r.Score}
		if cfg.RetryFailed {
			kept = append(kept, r)
		}
	}
	var out sink
	switch {
	case cfg.Out == "-":
		if cfg.Format == Parquet {
			return sum, &ConfigError{"Parquet cannot be written to stdout"}
		}
		if cfg.Resume {
			return sum, &ConfigError{"--resume needs an output file"}
		}
		w := cfg.Stdout
		if w == nil {
			w = os.Stdout
		}
		out = &streamSink{w: w, format: cfg.Format}
	case cfg.Format == Parquet:
		ps, err := openParquetSink(cfg.Out, mode, onRow, warn)
		if err != nil {
			return sum, outputErr(err)
		}
		out = ps
	default:
		al, err := openAppendLog(cfg.Out, cfg.Format, mode, onRow, warn)
		if err != nil {
			return sum, outputErr(err)
		}
		if cfg.RetryFailed {
			var okRows []Row
			for _, r := range kept {
				if r.OK() {
					okRows = append(okRows, r)
				}
			}
			if len(okRows) != len(kept) {
				if err := al.rewrite(okRows); err != nil {
					al.Close()
					return sum, fmt.Errorf("--retry-failed: %w", err)
				}
			}
		}
		out = &appendSink{al}
	}
	closed := false
	defer func() {
		if !closed {
			t0 := time.Now()
			if cerr := out.Close(); cerr != nil && err == nil {
				err = cerr
			}
			clock.write += time.Since(t0)
		}
	}()

	var pending []work
	for _, w := range todo {
		var left []zenmetrics.Metric
		for _, m := range w.metrics {
			r, ok := done[Key{w.pair.ID, m.String()}]
			if ok && (r.OK() || !cfg.RetryFailed) {
				sum.add(r.Backend, r.OK(), true)
				continue
			}
			left = append(left, m)
		}
		if len(left) > 0 {
			pending = append(pending, work{w.pair, left})
		}
	}
	// Group by reference (in order of first appearance) so that one
	// reference's variants run together and share its decode and prepare.
	firstRef := map[string]int{}
	for i, w := range pending {
		if _, ok := firstRef[w.pair.RefPath]; !ok {
			firstRef[w.pair.RefPath] = i
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		return firstRef[pending[i].pair.RefPath] < firstRef[pending[j].pair.RefPath]
	})
	expected := 0
	for _, w := range pending {
		expected += len(w.metrics)
	}

	if cfg.Progress != nil {
		cfg.Progress.start(sum.Total, sum.Skipped, sum.SkippedFailed)
		progress = cfg.Progress
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pipeline{cfg: &cfg, ctx: rctx, budget: newBudget(cfg.MemoryBudget),
		refs: map[string]*refImg{}, refLeft: map[string]int{}, inflight: map[uint64]*pairState{},
		rows: make(chan Row, 4*cfg.Decoders), clock: clock}
	if h, ok := cfg.Engine.(RefHasher); ok {
		p.hashRefs = h.WantsRefHash()
	}
	p.startProducers(pending)

	// Writer: the calling goroutine commits rows in chunks.
	var buf []Row
	var werr error
	tick := time.NewTicker(cfg.FlushInterval)
	defer tick.Stop()
	flush := func() {
		if werr == nil && len(buf) > 0 {
			t0 := time.Now()
			if werr = out.Commit(buf); werr != nil {
				cancel()
			}
			clock.write += time.Since(t0)
			clock.commits++
		}
		buf = buf[:0]
	}
	got := 0
loop:
	for {
		select {
		case r, ok := <-p.rows:
			if !ok {
				break loop
			}
			if werr != nil {
				continue // draining after a write error
			}
			buf = append(buf, r)
			got++
			sum.add(r.Backend, r.OK(), false)
			if cfg.Progress != nil {
				cfg.Progress.row(r.Backend, r.OK())
			}
			if len(buf) >= cfg.FlushRows {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
	flush()
	if werr != nil {
		return sum, fmt.Errorf("writing %s: %w", cfg.Out, werr)
	}
	if perr := p.err(); perr != nil {
		return sum, perr
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	if got != expected {
		return sum, fmt.Errorf("batch: internal error: %d rows for %d jobs", got, expected)
	}
	closed = true
	t0 := time.Now()
	cerr := out.Close()
	clock.write += time.Since(t0)
	if cerr != nil {
		return sum, fmt.Errorf("finishing %s: %w", cfg.Out, cerr)
	}
	return sum, nil
}

func outputErr(err error) error {
	if errors.Is(err, ErrOutputExists) {
		return &ConfigError{err.Error()}
	}
	return err
}

// pipeline is the decode → engine → rows machinery of one run.
type pipeline struct {
	cfg    *Config
	ctx    context.Context
	budget *budget
	rows   chan Row

	clock *stageClock
	// hashRefs: the engine keys references by their pixels' hash
	// (RefHasher), so loadRef hashes each decoded reference once.
	hashRefs bool

	mu       sync.Mutex
	refs     map[string]*refImg // by Pair.RefPath
	refLeft  map[string]int     // pairs of the run per Pair.RefPath
	inflight map[uint64]*pairState
	heads    map[string]*headEntry // reference headers, by Pair.RefPath
	tag      atomic.Uint64
	fatal    error
}

// refImg is a decoded reference, decoded once and shared by every pair of
// the run that uses it. It lives until the last of those pairs is done
// with it (pending is grouped by reference, so that is soon after its
// first use, and at most a few references are held at once).
type refImg struct {
	key     string // RefKey: path, size, mtime
	hash    uint64 // refcache.HashImage(img) when the engine wants it (RefHasher)
	ready   chan struct{}
	img     *zenmetrics.Image
	err     error
	left    int   // pairs not yet done with it
	claimed bool  // a pair has taken on accounting its bytes
	bytes   int64 // budget held for it
}

type pairState struct {
	w         work
	ref       *refImg
	dist      *zenmetrics.Image
	distBytes int64
	left      int
	metric    map[uint64]zenmetrics.Metric
}

func (p *pipeline) setFatal(err error) {
	p.mu.Lock()
	if p.fatal == nil {
		p.fatal = err
	}
	p.mu.Unlock()
}

func (p *pipeline) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

func (p *pipeline) startProducers(pending []work) {
	for _, w := range pending {
		p.refLeft[w.pair.RefPath]++
	}
	feed := make(chan work)
	var decoders, producers sync.WaitGroup
	go func() {
		defer close(feed)
		for _, w := range pending {
			select {
			case feed <- w:
			case <-p.ctx.Done():
				return
			}
		}
	}()
	decoders.Add(p.cfg.Decoders)
	producers.Add(p.cfg.Decoders + 1)
	for i := 0; i < p.cfg.Decoders; i++ {
		go func() {
			defer producers.Done()
			defer decoders.Done()
			for w := range feed {
				p.decodeAndSubmit(w)
			}
		}()
	}
	go func() {
		decoders.Wait()
		p.cfg.Engine.CloseSubmit()
	}()
	go func() {
		defer producers.Done()
		p.collect()
	}()
	go func() {
		producers.Wait()
		close(p.rows)
	}()
}

func (p *pipeline) send(r Row) {
	select {
	case p.rows <- r:
	case <-p.ctx.Done():
	}
}

func (p *pipeline) errorRows(w work, backend string, err error) {
	for _, m := range w.metrics {
		p.send(Row{ID: w.pair.ID, Ref: w.pair.Ref, Dist: w.pair.Dist, Metric: m.String(), Backend: backend, Error: err.Error()})
	}
}

// refKey identifies a reference file's content cheaply: path, size, mtime.
func refKey(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", &zenmetrics.InputError{Path: path, Err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return fmt.Sprintf("%s|%d|%d", abs, st.Size(), st.ModTime().UnixNano()), nil
}

// decode decodes path. need is its predicted decoding peak (Probe's
// DecodeBytes, 0 when unknown): it is taken from the memory budget for the
// time of the decode, so that several decoders cannot together exceed the
// budget with decoder buffers (a granted pair's images are accounted after
// decoding, by acquire).
func (p *pipeline) decode(path string, need int64) (im *zenmetrics.Image, err error) {
	if need > 0 {
		if err := p.budget.acquire(p.ctx, 0, need); err != nil {
			return nil, err
		}
		defer p.budget.releaseDist(need)
	}
	defer p.clock.decode.end(p.clock.decode.begin())
	defer zenmetrics.Recover(&err)
	im, err = p.cfg.Decode(path)
	if err == nil {
		if verr := im.Validate(); verr != nil {
			err = &zenmetrics.InputError{Path: path, Err: verr}
		}
	}
	return im, err
}

// getRef returns the reference of path and registers the caller as one of
// its users; created says the caller must decode it (loadRef) and close
// ready. Other callers wait on ready.
func (p *pipeline) getRef(path string) (r *refImg, created bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r = p.refs[path]; r != nil {
		return r, false
	}
	r = &refImg{ready: make(chan struct{}), left: max(p.refLeft[path], 1)}
	p.refs[path] = r
	return r, true
}

// loadRef decodes a reference created by getRef.
func (p *pipeline) loadRef(r *refImg, path string, need int64) {
	defer close(r.ready)
	p.clock.refDecodes.Add(1)
	if r.key, r.err = refKey(path); r.err != nil {
		return
	}
	r.img, r.err = p.decode(path, need)
	if r.err == nil && p.hashRefs {
		r.hash = refcache.HashImage(r.img)
	}
}

// putRef says one pair is done with the reference; after the last, its
// memory is freed.
func (p *pipeline) putRef(path string, r *refImg) {
	p.mu.Lock()
	r.left--
	release := r.left == 0
	if release && p.refs[path] == r {
		delete(p.refs, path)
		delete(p.heads, path)
	}
	p.mu.Unlock()
	if release && r.bytes > 0 {
		p.budget.releaseRef(r.bytes)
	}
}

func (p *pipeline) decodeAndSubmit(w work) {
	if p.ctx.Err() != nil {
		return
	}
	path := w.pair.RefPath
	var ws int64                // predicted scoring memory, held with the images
	var refNeed, distNeed int64 // predicted decoding peaks
	if p.cfg.Probe != nil {
		if w.metrics, ws, refNeed, distNeed = p.precheck(w); len(w.metrics) == 0 {
			p.skipRef(path)
			return
		}
	}
	ref, created := p.getRef(path)
	if created {
		p.loadRef(ref, path, refNeed)
	} else {
		p.clock.refReuses.Add(1)
	}
	// A reference another decoder is still decoding is awaited after the
	// distorted image, so both decodes overlap.
	var dist *zenmetrics.Image
	var err error
	select {
	case <-ref.ready:
	default:
		dist, err = p.decode(w.pair.DistPath, distNeed)
		t0 := time.Now()
		<-ref.ready
		wait(&p.clock.refWait, t0)
	}
	if ref.err != nil {
		p.putRef(path, ref)
		p.errorRows(w, "", ref.err)
		return
	}
	if dist == nil && err == nil {
		dist, err = p.decode(w.pair.DistPath, distNeed)
	}
	if err != nil {
		p.putRef(path, ref)
		p.errorRows(w, "", err)
		return
	}
	if err := zenmetrics.CheckSameSize(ref.img, dist); err != nil {
		p.putRef(path, ref)
		p.errorRows(w, "", &zenmetrics.InputError{Path: w.pair.DistPath, Err: err})
		return
	}
	// Account the images in one acquisition (all or nothing, so waiting
	// decoders hold no budget and cannot starve each other). The first
	// pair to get here accounts the reference too.
	distBytes := int64(len(dist.Pix)) + ws
	var refBytes int64
	p.mu.Lock()
	if !ref.claimed {
		ref.claimed = true
		refBytes = int64(len(ref.img.Pix))
	}
	p.mu.Unlock()
	t0 := time.Now()
	err = p.budget.acquire(p.ctx, refBytes, distBytes)
	wait(&p.clock.budgetWait, t0)
	if err != nil {
		p.putRef(path, ref)
		return
	}
	if refBytes > 0 {
		p.mu.Lock()
		ref.bytes = refBytes
		p.mu.Unlock()
	}
	ps := &pairState{w: w, ref: ref, dist: dist, distBytes: distBytes, left: len(w.metrics), metric: map[uint64]zenmetrics.Metric{}}
	jobs := make([]Job, 0, len(w.metrics))
	p.mu.Lock()
	for _, m := range w.metrics {
		tag := p.tag.Add(1)
		p.inflight[tag] = ps
		ps.metric[tag] = m
		jobs = append(jobs, Job{Tag: tag, Metric: m, RefKey: ref.key, RefHash: ref.hash, Ref: ref.img, Dist: dist})
	}
	p.mu.Unlock()
	for i, j := range jobs {
		t0 := time.Now()
		err := p.cfg.Engine.Submit(p.ctx, j)
		wait(&p.clock.submitWait, t0)
		if err != nil {
			if p.ctx.Err() == nil {
				p.setFatal(fmt.Errorf("engine: %w", err))
			}
			// The jobs not submitted will never come back: finish them here.
			for _, j := range jobs[i:] {
				p.finish(j.Tag)
			}
			return
		}
	}
}

// finish forgets a job and frees its pair's images after its last job.
func (p *pipeline) finish(tag uint64) (ps *pairState, m zenmetrics.Metric) {
	p.mu.Lock()
	ps = p.inflight[tag]
	if ps == nil {
		p.mu.Unlock()
		return nil, 0
	}
	delete(p.inflight, tag)
	m = ps.metric[tag]
	ps.left--
	last := ps.left == 0
	p.mu.Unlock()
	if last {
		p.budget.releaseDist(ps.distBytes)
		p.putRef(ps.w.pair.RefPath, ps.ref)
	}
	return ps, m
}

func (p *pipeline) collect() {
	for {
		res, err := p.cfg.Engine.Next(p.ctx)
		if err == io.EOF {
			return
		}
		if err != nil {
			if p.ctx.Err() == nil {
				p.setFatal(fmt.Errorf("engine: %w", err))
			}
			return
		}
		p.clock.result(&res)
		ps, m := p.finish(res.Tag)
		if ps == nil {
			p.setFatal(fmt.Errorf("engine returned unknown job %d", res.Tag))
			continue
		}
		r := Row{ID: ps.w.pair.ID, Ref: ps.w.pair.Ref, Dist: ps.w.pair.Dist, Metric: m.String(),
			Backend: res.Backend, MS: float64(res.Elapsed.Microseconds()) / 1000}
		if res.Err != nil {
			r.Error = res.Err.Error()
		} else {
			v := res.Score.Value
			r.Score = &v
			if r.Validate() != nil {
				r.Score, r.Error = nil, fmt.Sprintf("non-finite score %v", v)
			}
			for k, x := range res.Score.Extras {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					continue // JSON cannot hold NaN or ±Inf
				}
				if r.Extras == nil {
					r.Extras = make(map[string]float64, len(res.Score.Extras))
				}
				r.Extras[k] = x
			}
		}
		p.send(r)
	}
}
