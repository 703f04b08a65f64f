package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets TestSIGTERMStopsBench run the real main (signal handling
// included) in a child: ZM_ZMWARM_MAIN holds its arguments, one a line.
func TestMain(m *testing.M) {
	if a := os.Getenv("ZM_ZMWARM_MAIN"); a != "" {
		os.Args = append([]string{"zmwarm"}, strings.Split(a, "\n")...)
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSIGTERMStopsBench: SIGTERM during a bench stops it like Ctrl-C:
// exit 1 with the reason, and no half-measured profile saved.
func TestSIGTERMStopsBench(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--cpu-only", "--metrics", "ssim2,butteraugli", "--sizes", "1024,2048", "--time-limit", "10m", "-v", "--cache-dir", dir}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "ZM_ZMWARM_MAIN="+strings.Join(args, "\n"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stderr)
	first, err := r.ReadString('\n') // the verbose log's first line: the bench has begun
	if err != nil {
		t.Fatalf("no log from the child: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	done := make(chan struct{})
	go func() { r.WriteTo(&rest); close(done) }()
	err = cmd.Wait()
	<-done
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitError || !strings.Contains(rest.String(), "context canceled") {
		t.Fatalf("after SIGTERM: %v; stderr:\n%s%s", err, first, rest.String())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "capability_*.toml")); len(m) != 0 {
		t.Fatalf("a profile was saved by the interrupted bench: %v", m)
	}
}
