package batch

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// gateBackend is a fakeBackend whose first Prepare closes started and then
// waits for release: a run that is certainly in progress, holding its
// output, for as long as the test needs.
type gateBackend struct {
	*fakeBackend
	once             sync.Once
	started, release chan struct{}
}

func (g *gateBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	g.once.Do(func() { close(g.started) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeBackend.Prepare(ctx, m, ref, o)
}

// TestSecondWriterRefused: while a run writes an output, a second run on
// it (with or without --resume) and a merge into it exit 1 at once naming
// the holder; the first run's output is then complete, exactly once per
// row, and a later --resume finds nothing to redo.
func TestSecondWriterRefused(t *testing.T) {
	c := makeCorpus(t, 3, 4, false)
	for _, ext := range []string{"jsonl", "parquet"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "o."+ext)
			g := &gateBackend{fakeBackend: &fakeBackend{name: "fake"}, started: make(chan struct{}), release: make(chan struct{})}
			first := make(chan int, 1)
			var firstErr string
			go func() {
				var o, e strings.Builder
				code := CLI(context.Background(), []string{"--manifest", c.manifest, "--metric", "ssim2,butteraugli", "--out", out, "--quiet"},
					&o, &e, Deps{OpenBackend: func(BackendOptions) (zenmetrics.Backend, error) { return g, nil }, Decode: decodeStd})
				firstErr = e.String()
				first <- code
			}()
			<-g.started
			deps := fakeDeps(&fakeBackend{name: "fake"}, nil)
			pid := "pid " + strconv.Itoa(os.Getpid()) + " "
			for _, extra := range [][]string{nil, {"--resume"}, {"--force"}} {
				args := append([]string{"--manifest", c.manifest, "--metric", "ssim2,butteraugli", "--out", out}, extra...)
				code, _, stderr := runCLI(t, deps, args...)
				if code != ExitFatal || !strings.Contains(stderr, "being written by another run") || !strings.Contains(stderr, pid) {
					t.Errorf("second run %v: code %d, stderr %q", extra, code, stderr)
				}
			}
			_, err := Merge(MergeConfig{Inputs: []string{out}, Out: out})
			if !errors.Is(err, ErrOutputLocked) {
				t.Errorf("merge into the output being written: %v", err)
			}
			other := filepath.Join(t.TempDir(), "m.jsonl")
			if _, err := Merge(MergeConfig{Inputs: []string{out}, Out: other}); !errors.Is(err, ErrOutputLocked) {
				t.Errorf("merge of a shard still being written: %v", err)
			}
			close(g.release)
			if code := <-first; code != ExitOK {
				t.Fatalf("first run: code %d: %s", code, firstErr)
			}
			checkExactlyOnce(t, c, readAll(t, out), twoMetrics)
			code, _, stderr := runCLI(t, deps, "--manifest", c.manifest, "--metric", "ssim2,butteraugli", "--out", out, "--resume")
			if code != ExitOK || !strings.Contains(stderr, "0 ok") {
				t.Fatalf("resume after the first run: code %d, stderr %q", code, stderr)
			}
		})
	}
}

// TestKilledWriterDoesNotBlock: a run killed with SIGKILL while it holds
// its output leaves the lock file, but the next run (--resume) takes the
// output at once and finishes it.
func TestKilledWriterDoesNotBlock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL needs a Unix")
	}
	c := makeCorpus(t, 3, 4, false)
	out := filepath.Join(t.TempDir(), "o.csv")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildManifest+"="+c.manifest, envChildOut+"="+out, envChildBlock+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "started" {
		t.Fatalf("child: %q", line)
	}
	deps := fakeDeps(&fakeBackend{name: "fake"}, nil)
	code, _, stderr := runCLI(t, deps, "--manifest", c.manifest, "--metric", "ssim2,butteraugli", "--out", out, "--resume")
	if code != ExitFatal || !strings.Contains(stderr, "pid "+strconv.Itoa(cmd.Process.Pid)+" ") {
		t.Fatalf("while the child holds the output: code %d, stderr %q", code, stderr)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(lockPath(out)); err != nil {
		t.Fatalf("lock file: %v", err)
	}
	code, _, stderr = runCLI(t, deps, "--manifest", c.manifest, "--metric", "ssim2,butteraugli", "--out", out, "--resume")
	if code != ExitOK {
		t.Fatalf("after kill -9: code %d, stderr %q", code, stderr)
	}
	checkExactlyOnce(t, c, readAll(t, out), twoMetrics)
}
