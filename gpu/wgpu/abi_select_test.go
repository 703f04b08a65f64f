package wgpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// exportsOf is a fake library: has(name) is true for the listed names.
func exportsOf(names ...string) func(string) bool {
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return func(n string) bool { return set[n] }
}

// TestSelectABI checks the fingerprint logic on fake export sets: the
// June-2025 Dawn (every function the binding binds plus the markers) is
// picked; a library with a later Dawn's instance functions, or one without
// wgpuGetInstanceCapabilities, is refused with UnknownABIError.
func TestSelectABI(t *testing.T) {
	base := append(SymbolNames(), abis[0].present...)
	a, err := selectABI("lib", exportsOf(base...))
	if err != nil || a.Name != "dawn-2025-06" {
		t.Fatalf("June-2025 exports: %v, %v", a, err)
	}
	for _, later := range abis[0].absent {
		_, err := selectABI("lib", exportsOf(append(base, later)...))
		var ue *UnknownABIError
		if !errors.As(err, &ue) || !errors.Is(err, zenmetrics.ErrUnsupported) || !strings.Contains(err.Error(), "has "+later) {
			t.Errorf("with %s: %v, want UnknownABIError naming it", later, err)
		}
	}
	var without []string
	for _, n := range base {
		if n != "wgpuGetInstanceCapabilities" {
			without = append(without, n)
		}
	}
	if _, err := selectABI("lib", exportsOf(without...)); err == nil || !strings.Contains(err.Error(), "lacks wgpuGetInstanceCapabilities") {
		t.Errorf("without wgpuGetInstanceCapabilities: %v", err)
	}
}

// TestInstallHintPerOS: each OS is told its own package and file name, and
// that package is one an ABI table was checked against.
func TestInstallHintPerOS(t *testing.T) {
	for _, c := range []struct{ goos, goarch, pkg, file string }{
		{"linux", "amd64", "bun-webgpu-linux-x64@0.1.7", "libwebgpu_wrapper.so"},
		{"darwin", "arm64", "bun-webgpu-darwin-arm64@0.1.5", "libwebgpu_wrapper.dylib"},
		{"darwin", "amd64", "bun-webgpu-darwin-x64@0.1.5", "libwebgpu_wrapper.dylib"},
		{"windows", "amd64", "bun-webgpu-win32-x64@0.1.5", "webgpu_wrapper.dll"},
	} {
		h := installHint(c.goos, c.goarch)
		if !strings.Contains(h, "npm pack "+c.pkg) || !strings.Contains(h, "package/"+c.file) {
			t.Errorf("%s/%s: hint lacks %s or %s: %s", c.goos, c.goarch, c.pkg, c.file, h)
		}
		if !abis[0].KnownPackage(c.pkg) {
			t.Errorf("%s/%s: hint names %s, which no ABI table lists", c.goos, c.goarch, c.pkg)
		}
	}
}

func TestPackageVersion(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libwebgpu_wrapper.so")
	if got := PackageVersion(lib); got != "" {
		t.Fatalf("no package.json: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"bun-webgpu-linux-x64","version":"0.1.5","os":["linux"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := PackageVersion(lib); got != "bun-webgpu-linux-x64@0.1.5" {
		t.Fatalf("package.json beside the library: %q", got)
	}
	if got := PackageVersion("libwebgpu_wrapper.so"); got != "" {
		t.Fatalf("bare name: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := PackageVersion(lib); got != "" {
		t.Fatalf("broken package.json: %q", got)
	}
}

// TestLoadedLibraryABI loads the real library named by
// $ZENMETRICS_WEBGPU_LIB (skipped without it, failed without it when
// CI=true) and checks that its exports select a supported ABI and, when an
// npm package.json lies beside it, that this package is one the table was
// checked against (set ZENMETRICS_WEBGPU_PACKAGE to require a given one).
func TestLoadedLibraryABI(t *testing.T) {
	if os.Getenv(EnvLibrary) == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not set in CI", EnvLibrary)
		}
		t.Skipf("%s not set", EnvLibrary)
	}
	// tryLoad, not Load: the process stays unloaded, so
	// TestExplicitLibraryOnly still runs after this test.
	path := os.Getenv(EnvLibrary)
	a, err := tryLoad(path)
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		t.Fatal("tryLoad succeeded but selected no ABI")
	}
	pkg := PackageVersion(path)
	t.Logf("%s: ABI %s (Dawn %s), package %q", path, a.Name, a.DawnRevision, pkg)
	if pkg != "" && !a.KnownPackage(pkg) {
		t.Errorf("package %s beside the library is not one ABI %s was checked against (%v)", pkg, a.Name, a.Packages)
	}
	if want := os.Getenv("ZENMETRICS_WEBGPU_PACKAGE"); want != "" && pkg != want {
		t.Errorf("package beside the library is %q, want %q", pkg, want)
	}

	// The same file beside a package.json of an unlisted version is
	// refused (a link, so the 20 MB library is not copied).
	dir := t.TempDir()
	link := filepath.Join(dir, filepath.Base(path))
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("symlink: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"bun-webgpu-linux-x64","version":"0.1.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = tryLoad(link)
	var ue *UnknownABIError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "bun-webgpu-linux-x64@0.1.3") {
		t.Fatalf("library beside an unlisted package.json: %v, want UnknownABIError naming the package", err)
	}
}
