package wgpu

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

func TestCandidatesOrder(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/libwebgpu_custom.so")
	c := Candidates()
	if len(c) < 4 || c[0] != "/nonexistent/libwebgpu_custom.so" {
		t.Fatalf("env candidate not first: %v", c)
	}
	exe, _ := os.Executable()
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if want := filepath.Join(filepath.Dir(exe), libNames()[0]); c[1] != want {
		t.Fatalf("second candidate %q, want next to the executable %q", c[1], want)
	}
	if runtime.GOOS == "linux" && !strings.Contains(strings.Join(c, " "), "/usr/lib/x86_64-linux-gnu/libwebgpu_dawn.so") {
		t.Fatalf("system directories missing: %v", c)
	}
}

func TestTryLoadErrors(t *testing.T) {
	if !dlSupported {
		t.Skip("no dynamic loading here")
	}
	err := tryLoad("/nonexistent/libwebgpu.so")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libwebgpu.so") {
		t.Fatalf("missing file: %v", err)
	}
	if runtime.GOOS == "linux" {
		// A real library that is not WebGPU: every symbol is reported missing.
		err := tryLoad("libc.so.6")
		var ms *MissingSymbolsError
		if !errors.As(err, &ms) || len(ms.Missing) != len(symbols) || !strings.Contains(err.Error(), "wgpuCreateInstance") {
			t.Fatalf("libc: want MissingSymbolsError listing all symbols, got %v", err)
		}
	}
}

func TestLoadErrorMessage(t *testing.T) {
	e := &LoadError{Tried: []string{"a.so", "b.so"}, Err: errors.Join(errors.New("a.so: no such file"), errors.New("b.so: bad ELF"))}
	if !errors.Is(e, zenmetrics.ErrUnsupported) {
		t.Fatal("LoadError does not wrap ErrUnsupported")
	}
	msg := e.Error()
	for _, want := range []string{"a.so: no such file", "b.so: bad ELF", "npm pack bun-webgpu-linux-x64@0.1.7", EnvLibrary} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}
