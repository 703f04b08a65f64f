package wgpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// EnvLibrary names the environment variable that points at the WebGPU
// library file to load before any other candidate.
const EnvLibrary = "ZENMETRICS_WEBGPU_LIB"

// InstallHint says how to get a library this binding matches.
const InstallHint = "install Dawn's WebGPU library from npm: `npm pack bun-webgpu-linux-x64@0.1.7 && tar xzf bun-webgpu-linux-x64-0.1.7.tgz` " +
	"and put package/libwebgpu_wrapper.so next to the executable, or set " + EnvLibrary + "=/path/to/libwebgpu_wrapper.so " +
	"(the binding matches Dawn of June 2025; a Vulkan driver is needed too, e.g. Mesa lavapipe on CPU-only machines)"

// LoadError is returned when no usable library was found. It wraps
// zenmetrics.ErrUnsupported and every candidate's own error.
type LoadError struct {
	Tried []string // candidates in the order tried
	Err   error    // errors.Join of each candidate's failure
	// Explicit is $ZENMETRICS_WEBGPU_LIB when it was set (then the only
	// candidate).
	Explicit string
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if e.Explicit != "" {
		b.WriteString("webgpu: the WebGPU library named by " + EnvLibrary + " did not load (no other location is tried while it is set):")
	} else {
		b.WriteString("webgpu: no usable WebGPU (Dawn) library found; tried:")
	}
	if e.Err != nil {
		for _, line := range strings.Split(e.Err.Error(), "\n") {
			b.WriteString("\n  - ")
			b.WriteString(line)
		}
	}
	b.WriteString("\n")
	b.WriteString(InstallHint)
	return b.String()
}

// Unwrap exposes ErrUnsupported and the per-candidate errors.
func (e *LoadError) Unwrap() []error { return []error{zenmetrics.ErrUnsupported, e.Err} }

// MissingSymbolsError says a library was opened but lacks functions this
// binding needs (a different WebGPU implementation or Dawn version).
type MissingSymbolsError struct {
	Path    string
	Missing []string
}

func (e *MissingSymbolsError) Error() string {
	return fmt.Sprintf("%s: missing %d of %d required symbols: %s (not the Dawn build this binding matches)",
		e.Path, len(e.Missing), len(symbols), strings.Join(e.Missing, ", "))
}

var (
	loadMu   sync.Mutex
	loaded   bool
	loadedAt string
)

// Load finds, opens and binds the WebGPU library once per process. Later
// calls return nil at once after a success; after a failure they search
// again (a library may have been installed meanwhile).
func Load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded {
		return nil
	}
	tried, errs := []string{}, []error{}
	if !dlSupported {
		return &LoadError{Tried: nil, Err: fmt.Errorf("%s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)}
	}
	for _, c := range Candidates() {
		tried = append(tried, c)
		if err := tryLoad(c); err != nil {
			errs = append(errs, err)
			continue
		}
		initCallbacks()
		loaded, loadedAt = true, c
		return nil
	}
	return &LoadError{Tried: tried, Err: errors.Join(errs...), Explicit: ExplicitLibrary()}
}

// LibraryPath is the candidate Load succeeded with ("" before).
func LibraryPath() string {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loadedAt
}

func tryLoad(path string) error {
	h, err := dlOpen(path)
	if err != nil {
		if strings.Contains(err.Error(), path) { // dlerror already names the file
			return err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	addrs := make([]uintptr, len(symbols))
	var missing []string
	for i, s := range symbols {
		a, err := dlSym(h, s.name)
		if err != nil || a == 0 {
			missing = append(missing, s.name)
			continue
		}
		addrs[i] = a
	}
	if len(missing) > 0 {
		return &MissingSymbolsError{Path: path, Missing: missing}
	}
	for i, s := range symbols {
		bindFunc(s.fptr, addrs[i])
	}
	return nil
}

// libNames are the file names tried next to the executable and in the
// system locations, in order.
func libNames() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"libwebgpu_wrapper.dylib", "libwebgpu_dawn.dylib", "libwebgpu.dylib"}
	case "windows":
		// wgpu-native (wgpu_native.dll) is deliberately absent: its enum
		// values follow the final webgpu.h, not this Dawn's (see abi.go).
		return []string{"webgpu_wrapper.dll", "webgpu_dawn.dll", "webgpu.dll"}
	default:
		return []string{"libwebgpu_wrapper.so", "libwebgpu_dawn.so", "libwebgpu.so"}
	}
}

func systemDirs() []string {
	switch runtime.GOOS {
	case "darwin":
		return []string{"/usr/local/lib", "/opt/homebrew/lib", "/usr/lib"}
	case "windows":
		return nil // LoadLibrary with a bare name searches the system itself
	default:
		return []string{"/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
			"/usr/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"}
	}
}

// Candidates lists what Load tries, in order. When $ZENMETRICS_WEBGPU_LIB
// is set it is the only candidate: a library named explicitly that fails
// to load is an error to report (ExplicitLibrary), never a reason to go
// looking elsewhere. Otherwise: the library names in the executable's own
// directory, the bare names (the system loader's own search:
// LD_LIBRARY_PATH and the ld.so cache; DYLD paths on macOS; on Windows the
// application and system directories), then the usual system directories.
//
// Never the executable's parent directory or the working directory: a
// binary copied to /tmp/x/ must not pick up whatever /tmp or the current
// directory holds. (Up to session 2 the parent directory was searched "for
// bin/ layouts"; /tmp/x/zmscore then loaded /tmp/libwebgpu_wrapper.so.)
func Candidates() []string {
	if p := os.Getenv(EnvLibrary); p != "" {
		return []string{p}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	names := libNames()
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dir := filepath.Dir(exe)
		for _, n := range names {
			add(filepath.Join(dir, n))
		}
	}
	for _, n := range names {
		add(n)
	}
	for _, d := range systemDirs() {
		for _, n := range names {
			add(filepath.Join(d, n))
		}
	}
	return out
}

// ExplicitLibrary is the value of $ZENMETRICS_WEBGPU_LIB ("" when unset).
func ExplicitLibrary() string { return os.Getenv(EnvLibrary) }

// ExplicitLoadFailed reports whether err is a load failure of a library
// named by $ZENMETRICS_WEBGPU_LIB. Callers that fall back to the CPU
// quietly when no runtime is installed (--backend auto) warn instead in
// this case: the user asked for that library.
func ExplicitLoadFailed(err error) bool {
	var le *LoadError
	return errors.As(err, &le) && le.Explicit != ""
}
