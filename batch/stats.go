package batch

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Stages.Upload says whether the host → device upload of the images
// scored was measured apart from scoring.
const (
	// UploadInScore: not measured (the engine or backend does not report
	// it; for a CPU backend nothing is uploaded). Score includes any
	// upload.
	UploadInScore = "included in score"
	// UploadMeasured: the backend measured it (a WebGPU backend under
	// BackendEngine, see UploadMeter). Uploads, UploadTime and UploadBytes
	// are set, and UploadTime is part of Score.
	UploadMeasured = "measured"
)

// Stages is where a run's time went. Busy times are summed over the
// goroutines doing the work (so they can exceed the run's wall time);
// wall times are the time during which at least one of them was at it.
//
// Reading it: ScorerIdle large and the waits of the decoders small means
// the run is decode-bound (more --decoders, faster storage); the reverse
// (decoders waiting for the engine or for memory while the scorers are
// never idle) means it is score-bound, as it should be.
type Stages struct {
	// Decoders and Workers are the decoder goroutines and the engine's
	// scoring workers (0 when the engine does not say).
	Decoders int `json:"decoders"`
	Workers  int `json:"workers"`

	// Decodes counts decoded files (references and distorted images);
	// RefDecodes the references among them and RefReuses the pairs that
	// used a reference decoded for an earlier pair.
	Decodes    int     `json:"decodes"`
	RefDecodes int     `json:"ref_decodes"`
	RefReuses  int     `json:"ref_reuses"`
	Decode     float64 `json:"decode_s"`      // summed over decoders
	DecodeWall float64 `json:"decode_wall_s"` // at least one decode running

	// Prepares counts reference preparations; Prepare is the time jobs
	// spent getting their prepared reference (preparing it, or waiting for
	// another worker preparing the same one), summed over workers.
	// PrepareInScore is set when the engine does not split the two (the
	// orchestrator): Prepare is then 0 and Score includes it.
	Prepares       int     `json:"prepares"`
	Prepare        float64 `json:"prepare_s"`
	PrepareInScore bool    `json:"prepare_in_score,omitempty"`
	// Scores counts the backend's Score calls; Score is their time summed
	// over workers. For a GPU backend it includes the upload of the
	// distorted image, which Upload says whether the backend measured
	// (UploadMeasured) or not (UploadInScore).
	Scores int     `json:"scores"`
	Score  float64 `json:"score_s"`
	Upload string  `json:"upload"`
	// When Upload is UploadMeasured: Uploads counts the uploads made while
	// scoring (one per distorted image; a strip reference that recomputes
	// its reference also uploads a crop of it per strip), UploadTime is
	// their host-side time (the writeBuffer call, or the staging buffer's
	// map wait, fill and unmap; the GPU-side copy runs in the score's
	// command buffer and stays in score), summed over workers, and
	// UploadBytes the image bytes sent. UploadTime is included in Score:
	// ScoreExclUpload is the rest. Uploads made while preparing references
	// are in Prepare and not counted here. All 0 when not measured.
	Uploads     int     `json:"uploads"`
	UploadTime  float64 `json:"upload_s"`
	UploadBytes int64   `json:"upload_bytes"`

	// Commits counts the output chunks written; Write is the time spent
	// serialising, writing and fsyncing them, plus closing the output
	// (for Parquet, assembling the final file).
	Commits int     `json:"commits"`
	Write   float64 `json:"write_s"`

	// ScorerIdle is the time the engine's workers waited for a decoded
	// job, summed over workers (decode-bound signal; 0 when the engine
	// does not measure it). BudgetWait is the time decoders waited for
	// memory budget and SubmitWait the time they waited for the engine to
	// take a job (both score-bound signals). RefWait is the time decoders
	// waited for a reference another decoder was decoding.
	ScorerIdle float64 `json:"scorer_idle_s"`
	BudgetWait float64 `json:"budget_wait_s"`
	SubmitWait float64 `json:"submit_wait_s"`
	RefWait    float64 `json:"ref_wait_s"`
}

// ScoreExclUpload is Score without the measured upload time (Score when
// the upload was not measured), never below 0. The two are measured by
// different clocks (the engine's around Score, the backend's around the
// upload inside it), so rounding could otherwise make it slightly
// negative for a run that does nothing but upload.
func (s *Stages) ScoreExclUpload() float64 {
	if s.Upload != UploadMeasured {
		return s.Score
	}
	return max(0, s.Score-s.UploadTime)
}

// Bound names the stage that limited the run: "decode" when the scorers
// spent a larger share of their time idle than the decoders spent
// waiting for the scorers (engine or memory), else "score"; "" when
// nothing ran.
func (s *Stages) Bound(wall float64) string {
	if wall <= 0 || s.Scores+s.Decodes == 0 {
		return ""
	}
	idle, blocked := s.waitShares(wall)
	if idle > blocked {
		return "decode"
	}
	return "score"
}

// waitShares are the two sides Bound weighs: the share of the scorers'
// time spent idle (waiting for decoded images) and the share of the
// decoders' time spent blocked (on the engine or on memory).
func (s *Stages) waitShares(wall float64) (idle, blocked float64) {
	if s.Workers > 0 {
		idle = s.ScorerIdle / (float64(s.Workers) * wall)
	}
	if s.Decoders > 0 {
		blocked = (s.BudgetWait + s.SubmitWait) / (float64(s.Decoders) * wall)
	}
	return idle, blocked
}

// activity measures work done by several goroutines: the busy time summed
// over them, and the wall time during which at least one was busy.
type activity struct {
	mu    sync.Mutex
	n     int
	since time.Time
	count int
	busy  time.Duration
	wall  time.Duration
}

func (a *activity) begin() time.Time {
	now := time.Now()
	a.mu.Lock()
	if a.n == 0 {
		a.since = now
	}
	a.n++
	a.mu.Unlock()
	return now
}

func (a *activity) end(t0 time.Time) {
	now := time.Now()
	a.mu.Lock()
	a.n--
	a.count++
	a.busy += now.Sub(t0)
	if a.n == 0 {
		a.wall += now.Sub(a.since)
	}
	a.mu.Unlock()
}

// stageClock gathers a run's Stages from several goroutines.
type stageClock struct {
	decode                          activity
	refDecodes, refReuses           atomic.Int64
	refWait, budgetWait, submitWait atomic.Int64 // nanoseconds

	// Filled by the single collecting goroutine.
	prepares, scores     int
	prepare, score, idle time.Duration
	prepareInScore       bool
	commits              int
	write                time.Duration // the writer goroutine only

	// Set once by Run after the run when the engine measured uploads.
	uploadMeasured bool
	upload         webgpu.UploadStats
}

// wait adds the time since t0 to a counter of nanoseconds.
func wait(c *atomic.Int64, t0 time.Time) { c.Add(int64(time.Since(t0))) }

// result accounts one engine result.
func (c *stageClock) result(r *JobResult) {
	if r.Timed {
		c.prepare += r.Prepare
		c.score += r.ScoreTime
		if r.Prepared {
			c.prepares++
		}
		if r.Scored {
			c.scores++
		}
	} else {
		c.prepareInScore = true
		c.score += r.Elapsed
		if r.Err == nil {
			c.scores++
		}
	}
	c.idle += r.Idle
}

func (c *stageClock) stages(decoders, workers int) Stages {
	c.decode.mu.Lock()
	defer c.decode.mu.Unlock()
	s := Stages{
		Decoders: decoders, Workers: workers,
		Decodes: c.decode.count, RefDecodes: int(c.refDecodes.Load()), RefReuses: int(c.refReuses.Load()),
		Decode: c.decode.busy.Seconds(), DecodeWall: c.decode.wall.Seconds(),
		Prepares: c.prepares, Prepare: c.prepare.Seconds(), PrepareInScore: c.prepareInScore,
		Scores: c.scores, Score: c.score.Seconds(), Upload: UploadInScore,
		Commits: c.commits, Write: c.write.Seconds(),
		ScorerIdle: c.idle.Seconds(),
		BudgetWait: time.Duration(c.budgetWait.Load()).Seconds(),
		SubmitWait: time.Duration(c.submitWait.Load()).Seconds(),
		RefWait:    time.Duration(c.refWait.Load()).Seconds(),
	}
	if c.uploadMeasured {
		s.Upload = UploadMeasured
		s.Uploads = int(c.upload.Count)
		s.UploadTime = c.upload.Total.Seconds()
		s.UploadBytes = c.upload.Bytes
	}
	return s
}

// uploadEngine is an engine that can say what its backends uploaded
// (BackendEngine.Uploads).
type uploadEngine interface {
	Uploads() (webgpu.UploadStats, bool)
}

// uploadsSince records in c the uploads e made since the snapshot u0 (the
// engine's counters at the start of the run), if e measures them.
func (c *stageClock) uploadsSince(e Engine, u0 webgpu.UploadStats) {
	ue, ok := e.(uploadEngine)
	if !ok {
		return
	}
	u, ok := ue.Uploads()
	if !ok {
		return
	}
	c.uploadMeasured = true
	c.upload = u.Sub(u0)
}

// PrintStages writes the stage table of a run, e.g. for a WebGPU backend
// that measures its uploads
//
//	zmscore: time by stage (wall 18.20 s, 2 decoders, 2 workers; busy = summed over goroutines)
//	  stage      count   busy s   wall s   per item
//	  decode        84     3.30     2.11    39.3 ms   (7 references decoded, reused by 70 pairs)
//	  prepare        7     2.83        -   404.3 ms
//	  upload        77    0.400        -   5.195 ms   (1847.7 MB, 4619.3 MB/s host side; the GPU copy is in score)
//	  score         77    26.30        -   341.6 ms   (excl. upload; 26.70 s with it)
//	  write          3     0.01     0.01     3.3 ms
//	  waits: scorers idle 0.40 s (waiting for images); decoders blocked 10.52 s on the engine, 0.00 s on memory, 0.10 s on a shared reference
//	  bound: score (decoders blocked 29% of their time, scorers idle 1% of theirs)
//
// Without a measured upload there is no upload row and the score row ends
// in "(upload: included in score)".
func PrintStages(w io.Writer, sum *Summary) {
	s := &sum.Stages
	wall := sum.Elapsed.Seconds()
	workers := "workers unknown"
	if s.Workers > 0 {
		workers = fmt.Sprintf("%d workers", s.Workers)
	}
	fmt.Fprintf(w, "zmscore: time by stage (wall %.2f s, %d decoders, %s; busy = summed over goroutines)\n", wall, s.Decoders, workers)
	fmt.Fprintf(w, "  %-8s %7s %8s %8s %10s\n", "stage", "count", "busy s", "wall s", "per item")
	per := func(busy float64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", 1000*busy/float64(n))
	}
	fmt.Fprintf(w, "  %-8s %7d %8.2f %8.2f %10s   (%d references decoded, reused by %d pairs)\n",
		"decode", s.Decodes, s.Decode, s.DecodeWall, per(s.Decode, s.Decodes), s.RefDecodes, s.RefReuses)
	if s.PrepareInScore {
		fmt.Fprintf(w, "  %-8s %7s %8s %8s %10s   (included in score: the engine does not split them)\n", "prepare", "-", "-", "-", "-")
	} else {
		fmt.Fprintf(w, "  %-8s %7d %8.2f %8s %10s\n", "prepare", s.Prepares, s.Prepare, "-", per(s.Prepare, s.Prepares))
	}
	if s.Upload == UploadMeasured {
		rate := "-"
		if s.UploadTime > 0 {
			rate = fmt.Sprintf("%.1f", float64(s.UploadBytes)/1e6/s.UploadTime)
		}
		// Three decimals: a host-side copy is often well under a
		// millisecond per image, which the other rows' format rounds to 0.
		perUp := "-"
		if s.Uploads > 0 {
			perUp = fmt.Sprintf("%.3f ms", 1000*s.UploadTime/float64(s.Uploads))
		}
		fmt.Fprintf(w, "  %-8s %7d %8.3f %8s %10s   (%.1f MB, %s MB/s host side; the GPU copy is in score)\n",
			"upload", s.Uploads, s.UploadTime, "-", perUp, float64(s.UploadBytes)/1e6, rate)
		excl := s.ScoreExclUpload()
		fmt.Fprintf(w, "  %-8s %7d %8.2f %8s %10s   (excl. upload; %.2f s with it)\n", "score", s.Scores, excl, "-", per(excl, s.Scores), s.Score)
	} else {
		fmt.Fprintf(w, "  %-8s %7d %8.2f %8s %10s   (upload: %s)\n", "score", s.Scores, s.Score, "-", per(s.Score, s.Scores), s.Upload)
	}
	fmt.Fprintf(w, "  %-8s %7d %8.2f %8.2f %10s\n", "write", s.Commits, s.Write, s.Write, per(s.Write, s.Commits))
	idle := "not measured by this engine"
	if s.Workers > 0 {
		idle = fmt.Sprintf("%.2f s", s.ScorerIdle)
	}
	fmt.Fprintf(w, "  waits: scorers idle %s (waiting for images); decoders blocked %.2f s on the engine, %.2f s on memory, %.2f s on a shared reference\n",
		idle, s.SubmitWait, s.BudgetWait, s.RefWait)
	// The verdict and the numbers it rests on, on one line, so that the
	// waits above never read as saying the opposite of it.
	if b := s.Bound(wall); b != "" {
		si, db := s.waitShares(wall)
		why := fmt.Sprintf("decoders blocked %.0f%% of their time, scorers idle %.0f%% of theirs", 100*db, 100*si)
		if s.Workers == 0 {
			why = fmt.Sprintf("decoders blocked %.0f%% of their time; scorer idleness not measured", 100*db)
		}
		fmt.Fprintf(w, "  bound: %s (%s)\n", b, why)
	}
}
