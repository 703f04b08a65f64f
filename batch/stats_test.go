package batch

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// countingDecode wraps decodeStd: it sleeps delay per file and counts the
// decodes of each path.
type countingDecode struct {
	delay time.Duration
	mu    sync.Mutex
	n     map[string]int
}

func (d *countingDecode) decode(path string) (*zenmetrics.Image, error) {
	d.mu.Lock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[path]++
	d.mu.Unlock()
	if d.delay > 0 {
		time.Sleep(d.delay)
	}
	return decodeStd(path)
}

func runStages(t *testing.T, c *corpus, b *fakeBackend, workers int, mut func(*Config)) Summary {
	t.Helper()
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Pairs: pairs, Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Out: filepath.Join(t.TempDir(), "out.jsonl"), Engine: newFakeEngine(t, b, workers)}
	if mut != nil {
		mut(&cfg)
	}
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.OK != c.pairs {
		t.Fatalf("summary %+v", sum)
	}
	return sum
}

// within reports whether got is at least lo and at most 3×lo + 1 s: the
// sleeps of the fakes make lo a hard floor; the ceiling is generous for
// loaded machines.
func within(got, lo float64) bool { return got >= lo && got <= 3*lo+1 }

func TestStagesDecodeBound(t *testing.T) {
	c := makeCorpus(t, 3, 4, false) // 3 references, 12 pairs, 15 files
	dec := &countingDecode{delay: 25 * time.Millisecond}
	sum := runStages(t, c, &fakeBackend{name: "fake"}, 2, func(cfg *Config) {
		cfg.Decode, cfg.Decoders = dec.decode, 2
	})
	s := sum.Stages
	if s.Decoders != 2 || s.Workers != 2 {
		t.Errorf("decoders %d workers %d, want 2 and 2", s.Decoders, s.Workers)
	}
	if s.Decodes != 15 || s.RefDecodes != 3 || s.RefReuses != 9 {
		t.Errorf("decodes %d (refs %d, reuses %d), want 15 (3, 9)", s.Decodes, s.RefDecodes, s.RefReuses)
	}
	if lo := 15 * 0.025; !within(s.Decode, lo) {
		t.Errorf("decode %.3f s, want about %.3f s", s.Decode, lo)
	}
	// Two decoders: the wall time of decoding is at least half its busy
	// time and at most all of it.
	if s.DecodeWall < s.Decode/2-1e-3 || s.DecodeWall > s.Decode+1e-3 {
		t.Errorf("decode wall %.3f s for %.3f s busy on 2 decoders", s.DecodeWall, s.Decode)
	}
	if s.Scores != 12 || s.Prepares != 3 || s.Score > s.Decode/3 {
		t.Errorf("scores %d prepares %d score %.3f s (decode %.3f s)", s.Scores, s.Prepares, s.Score, s.Decode)
	}
	if s.ScorerIdle < s.Decode/4 || s.ScorerIdle <= s.SubmitWait+s.BudgetWait {
		t.Errorf("scorer idle %.3f s, decoders blocked %.3f + %.3f s: want a decode-bound run", s.ScorerIdle, s.SubmitWait, s.BudgetWait)
	}
	if b := s.Bound(sum.Elapsed.Seconds()); b != "decode" {
		t.Errorf("bound %q, want decode", b)
	}
	if s.Commits < 1 || s.Write <= 0 || s.Upload != UploadInScore {
		t.Errorf("commits %d write %v upload %q", s.Commits, s.Write, s.Upload)
	}
}

func TestStagesScoreBound(t *testing.T) {
	c := makeCorpus(t, 3, 4, false)
	b := &fakeBackend{name: "fake", delay: 40 * time.Millisecond, prepDelay: 30 * time.Millisecond}
	sum := runStages(t, c, b, 1, func(cfg *Config) { cfg.Decoders = 2 })
	s := sum.Stages
	if s.Scores != 12 || s.Prepares != 3 {
		t.Errorf("scores %d prepares %d, want 12 and 3", s.Scores, s.Prepares)
	}
	if lo := 12 * 0.040; !within(s.Score, lo) {
		t.Errorf("score %.3f s, want about %.3f s", s.Score, lo)
	}
	if lo := 3 * 0.030; !within(s.Prepare, lo) {
		t.Errorf("prepare %.3f s, want about %.3f s", s.Prepare, lo)
	}
	// One worker: prepare and score cannot exceed the wall time.
	if wall := sum.Elapsed.Seconds(); s.Score+s.Prepare > wall {
		t.Errorf("prepare %.3f + score %.3f s on one worker in %.3f s", s.Prepare, s.Score, wall)
	}
	if s.SubmitWait < s.Score/2 || s.ScorerIdle > s.Score/2 {
		t.Errorf("decoders waited %.3f s for the engine, scorer idle %.3f s, score %.3f s: want a score-bound run",
			s.SubmitWait, s.ScorerIdle, s.Score)
	}
	if b := s.Bound(sum.Elapsed.Seconds()); b != "score" {
		t.Errorf("bound %q, want score", b)
	}
	if s.Decode > s.Score/2 {
		t.Errorf("decode %.3f s with a fast decoder, score %.3f s", s.Decode, s.Score)
	}
}

// TestRefDecodedOnce: each reference is decoded once for all its variants,
// even when scoring is fast and decoders outnumber the pairs in flight, and
// with a budget that holds only a few images.
func TestRefDecodedOnce(t *testing.T) {
	c := makeCorpus(t, 3, 6, false)
	for _, budget := range []int64{2 << 30, 4000} { // an image is 24×16×3 = 1152 bytes
		dec := &countingDecode{}
		sum := runStages(t, c, &fakeBackend{name: "fake"}, 1, func(cfg *Config) {
			cfg.Decode, cfg.Decoders, cfg.MemoryBudget = dec.decode, 4, budget
		})
		for path, n := range dec.n {
			if n != 1 {
				t.Errorf("budget %d: %s decoded %d times", budget, filepath.Base(path), n)
			}
		}
		if len(dec.n) != 3+18 || sum.Stages.RefDecodes != 3 || sum.Stages.RefReuses != 15 {
			t.Errorf("budget %d: %d files decoded, stages %+v", budget, len(dec.n), sum.Stages)
		}
	}
}

// TestSlowDecodeDoesNotStall: one distorted image that takes long to decode
// does not hold up the others: its decode waits until every other pair has
// been scored, which deadlocks (and times out) if the pipeline stalls
// behind it.
func TestSlowDecodeDoesNotStall(t *testing.T) {
	c := makeCorpus(t, 2, 5, false)
	b := &fakeBackend{name: "fake"}
	slow := filepath.Join(c.dir, "img", "im000__v1.png")
	stalled := false
	decode := func(path string) (*zenmetrics.Image, error) {
		if path == slow {
			deadline := time.Now().Add(20 * time.Second)
			for b.scores.Load() < int64(c.pairs-1) {
				if time.Now().After(deadline) {
					stalled = true
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		return decodeStd(path)
	}
	runStages(t, c, b, 1, func(cfg *Config) { cfg.Decode, cfg.Decoders = decode, 3 })
	if stalled {
		t.Fatalf("the other pairs were not scored while one decode was slow (%d of %d)", b.scores.Load(), c.pairs-1)
	}
}

func TestDecodersDefaultToNumCPU(t *testing.T) {
	c := makeCorpus(t, 1, 2, false)
	sum := runStages(t, c, &fakeBackend{name: "fake"}, 1, nil)
	if sum.Stages.Decoders != runtime.NumCPU() {
		t.Errorf("decoders %d, want NumCPU = %d", sum.Stages.Decoders, runtime.NumCPU())
	}
}

func TestCLIStats(t *testing.T) {
	c := makeCorpus(t, 2, 3, false)
	deps := fakeDeps(&fakeBackend{name: "fake"}, nil)
	dir := t.TempDir()
	for _, tc := range []struct {
		args  []string
		table bool
	}{
		{nil, true},
		{[]string{"--quiet"}, false},
		{[]string{"--quiet", "--stats"}, true},
		{[]string{"--progress", "json"}, false},
		{[]string{"--progress", "json", "--stats"}, true},
	} {
		out := filepath.Join(dir, strings.Join(append([]string{"o"}, tc.args...), "")+".jsonl")
		args := append([]string{"--manifest", c.manifest, "--out", out}, tc.args...)
		code, _, stderr := runCLI(t, deps, args...)
		if code != ExitOK {
			t.Fatalf("%v: code %d\n%s", tc.args, code, stderr)
		}
		if got := strings.Contains(stderr, "time by stage"); got != tc.table {
			t.Errorf("%v: table printed %v, want %v\n%s", tc.args, got, tc.table, stderr)
			continue
		}
		if tc.table {
			for _, want := range []string{"\n  decode ", "\n  prepare ", "\n  score ", "upload: included in score", "\n  write ", "waits: scorers idle", "bound: "} {
				if !strings.Contains(stderr, want) {
					t.Errorf("%v: table lacks %q\n%s", tc.args, want, stderr)
				}
			}
		}
		if len(tc.args) > 1 && tc.args[0] == "--progress" {
			// The JSON summary carries the stages and the run's time.
			var last struct {
				Type    string  `json:"type"`
				Seconds float64 `json:"seconds"`
				Stages  *Stages `json:"stages"`
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			for _, l := range lines {
				if strings.HasPrefix(l, `{"type":"summary"`) {
					if err := json.Unmarshal([]byte(l), &last); err != nil {
						t.Fatal(err)
					}
				}
			}
			if last.Stages == nil || last.Stages.Scores != 6 || last.Seconds <= 0 {
				t.Errorf("%v: JSON summary %+v in\n%s", tc.args, last, stderr)
			}
		}
	}
}
