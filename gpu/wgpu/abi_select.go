package wgpu

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// ABI names one webgpu.h ABI this binding has a table for (the enum values
// and struct layouts in abi.go) and says how to recognise a library built
// with it.
//
// Why one entry serves npm bun-webgpu 0.1.5 and 0.1.7 (checked 2026-11-25,
// issue #22):
//   - bun-webgpu's own sources (github.com/kommander/bun-webgpu,
//     dawn/download_artifacts.ts) pin the same Dawn CI build,
//     kommander/dawn/actions/runs/22080543611, at tags v0.1.5, v0.1.6 and
//     v0.1.7 (v0.1.4 pins run 19315248188, v0.1.3 run 15558254019).
//   - The linux-x64 libwebgpu_wrapper.so of 0.1.5 and of 0.1.7 are the same
//     size (19 695 792 bytes) and differ in 96 bytes only: the GNU build-id
//     note and the temporary build directories named in .debug_line. Code,
//     data and exports are byte-identical.
//   - darwin-arm64, darwin-x64 and win32-x64 0.1.5 (libwebgpu_wrapper.dylib,
//     webgpu_wrapper.dll) export the same 253 wgpu* functions as linux-x64
//     0.1.7 and embed the Dawn revision string
//     d18e21db186c42c073a90f91bdea0cc438b1924d (a commit of the
//     kommander/dawn fork; the Linux build embeds no revision string).
//
// So every enum value and struct layout in abi.go holds for 0.1.5 as it
// does for 0.1.7: there is no difference to tabulate, and a second copy of
// the table would only be a place for the two to drift apart. A Dawn with a
// different ABI gets its own entry here and its own table (abi.go's
// constants would then become per-ABI values); until then a library that
// matches no entry is refused with an UnknownABIError instead of being
// driven with wrong enum values.
type ABI struct {
	// Name identifies the table in reports (zmprobe's "runtime.abi").
	Name string
	// DawnRevision is the Dawn commit the table was checked against, as
	// far as it is known.
	DawnRevision string
	// Packages lists the npm packages known to ship a library with this
	// ABI (package@version).
	Packages []string
	// present are exports every library with this ABI has; absent are
	// exports that only later ABIs have. Together they are the
	// fingerprint selectABI checks.
	present, absent []string
}

// abis lists every ABI this binding supports, newest first.
var abis = []ABI{{
	Name:         "dawn-2025-06",
	DawnRevision: "kommander/dawn d18e21db186c42c073a90f91bdea0cc438b1924d (google/dawn of 2025-06-18..27)",
	Packages: []string{
		"bun-webgpu-linux-x64@0.1.5", "bun-webgpu-linux-x64@0.1.6", "bun-webgpu-linux-x64@0.1.7",
		"bun-webgpu-darwin-arm64@0.1.5", "bun-webgpu-darwin-x64@0.1.5", "bun-webgpu-win32-x64@0.1.5",
	},
	// wgpuGetInstanceCapabilities goes with the InstanceDescriptor that
	// embeds WGPUInstanceCapabilities (abi.go). The final webgpu.h renamed
	// it to wgpuGetInstanceLimits and added wgpuHasInstanceFeature /
	// wgpuGetInstanceFeatures with a required-features list in the
	// instance descriptor, and renumbered FeatureName: a library that has
	// those is a later Dawn whose values differ from abi.go's.
	present: []string{"wgpuGetInstanceCapabilities", "wgpuAdapterPropertiesMemoryHeapsFreeMembers",
		"wgpuDawnDrmFormatCapabilitiesFreeMembers"},
	absent: []string{"wgpuGetInstanceLimits", "wgpuGetInstanceFeatures", "wgpuHasInstanceFeature"},
}}

// SupportedABIs returns the ABIs this binding has tables for.
func SupportedABIs() []ABI { return append([]ABI(nil), abis...) }

// UnknownABIError says a library has every function the binding calls but
// its exports match none of the supported ABIs (for example a newer Dawn
// whose enum values differ). It wraps zenmetrics.ErrUnsupported.
type UnknownABIError struct {
	Path string
	// Mismatch lists, per supported ABI, what did not match.
	Mismatch []string
}

func (e *UnknownABIError) Error() string {
	return fmt.Sprintf("%s: its webgpu.h ABI matches none this binding supports (%s)", e.Path, strings.Join(e.Mismatch, "; "))
}

// Unwrap makes errors.Is(err, zenmetrics.ErrUnsupported) true.
func (e *UnknownABIError) Unwrap() error { return zenmetrics.ErrUnsupported }

// selectABI picks the first supported ABI whose fingerprint matches the
// library's exports; has reports whether the library exports a name.
//
// Exports are the only thing every one of these builds reports: Dawn has
// no version function, and the revision string is in the macOS and Windows
// builds' read-only data but not in the Linux one. Exports tell an ABI from
// a later one with renamed functions; they cannot tell two builds of one
// Dawn era apart, which is why abis lists the packages each table was
// checked against, and tryLoad also refuses a file whose package.json
// (PackageVersion) names a bun-webgpu package not in that list.
func selectABI(path string, has func(name string) bool) (*ABI, error) {
	var mismatch []string
	for i := range abis {
		a := &abis[i]
		var why []string
		for _, n := range a.present {
			if !has(n) {
				why = append(why, "lacks "+n)
			}
		}
		for _, n := range a.absent {
			if has(n) {
				why = append(why, "has "+n)
			}
		}
		if len(why) == 0 {
			return a, nil
		}
		mismatch = append(mismatch, a.Name+": "+strings.Join(why, ", "))
	}
	return nil, &UnknownABIError{Path: path, Mismatch: mismatch}
}

// LoadedABI is the ABI Load selected (nil before a successful Load).
func LoadedABI() *ABI {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loadedABI
}

// PackageVersion reads the npm package.json beside a library file (an
// unpacked bun-webgpu-* package keeps it there) and returns
// "name@version", or "" when there is none or it names no package. The ABI
// is chosen from the library's exports; the package is reported, and an
// unlisted bun-webgpu version is refused (tryLoad). A library copied out
// of its package has none, and is judged by its exports alone.
func PackageVersion(libPath string) string {
	if libPath == "" || !filepath.IsAbs(libPath) && !strings.ContainsRune(libPath, filepath.Separator) {
		return "" // a bare name resolved by the system loader: no known directory
	}
	f, err := os.Open(filepath.Join(filepath.Dir(libPath), "package.json"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var p struct{ Name, Version string }
	// A package.json is a few hundred bytes; 64 KiB bounds a stray one.
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&p); err != nil || p.Name == "" || p.Version == "" {
		return ""
	}
	return p.Name + "@" + p.Version
}

// KnownPackage reports whether pkg ("name@version") is listed for a.
func (a *ABI) KnownPackage(pkg string) bool {
	for _, p := range a.Packages {
		if p == pkg {
			return true
		}
	}
	return false
}
