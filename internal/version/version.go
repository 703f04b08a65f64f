// Package version tells the commands (zmscore, zmwarm, zmprobe, zmbench)
// which build they are, from the build information the Go toolchain embeds
// in every binary, so that `--version` means the same thing on all four and
// needs no release script.
//
// What the toolchain records depends on how the binary was built:
//
//   - `go install github.com/zenmetrics-go/zenmetrics/cmd/zmscore@v1.2.3`
//     records the module version, v1.2.3;
//   - `go build` in a git clone records, since Go 1.24, a pseudo-version
//     such as v0.0.0-20261125153000-abcdef123456 (with "+dirty" when the
//     tree had uncommitted changes) as the module version, and the
//     vcs.revision, vcs.time and vcs.modified settings;
//   - `go build -buildvcs=false`, `go run` and test binaries record
//     "(devel)" or nothing.
//
// String prefers the module version, then the vcs revision and dirty flag,
// then "devel".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Override, when not empty, is returned by String instead of the build
// information; a command sets it from a link-time variable
// (-ldflags "-X main.version=v1.2.3") for packagers that build outside a
// module cache and a git clone.
var Override string

// String is this binary's version: Override, else the module version, else
// "devel+REV" ("devel+REV-dirty" for a modified tree) from the vcs
// settings, else "devel".
func String() string {
	if Override != "" {
		return Override
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo is String's rule applied to bi (nil is "devel"); it is
// separate so that tests can feed it each kind of build information.
func FromBuildInfo(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	// Twelve hex digits, as in Go's pseudo-versions: unique in practice
	// and short enough for a log line.
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		return "devel+" + rev + "-dirty"
	}
	return "devel+" + rev
}

// Line is the `--version` line of command name: the version, the Go
// release and the platform, e.g. "zmscore v1.2.3 (go1.26.0, linux/amd64)";
// the toolchain and platform are what a bug report needs next.
func Line(name string) string {
	return fmt.Sprintf("%s %s (%s, %s/%s)", name, String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
