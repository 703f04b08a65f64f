package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the SIGTERM tests run the real main (signal handling
// included) in a child process: ZM_ZMSCORE_MAIN holds its arguments,
// separated by newlines.
func TestMain(m *testing.M) {
	if a := os.Getenv("ZM_ZMSCORE_MAIN"); a != "" {
		os.Args = append([]string{"zmscore"}, strings.Split(a, "\n")...)
		main()
		return
	}
	os.Exit(m.Run())
}

// startMain runs main with args in a child process; out collects its
// stdout and stderr its stderr.
func startMain(t *testing.T, args []string, stdout, stderr *bytes.Buffer) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "ZM_ZMSCORE_MAIN="+strings.Join(args, "\n"))
	cmd.Stderr = stderr
	var r *bufio.Reader
	if stdout == nil {
		p, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		r = bufio.NewReader(p)
	} else {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, r
}

// TestSIGTERMBatch sends SIGTERM to a batch run once it has committed rows:
// it must stop like Ctrl-C (flush, checkpoint, the "interrupted" message,
// exit 1), leaving an output that --resume completes with exactly one
// row per pair.
func TestSIGTERMBatch(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	dir := t.TempDir()
	ref, dist := tiny(t, "coffee_crop256__ref.png"), tiny(t, "coffee_crop256__webp_q75.png")
	const n = 40 // Butteraugli on 256² on one CPU thread: ~0.1-0.2 s each
	var man strings.Builder
	man.WriteString("id\tref\tdist\n")
	for i := range n {
		fmt.Fprintf(&man, "p%02d\t%s\t%s\n", i, ref, dist)
	}
	manifest := filepath.Join(dir, "m.tsv")
	if err := os.WriteFile(manifest, []byte(man.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"--manifest", manifest, "--metric", "butteraugli", "--backend", "cpu", "--workers", "1", "--threads", "1",
		"--decoders", "1", "--flush-interval", "10ms", "--out", out, "--progress", "none"}
	var stderr bytes.Buffer
	cmd, r := startMain(t, args, nil, &stderr)
	go func() { _, _ = r.WriteTo(new(bytes.Buffer)) }()
	// Wait for the first written row.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no row committed: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted after") {
		t.Fatalf("after SIGTERM: %v (exit status 1 and the interrupted message wanted), stderr:\n%s", err, stderr.String())
	}
	rows := readJSONL(t, out)
	if len(rows) == 0 || len(rows) >= n {
		t.Fatalf("%d rows after SIGTERM; want some, not all, of %d", len(rows), n)
	}
	stderr.Reset()
	var stdout bytes.Buffer
	cmd, _ = startMain(t, append(args, "--resume"), &stdout, &stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr.String())
	}
	rows = readJSONL(t, out)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r["id"].(string)] || r["score"] == nil {
			t.Fatalf("row %v: duplicate or unscored", r)
		}
		seen[r["id"].(string)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct rows after resume, want %d", len(seen), n)
	}
}

// TestSIGTERMPair: in pair mode SIGTERM ends the run with every DIST
// accounted for (a score or an error line), exit 1, rather than killing
// the process mid-output.
func TestSIGTERMPair(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	ref, dist := tiny(t, "coffee_crop256__ref.png"), tiny(t, "coffee_crop256__webp_q75.png")
	const n = 40
	args := []string{"--metric", "butteraugli", "--backend", "cpu", "--threads", "1", ref}
	for range n {
		args = append(args, dist)
	}
	var stderr bytes.Buffer
	cmd, r := startMain(t, args, nil, &stderr)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v %s", err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := readAllString(r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("after SIGTERM: %v, stderr %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(first+rest), "\n")
	if len(lines) != n || lines[0] == "nan" || lines[n-1] != "nan" {
		t.Fatalf("%d lines for %d DISTs (first %q, last %q)", len(lines), n, lines[0], lines[len(lines)-1])
	}
}

func readAllString(r *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := r.WriteTo(&b)
	return b.String(), err
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		rows = append(rows, m)
	}
	return rows
}
