package batch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

var twoMetrics = []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli}

func runOnce(t *testing.T, c *corpus, out string, b *fakeBackend, mut func(*Config)) (Summary, error) {
	t.Helper()
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Pairs: pairs, Metrics: twoMetrics, Out: out, Engine: newFakeEngine(t, b, 3),
		Decoders: 3, FlushRows: 7, MemoryBudget: 8 << 10}
	if mut != nil {
		mut(&cfg)
	}
	return Run(context.Background(), cfg)
}

func TestRunFormatsAndFailureIsolation(t *testing.T) {
	c := makeCorpus(t, 4, 5, true)
	for _, ext := range []string{"jsonl", "csv", "parquet"} {
		t.Run(ext, func(t *testing.T) {
			b := &fakeBackend{name: "fake"}
			out := filepath.Join(t.TempDir(), "out."+ext)
			sum, err := runOnce(t, c, out, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows := readAll(t, out)
			checkExactlyOnce(t, c, rows, twoMetrics)
			if sum.Total != 2*c.pairs || sum.OK != 2*(c.pairs-c.bad) || sum.Failed != 2*c.bad || sum.Skipped != 0 {
				t.Errorf("summary %+v", sum)
			}
			if got := sum.ByBackend["fake"]; got == nil || got.OK != sum.OK {
				t.Errorf("by backend %+v", sum.ByBackend)
			}
			// One reference, five variants, two metrics: prepared at most
			// once per (reference, metric) while the cache holds it.
			if p := b.prepares.Load(); p > int64(4*2*2) {
				t.Errorf("%d prepares for 4 references × 2 metrics", p)
			}
			for _, r := range rows {
				if !r.OK() && !strings.Contains(r.Error, "img/") {
					t.Errorf("error row does not name the file: %q", r.Error)
				}
			}
			// A second run without --resume refuses; with it, skips all.
			if _, err := runOnce(t, c, out, b, nil); err == nil {
				t.Fatal("second run over an existing output succeeded without --resume")
			}
			sum2, err := runOnce(t, c, out, b, func(cfg *Config) { cfg.Resume = true })
			if err != nil {
				t.Fatal(err)
			}
			if sum2.Skipped != sum.Total || sum2.OK+sum2.Failed != 0 || sum2.SkippedFailed != 2*c.bad {
				t.Errorf("resumed summary %+v", sum2)
			}
			checkExactlyOnce(t, c, readAll(t, out), twoMetrics)
		})
	}
}

func TestRetryFailed(t *testing.T) {
	c := makeCorpus(t, 2, 3, false)
	for _, ext := range []string{"jsonl", "csv", "parquet"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out."+ext)
			bad := &fakeBackend{name: "fake", failOn: "butteraugli"}
			sum, err := runOnce(t, c, out, bad, nil)
			if err != nil || sum.Failed != c.pairs {
				t.Fatalf("%v %+v", err, sum)
			}
			good := &fakeBackend{name: "fake"}
			sum, err = runOnce(t, c, out, good, func(cfg *Config) { cfg.Resume, cfg.RetryFailed = true, true })
			if err != nil || sum.OK != c.pairs || sum.Skipped != c.pairs || sum.Failed != 0 {
				t.Fatalf("%v %+v", err, sum)
			}
			checkExactlyOnce(t, c, readAll(t, out), twoMetrics)
		})
	}
}

func TestTornTailIsCutOnResume(t *testing.T) {
	c := makeCorpus(t, 2, 4, false)
	for _, ext := range []string{"jsonl", "csv"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out."+ext)
			if _, err := runOnce(t, c, out, &fakeBackend{name: "fake"}, nil); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(out)
			// Cut the last row in half and add it twice beyond the checkpoint:
			// a torn write after the last commit.
			lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			last := lines[len(lines)-1]
			torn := append(append([]byte{}, data[:len(data)-len(last)-1]...), last[:len(last)/2]...)
			if err := os.WriteFile(out, torn, 0o644); err != nil {
				t.Fatal(err)
			}
			// The checkpoint still says the full length; the file is shorter.
			sum, err := runOnce(t, c, out, &fakeBackend{name: "fake"}, func(cfg *Config) { cfg.Resume = true })
			if err != nil {
				t.Fatal(err)
			}
			if sum.OK != 1 {
				t.Errorf("redid %d rows, want 1: %+v", sum.OK, sum)
			}
			checkExactlyOnce(t, c, readAll(t, out), twoMetrics)

			// Garbage past the checkpoint (an uncommitted chunk) is dropped.
			f, _ := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"id":"zzz","metric":"ssim2","score":1}` + "\n" + `{"id":"to`)
			f.Close()
			sum, err = runOnce(t, c, out, &fakeBackend{name: "fake"}, func(cfg *Config) { cfg.Resume = true })
			if err != nil || sum.OK != 0 {
				t.Fatalf("%v %+v", err, sum)
			}
			checkExactlyOnce(t, c, readAll(t, out), twoMetrics)
		})
	}
}

func TestShardsPartitionAndMerge(t *testing.T) {
	c := makeCorpus(t, 5, 6, true)
	dir := t.TempDir()
	const n = 3
	var outs []string
	total := 0
	for i := 0; i < n; i++ {
		out := filepath.Join(dir, "part.jsonl")
		sh := Shard{i, n}
		out = ShardPath(out, sh)
		outs = append(outs, out)
		sum, err := runOnce(t, c, out, &fakeBackend{name: "fake"}, func(cfg *Config) { cfg.Shard = sh })
		if err != nil {
			t.Fatal(err)
		}
		total += sum.Total
		if sum.Total == 0 || sum.Total == 2*c.pairs {
			t.Errorf("shard %d has %d of %d rows: not a partition", i, sum.Total, 2*c.pairs)
		}
	}
	if total != 2*c.pairs {
		t.Fatalf("shards cover %d rows, want %d", total, 2*c.pairs)
	}
	pairs, _ := ReadManifest(c.manifest, "")
	for _, f := range []string{"jsonl", "csv", "parquet"} {
		merged := filepath.Join(dir, "merged."+f)
		rep, err := Merge(MergeConfig{Inputs: outs, Out: merged, Pairs: pairs, Metrics: twoMetrics})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Missing != 0 || rep.Duplicates != 0 || rep.Rows != 2*c.pairs {
			t.Errorf("merge report %+v", rep)
		}
		checkExactlyOnce(t, c, readAll(t, merged), twoMetrics)
	}
	// Missing shard and a duplicated one are reported.
	rep, err := Merge(MergeConfig{Inputs: []string{outs[0], outs[0], outs[1]}, Out: filepath.Join(dir, "m2.jsonl"),
		Pairs: pairs, Metrics: twoMetrics})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing == 0 || rep.Duplicates == 0 || rep.Conflicts != 0 {
		t.Errorf("merge report %+v", rep)
	}
}

func TestProgressModes(t *testing.T) {
	c := makeCorpus(t, 2, 3, true)
	for _, mode := range []ProgressMode{ProgressLines, ProgressJSON, ProgressBar} {
		var buf bytes.Buffer
		pr := NewProgress(mode, &buf, time.Millisecond)
		_, err := runOnce(t, c, filepath.Join(t.TempDir(), "o.jsonl"), &fakeBackend{name: "fake", delay: 2 * time.Millisecond},
			func(cfg *Config) { cfg.Progress = pr })
		if err != nil {
			t.Fatal(err)
		}
		s := buf.String()
		want := map[ProgressMode]string{ProgressLines: "18/18 rows (100.0%)", ProgressJSON: `"type":"summary"`, ProgressBar: "\r"}[mode]
		if !strings.Contains(s, want) || !strings.Contains(s, "fake") {
			t.Errorf("%s progress output lacks %q:\n%s", mode, want, s)
		}
	}
	if NewProgress(ProgressAuto, &bytes.Buffer{}, 0).mode != ProgressLines {
		t.Error("a buffer is taken for a terminal")
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err == nil {
		defer devnull.Close()
		if IsTerminal(devnull) {
			t.Error("/dev/null is taken for a terminal")
		}
	}
}
