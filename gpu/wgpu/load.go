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

// InstallHint says how to get a library this binding matches, for the
// operating system it runs on (the npm package of that OS, what it ships,
// where to put it). The macOS and Windows packages exist at 0.1.4 and 0.1.5
// only; 0.1.5 carries the same Dawn as linux-x64 0.1.7 (see abis).
var InstallHint = installHint(runtime.GOOS, runtime.GOARCH)

func installHint(goos, goarch string) string {
	pkg, file := "bun-webgpu-linux-x64@0.1.7", "libwebgpu_wrapper.so"
	driver := "a Vulkan driver is needed too, e.g. Mesa lavapipe on CPU-only machines"
	switch goos {
	case "darwin":
		pkg, file, driver = "bun-webgpu-darwin-arm64@0.1.5", "libwebgpu_wrapper.dylib", "it runs on Metal"
		if goarch == "amd64" {
			pkg = "bun-webgpu-darwin-x64@0.1.5"
		}
	case "windows":
		pkg, file, driver = "bun-webgpu-win32-x64@0.1.5", "webgpu_wrapper.dll", "it runs on D3D12"
	}
	tgz := strings.Replace(pkg, "@", "-", 1) + ".tgz"
	return "install Dawn's WebGPU library from npm: `npm pack " + pkg + " && tar xzf " + tgz + "` " +
		"and put package/" + file + " next to the executable, or set " + EnvLibrary + "=/path/to/" + file +
		" (the binding matches the Dawn of bun-webgpu 0.1.5-0.1.7, June 2025; " + driver + ")"
}

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
	// loadedABI is the table selectABI picked for the loaded library.
	loadedABI *ABI
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
		abi, err := tryLoad(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		initCallbacks()
		loaded, loadedAt, loadedABI = true, c, abi
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

// tryLoad opens one candidate, checks that it exports every function the
// binding calls and that its exports match a supported ABI (selectABI), and
// only then binds the functions.
func tryLoad(path string) (*ABI, error) {
	h, err := dlOpen(path)
	if err != nil {
		if strings.Contains(err.Error(), path) { // dlerror already names the file
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
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
		return nil, &MissingSymbolsError{Path: path, Missing: missing}
	}
	abi, err := selectABI(path, func(name string) bool {
		a, err := dlSym(h, name)
		return err == nil && a != 0
	})
	if err != nil {
		return nil, err
	}
	// Exports cannot tell builds of one Dawn era apart (bun-webgpu 0.1.3
	// exports the same 253 functions from another Dawn build), so an npm
	// package.json beside the file that names a bun-webgpu package the
	// table was not checked against is refused too.
	if pkg := PackageVersion(path); strings.HasPrefix(pkg, "bun-webgpu") && !abi.KnownPackage(pkg) {
		return nil, &UnknownABIError{Path: path, Mismatch: []string{fmt.Sprintf(
			"%s: the package.json beside it names %s, not one of %s", abi.Name, pkg, strings.Join(abi.Packages, ", "))}}
	}
	for i, s := range symbols {
		bindFunc(s.fptr, addrs[i])
	}
	return abi, nil
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
