package filelock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("ZM_FILELOCK_CHILD"); p != "" {
		// The holder: lock, say so, then wait to be killed.
		l, err := TryLock(p)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := l.WriteOwner("filelock test child"); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTryLockExcludes: a second lock on the same file (a second open in
// this process, as a second run would be) is refused with the holder's
// text; after Unlock it is granted.
func TestTryLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.jsonl.lock")
	a, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteOwner("first"); err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(p)
	var he *HeldError
	if !errors.Is(err, ErrHeld) || !errors.As(err, &he) || !strings.Contains(he.Holder, "pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(he.Holder, "first") {
		t.Fatalf("second lock: %v", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	b, err := TryLock(p)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	b.Unlock()
}

// TestAcquireWaits: Acquire returns once the holder lets go, and gives up
// with ctx.
func TestAcquireWaits(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	a, err := TryLock(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a held lock with a deadline: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), p)
		if err == nil {
			l.Unlock()
		}
		got <- err
	}()
	a.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestOwnerSanitised: the holder text is one line of printable
// characters, however the file was filled.
func TestOwnerSanitised(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	if err := os.WriteFile(p, []byte("pid 1\x1b[31m red\x00\nsecond line"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Owner(p); got != "pid 1[31m red" {
		t.Fatalf("Owner = %q", got)
	}
}

// TestKilledHolderNeverBlocks: a holder killed with SIGKILL leaves its
// lock file behind, and the lock is free at once.
func TestKilledHolderNeverBlocks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL needs a Unix (Windows frees LockFileEx locks at process exit too)")
	}
	p := filepath.Join(t.TempDir(), "out.csv.lock")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), "ZM_FILELOCK_CHILD="+p)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("child: %q", line)
	}
	_, err = TryLock(p)
	var he *HeldError
	if !errors.As(err, &he) || !strings.Contains(he.Holder, fmt.Sprintf("pid %d ", cmd.Process.Pid)) {
		t.Fatalf("lock held by the child: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the lock file should outlive its holder: %v", err)
	}
	l, err := TryLock(p)
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	l.Unlock()
}
