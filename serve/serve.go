// Package serve is the scoring server behind `zmscore serve`: one
// long-lived process that keeps the orchestrator (its backends, the GPU
// device and the compiled kernels) and prepared references warm, and
// answers scoring requests, so that an encoder's target-quality loop (av1an,
// ab-av1, a custom sweep) that scores one source many times pays start-up,
// decoding and reference preparation once instead of once per score.
//
// Requests are JSON objects (one per line on a stream, or an HTTP POST
// body):
//
//	{"id": 7, "ref": "src.png", "dist": "enc_q30.png", "metric": "ssim2"}
//	{"id": "b", "ref": "src.png", "dist": "enc.png", "metrics": ["ssim2", "butteraugli"],
//	 "options": {"intensity_target": 250, "pnorm": 6}}
//	{"id": 9, "op": "stats"}
//
// Each gets one response, in completion order, carrying the request's id:
// per metric its score, extras, backend and time, and whether the prepared
// reference was reused; or an error with a typed kind (Kind*). A bad
// request never stops the server.
//
// References are reused at two levels: the decoded image, by path,
// modification time and size (a file rewritten in place is decoded again);
// and the prepared reference, by the orchestrator's reference cache, keyed
// by a hash of the pixels (refcache), so the same pixels under two names
// are prepared once.
//
// Memory is bounded by construction: at most Workers requests are decoded
// and scored at once (each image at most MaxPixels), at most Queue more
// wait, decoded references are kept up to RefCacheBytes, and a request is
// at most MaxRequestBytes. A full queue pauses the stream reader
// (backpressure through the pipe) and makes the HTTP handler answer 503.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// Error kinds of a response, for clients to branch on without parsing
// messages.
const (
	KindBadRequest   = "bad_request"   // not JSON, unknown field, missing ref/dist, bad metric or option
	KindTooLarge     = "too_large"     // request over MaxRequestBytes (an image over MaxPixels is bad_input)
	KindNotFound     = "not_found"     // ref or dist does not exist
	KindBadInput     = "bad_input"     // corrupt, truncated or unreadable image
	KindSizeMismatch = "size_mismatch" // ref and dist differ in size
	KindUnsupported  = "unsupported"   // metric, option or format not implemented
	KindOutOfMemory  = "out_of_memory" // no backend had the memory
	KindDeviceLost   = "device_lost"   // the GPU was lost
	KindBusy         = "busy"          // queue full (HTTP only: the stream waits instead)
	KindShutdown     = "shutting_down" // arrived after shutdown began
	KindCanceled     = "canceled"      // cancelled by a forced shutdown
	KindInternal     = "internal"      // a bug: a panic or an unexpected error
)

// Request is one scoring request.
type Request struct {
	// ID is echoed in the response; any JSON value (a number or a string).
	ID json.RawMessage `json:"id,omitempty"`
	// Op is "" or "score" for a score, "stats" for the server's counters.
	Op   string `json:"op,omitempty"`
	Ref  string `json:"ref,omitempty"`
	Dist string `json:"dist,omitempty"`
	// Metric or Metrics (not both); default ssim2.
	Metric  string   `json:"metric,omitempty"`
	Metrics []string `json:"metrics,omitempty"`
	Options *Options `json:"options,omitempty"`
}

// Options are metric options; they apply to Butteraugli only, as on the
// zmscore command line.
type Options struct {
	IntensityTarget float64 `json:"intensity_target,omitempty"`
	PNorm           float64 `json:"pnorm,omitempty"`
}

// Result is one metric's outcome in a response.
type Result struct {
	Metric  string             `json:"metric"`
	Score   *float64           `json:"score,omitempty"`
	Extras  map[string]float64 `json:"extras,omitempty"`
	Backend string             `json:"backend,omitempty"`
	MS      float64            `json:"ms"`
	// RefReused: the prepared reference came from the cache.
	RefReused bool   `json:"ref_reused"`
	Error     string `json:"error,omitempty"`
	Kind      string `json:"kind,omitempty"`
}

// Response answers one Request.
type Response struct {
	ID      json.RawMessage `json:"id,omitempty"`
	Ref     string          `json:"ref,omitempty"`
	Dist    string          `json:"dist,omitempty"`
	Results []Result        `json:"results,omitempty"`
	// RefDecodedCached: the reference's decoded pixels were reused (same
	// path, modification time and size as an earlier request).
	RefDecodedCached *bool   `json:"ref_decoded_cached,omitempty"`
	MS               float64 `json:"ms"`
	Stats            *Stats  `json:"stats,omitempty"`
	// Error and Kind are set when the request as a whole failed (a bad
	// request, a missing or corrupt image); a metric that fails alone
	// has them in its Result.
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// Stats are the server's counters since start.
type Stats struct {
	Requests      int64    `json:"requests"`
	Errors        int64    `json:"errors"`
	Rejected      int64    `json:"rejected_busy"`
	InFlight      int64    `json:"in_flight"`
	Queued        int      `json:"queued"`
	DecodedHits   int64    `json:"ref_decoded_hits"`
	DecodedMisses int64    `json:"ref_decoded_misses"`
	DecodedBytes  int64    `json:"ref_decoded_bytes"`
	PreparedHits  int64    `json:"ref_prepared_hits"`
	PreparedMiss  int64    `json:"ref_prepared_misses"`
	Backends      []string `json:"backends"`
}

// Config configures a Server.
type Config struct {
	// Orchestrator scores the tasks; the server does not close it.
	Orchestrator *orchestrator.Orchestrator
	// Workers is how many requests are decoded and scored at once
	// (0: 2). The orchestrator spreads their tasks over its backends.
	Workers int
	// Queue is how many accepted requests may wait for a worker (0: 64).
	Queue int
	// MaxRequestBytes bounds one request line or body (0: 64 KiB).
	MaxRequestBytes int
	// MaxPixels bounds each image (0: imageio.DefaultMaxPixels).
	MaxPixels int64
	// RefCacheEntries and RefCacheBytes bound the decoded references kept
	// (0: 16 and 1 GiB).
	RefCacheEntries int
	RefCacheBytes   int64
	// Decode is imageio.DecodeFileOptions; tests may replace it.
	Decode func(path string, opt imageio.Options) (*zenmetrics.Image, error)
}

// Server answers requests on a bounded pool of workers.
type Server struct {
	cfg  Config
	orch *orchestrator.Orchestrator
	refs *refCache
	jobs chan *job

	mu       sync.Mutex // guards stopping with accepted.Add
	stopping bool
	accepted sync.WaitGroup // accepted requests not yet answered
	quit     chan struct{}  // closed by Close: workers exit
	workers  sync.WaitGroup
	hard     context.Context // cancelled by Abort
	abort    context.CancelFunc

	requests, errs, rejected, inFlight atomic.Int64
}

type job struct {
	req   Request
	reply func(Response)
}

// New starts the workers.
func New(cfg Config) (*Server, error) {
	if cfg.Orchestrator == nil {
		return nil, errors.New("serve: no orchestrator")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 64
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 64 << 10
	}
	if cfg.MaxPixels <= 0 {
		cfg.MaxPixels = imageio.DefaultMaxPixels
	}
	if cfg.RefCacheEntries <= 0 {
		cfg.RefCacheEntries = 16
	}
	if cfg.RefCacheBytes <= 0 {
		cfg.RefCacheBytes = 1 << 30
	}
	if cfg.Decode == nil {
		cfg.Decode = imageio.DecodeFileOptions
	}
	s := &Server{cfg: cfg, orch: cfg.Orchestrator, jobs: make(chan *job, cfg.Queue), quit: make(chan struct{})}
	s.refs = newRefCache(cfg.RefCacheEntries, cfg.RefCacheBytes, func(p string) (*zenmetrics.Image, error) {
		return cfg.Decode(p, imageio.Options{MaxPixels: cfg.MaxPixels})
	})
	s.hard, s.abort = context.WithCancel(context.Background())
	for range cfg.Workers {
		s.workers.Add(1)
		go s.work()
	}
	return s, nil
}

// MaxRequestBytes is the configured request size limit.
func (s *Server) MaxRequestBytes() int { return s.cfg.MaxRequestBytes }

// errStopping: the server no longer accepts requests.
var errStopping = errors.New("serve: shutting down")

// errBusy: the queue is full.
var errBusy = errors.New("serve: queue full")

// accept queues req; reply is called exactly once, from a worker, unless
// accept returns an error (then never). wait says whether to block while
// the queue is full (the stream) or to fail with errBusy (HTTP).
func (s *Server) accept(req Request, reply func(Response), wait bool) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return errStopping
	}
	s.accepted.Add(1)
	s.mu.Unlock()
	j := &job{req: req, reply: reply}
	if wait {
		s.jobs <- j // workers run until every accepted job is answered
		return nil
	}
	select {
	case s.jobs <- j:
		return nil
	default:
		s.accepted.Done()
		s.rejected.Add(1)
		return errBusy
	}
}

// Shutdown stops accepting requests and waits until every accepted one is
// answered (or ctx ends; then the running ones are cancelled and still
// answered, with KindCanceled). The workers then exit.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.accepted.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		s.abort()
		<-done
		err = ctx.Err()
	}
	close(s.quit)
	s.workers.Wait()
	s.abort()
	return err
}

func (s *Server) work() {
	defer s.workers.Done()
	for {
		select {
		case j := <-s.jobs:
			s.inFlight.Add(1)
			resp := s.handle(s.hard, j.req)
			s.inFlight.Add(-1)
			j.reply(resp)
			s.accepted.Done()
		case <-s.quit:
			return
		}
	}
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	rs := s.orch.CachedRefStats()
	dh, dm, db := s.refs.stats()
	return Stats{
		Requests: s.requests.Load(), Errors: s.errs.Load(), Rejected: s.rejected.Load(),
		InFlight: s.inFlight.Load(), Queued: len(s.jobs),
		DecodedHits: dh, DecodedMisses: dm, DecodedBytes: db,
		PreparedHits: int64(rs.Hits), PreparedMiss: int64(rs.Misses),
		Backends: s.orch.Backends(),
	}
}

// handle answers one request; it never panics.
func (s *Server) handle(ctx context.Context, req Request) (resp Response) {
	t0 := time.Now()
	resp = Response{ID: req.ID, Ref: req.Ref, Dist: req.Dist}
	defer func() {
		if v := recover(); v != nil {
			resp.Results = nil
			resp.Error, resp.Kind = fmt.Sprintf("internal error: %v", v), KindInternal
		}
		resp.MS = millis(time.Since(t0))
		if resp.Error != "" {
			s.errs.Add(1)
		}
	}()
	switch req.Op {
	case "stats":
		st := s.Stats()
		resp.Stats = &st
		return resp
	case "", "score":
	default:
		resp.Error, resp.Kind = fmt.Sprintf("unknown op %q (score, stats)", req.Op), KindBadRequest
		return resp
	}
	s.requests.Add(1)
	metrics, opts, err := parseRequest(&req)
	if err != nil {
		resp.Error, resp.Kind = err.Error(), KindBadRequest
		return resp
	}
	ref, hit, err := s.refs.get(req.Ref)
	if err != nil {
		resp.Error, resp.Kind = "ref: "+err.Error(), Kind(err)
		return resp
	}
	resp.RefDecodedCached = &hit
	dist, err := s.cfg.Decode(req.Dist, imageio.Options{MaxPixels: s.cfg.MaxPixels})
	if err == nil {
		err = zenmetrics.CheckSameSize(ref, dist)
	}
	if err != nil {
		resp.Error, resp.Kind = "dist: "+err.Error(), Kind(err)
		return resp
	}
	for _, m := range metrics {
		o := zenmetrics.Options{}
		if m == zenmetrics.Butteraugli {
			o = opts
		}
		t1 := time.Now()
		r := s.orch.RunSingle(ctx, orchestrator.Task{Metric: m, Ref: ref, Dist: dist, Options: o})
		res := Result{Metric: m.String(), Backend: r.Backend, MS: millis(time.Since(t1)), RefReused: r.CacheHit}
		if r.Err == nil && (math.IsNaN(r.Score.Value) || math.IsInf(r.Score.Value, 0)) {
			r.Err = fmt.Errorf("metric returned %v", r.Score.Value)
		}
		if r.Err != nil {
			res.Error, res.Kind = r.Err.Error(), Kind(r.Err)
			s.errs.Add(1)
		} else {
			v := r.Score.Value
			res.Score = &v
			if len(r.Score.Extras) > 0 {
				res.Extras = r.Score.Extras
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// parseRequest checks a score request and returns its metrics and
// Butteraugli options.
func parseRequest(req *Request) ([]zenmetrics.Metric, zenmetrics.Options, error) {
	var o zenmetrics.Options
	if req.Ref == "" || req.Dist == "" {
		return nil, o, errors.New(`"ref" and "dist" are required`)
	}
	names := req.Metrics
	if req.Metric != "" {
		if len(names) > 0 {
			return nil, o, errors.New(`give "metric" or "metrics", not both`)
		}
		names = []string{req.Metric}
	}
	if len(names) == 0 {
		names = []string{"ssim2"}
	}
	if len(names) > 8 {
		return nil, o, fmt.Errorf("%d metrics in one request; at most 8", len(names))
	}
	var ms []zenmetrics.Metric
	seen := map[zenmetrics.Metric]bool{}
	for _, n := range names {
		m, err := zenmetrics.ParseMetric(n)
		if err != nil {
			return nil, o, err
		}
		if seen[m] {
			return nil, o, fmt.Errorf("metric %s given twice", m)
		}
		seen[m] = true
		ms = append(ms, m)
	}
	if req.Options != nil {
		if !seen[zenmetrics.Butteraugli] {
			return nil, o, errors.New(`"options" apply to butteraugli only`)
		}
		it, p := req.Options.IntensityTarget, req.Options.PNorm
		if it != 0 && (!(it > 0) || math.IsInf(it, 0)) {
			return nil, o, fmt.Errorf("intensity_target must be a positive number of nits, not %v", it)
		}
		if p != 0 && (!(p > 0) || math.IsInf(p, 0)) {
			return nil, o, fmt.Errorf("pnorm must be positive, not %v", p)
		}
		o.IntensityTarget, o.PNorm = it, p
	}
	return ms, o, nil
}

// Kind classifies an error for a response.
func Kind(err error) string {
	var pe *zenmetrics.PanicError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return KindNotFound
	case errors.Is(err, zenmetrics.ErrSizeMismatch):
		return KindSizeMismatch
	case errors.Is(err, zenmetrics.ErrBadInput):
		return KindBadInput
	case errors.Is(err, zenmetrics.ErrUnsupported):
		return KindUnsupported
	case errors.Is(err, zenmetrics.ErrOutOfMemory):
		return KindOutOfMemory
	case errors.Is(err, zenmetrics.ErrDeviceLost):
		return KindDeviceLost
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return KindCanceled
	case errors.As(err, &pe):
		return KindInternal
	}
	return KindInternal
}

func millis(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

// absPath is the key path of a reference: absolute, so that "a.png" and
// "./a.png" are one entry.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
