package wgpu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

func TestCandidatesOrder(t *testing.T) {
	// An explicit library is the only candidate.
	t.Setenv(EnvLibrary, "/nonexistent/libwebgpu_custom.so")
	if c := Candidates(); len(c) != 1 || c[0] != "/nonexistent/libwebgpu_custom.so" {
		t.Fatalf("with %s set: %v, want that path alone", EnvLibrary, c)
	}
	t.Setenv(EnvLibrary, "")
	c := Candidates()
	exe, _ := os.Executable()
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if want := filepath.Join(filepath.Dir(exe), libNames()[0]); len(c) == 0 || c[0] != want {
		t.Fatalf("first candidate %v, want next to the executable %q", c, want)
	}
	if runtime.GOOS == "linux" && !strings.Contains(strings.Join(c, " "), "/usr/lib/x86_64-linux-gnu/libwebgpu_dawn.so") {
		t.Fatalf("system directories missing: %v", c)
	}
	for _, p := range c {
		if filepath.IsAbs(p) && filepath.Dir(p) == filepath.Dir(filepath.Dir(exe)) {
			t.Errorf("candidate %q is in the executable's parent directory", p)
		}
	}
}

// TestNoParentDirectoryLoad is the reported case: an executable in
// /tmp/x/ with a library file in /tmp/. A copy of this test binary in
// <tmp>/x/ lists its candidates and tries to load; <tmp>/libwebgpu_wrapper.so
// (a file that would fail to load if it were tried, so its name would
// appear in the error) must be in neither.
func TestNoParentDirectoryLoad(t *testing.T) {
	if os.Getenv("ZM_WGPU_CHILD") == "1" {
		fmt.Println(strings.Join(Candidates(), "\n"))
		fmt.Println(Load())
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("the child is run as a copied ELF/Mach-O binary")
	}
	root := t.TempDir()
	exeDir := filepath.Join(root, "x")
	if err := os.Mkdir(exeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(exeDir, "wgpu.test")
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(root, libNames()[0])
	if err := os.WriteFile(stray, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, "-test.run", "^TestNoParentDirectoryLoad$")
	cmd.Env = append(cleanEnv(), "ZM_WGPU_CHILD=1")
	cmd.Dir = root // nor the working directory
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), filepath.Join(exeDir, libNames()[0])) {
		t.Fatalf("the executable's own directory was not a candidate:\n%s", out)
	}
	if strings.Contains(string(out), stray) {
		t.Fatalf("the parent directory's %s was a candidate:\n%s", stray, out)
	}
}

// cleanEnv is the environment without the library variable or loader
// paths that could point at a test machine's Dawn.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, EnvLibrary+"=") || strings.HasPrefix(kv, "LD_LIBRARY_PATH=") || strings.HasPrefix(kv, "DYLD_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TestExplicitLibraryOnly: a set but broken $ZENMETRICS_WEBGPU_LIB is the
// error, flagged as explicit, and nothing else is tried.
func TestExplicitLibraryOnly(t *testing.T) {
	if !dlSupported {
		t.Skip("no dynamic loading here")
	}
	if LibraryPath() != "" {
		t.Skip("a library is already loaded in this process")
	}
	bad := filepath.Join(t.TempDir(), "libwebgpu_broken.so")
	if err := os.WriteFile(bad, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvLibrary, bad)
	err := Load()
	var le *LoadError
	if !errors.As(err, &le) || !ExplicitLoadFailed(err) || len(le.Tried) != 1 || le.Tried[0] != bad ||
		!strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), EnvLibrary) {
		t.Fatalf("broken explicit library: %v (%#v)", err, le)
	}
	if ExplicitLoadFailed(&LoadError{Tried: []string{"a.so"}}) {
		t.Fatal("a failed search without the variable counted as explicit")
	}
}

func TestTryLoadErrors(t *testing.T) {
	if !dlSupported {
		t.Skip("no dynamic loading here")
	}
	_, err := tryLoad("/nonexistent/libwebgpu.so")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libwebgpu.so") {
		t.Fatalf("missing file: %v", err)
	}
	if runtime.GOOS == "linux" {
		// A real library that is not WebGPU: every symbol is reported missing.
		_, err := tryLoad("libc.so.6")
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
	for _, want := range []string{"a.so: no such file", "b.so: bad ELF", "npm pack bun-webgpu-", EnvLibrary} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}
