package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// Environment of the child process of TestKillAndResume.
const (
	envChildManifest = "ZM_BATCH_CHILD_MANIFEST"
	envChildOut      = "ZM_BATCH_CHILD_OUT"
	envChildBlock    = "ZM_BATCH_CHILD_BLOCK"
)

func TestMain(m *testing.M) {
	if man := os.Getenv(envChildManifest); man != "" {
		os.Exit(childRun(man, os.Getenv(envChildOut)))
	}
	os.Exit(m.Run())
}

// childRun is the killed process: a resumable batch with a slow fake
// scorer, small commit chunks, and several workers and decoders.
func childRun(manifest, out string) int {
	pairs, err := ReadManifest(manifest, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var b zenmetrics.Backend = &fakeBackend{name: "fake", delay: 3 * time.Millisecond}
	if os.Getenv(envChildBlock) == "1" {
		// A holder that never finishes: it says when it has started
		// scoring (its output is locked then) and waits to be killed.
		g := &gateBackend{fakeBackend: &fakeBackend{name: "fake"}, started: make(chan struct{}), release: make(chan struct{})}
		go func() { <-g.started; fmt.Println("started") }()
		b = g
	}
	e, err := NewBackendEngine(BackendEngineConfig{
		Backend: func(zenmetrics.Metric) (zenmetrics.Backend, error) { return b, nil }, Workers: 4})
	if err != nil {
		return 1
	}
	defer e.Close()
	_, err = Run(context.Background(), Config{Pairs: pairs, Metrics: twoMetrics, Out: out, Resume: true,
		Engine: e, Decoders: 3, FlushRows: 5, FlushInterval: 3 * time.Millisecond, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKillAndResume runs a batch in a child process, SIGKILLs it at random
// moments, resumes, and checks the final output has exactly one valid row
// per (pair, metric), for each output format.
func TestKillAndResume(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL test needs a Unix")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	kills := 24
	if s := os.Getenv("ZM_BATCH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	c := makeCorpus(t, 12, 10, true) // 123 pairs × 2 metrics
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, ext := range []string{"jsonl", "csv", "parquet"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out."+ext)
			start := func() *exec.Cmd {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), envChildManifest+"="+c.manifest, envChildOut+"="+out)
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd
			}
			killed, finished, tails := 0, 0, 0
			for killed < kills {
				cmd := start()
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				// Random moments over the run (a whole run takes ~100-200 ms).
				delay := time.Duration(rng.IntN(120_000)) * time.Microsecond
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("child failed: %v", err)
					}
					finished++
					// Finished before the kill: start over to get more kills.
					os.Remove(out)
					os.Remove(ckptPath(out))
					os.Remove(journalPath(out))
					os.Remove(ckptPath(journalPath(out)))
					continue
				case <-time.After(delay):
				}
				if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
					t.Fatal(err)
				}
				if err := <-exited; err == nil {
					// It finished just before the kill: as above.
					finished++
					os.Remove(out)
					os.Remove(ckptPath(out))
					os.Remove(journalPath(out))
					os.Remove(ckptPath(journalPath(out)))
					continue
				}
				killed++
				// Every intermediate state must already be readable by resume:
				// the final check below covers it; here check the committed
				// part of an append log never holds a duplicate.
				logPath := out // the append log: the output, or Parquet's journal
				if ext == "parquet" {
					logPath = journalPath(out)
				}
				{
					if _, err := os.Stat(logPath); err == nil {
						seen := map[Key]bool{}
						data, _ := os.ReadFile(logPath)
						ck, ok := readCkpt(logPath)
						if ok && ck.Size < int64(len(data)) {
							tails++ // killed between a write and its checkpoint
						}
						if ok && ck.Size <= int64(len(data)) {
							data = data[:ck.Size]
						}
						var scan func([]byte, func(Row)) (int64, int64, error) = scanJSONL
						if ext == "csv" {
							scan = scanCSV
						}
						if _, _, err := scan(data, func(r Row) {
							if seen[r.Key()] {
								t.Errorf("duplicate %v in the committed part after kill %d", r.Key(), killed)
							}
							seen[r.Key()] = true
						}); err != nil && ok {
							t.Errorf("committed part is invalid after kill %d: %v", killed, err)
						}
					}
				}
			}
			cmd := start()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("final resume failed: %v", err)
			}
			rows := readAll(t, out)
			checkExactlyOnce(t, c, rows, twoMetrics)
			t.Logf("%s: %d kills (%d with bytes past the checkpoint; %d runs finished before their kill), %d rows at the end",
				ext, killed, tails, finished, len(rows))
		})
	}
}
