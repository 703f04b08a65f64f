package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel"},
		{"go install @v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs(rev, "false")}, "v1.2.3"},
		{"go build in a clone (pseudo-version)", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125153000-0123456789ab+dirty"}}, "v0.0.0-20261125153000-0123456789ab+dirty"},
		{"(devel) with a clean revision", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, "devel+0123456789ab"},
		{"(devel) with a dirty tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "devel+0123456789ab-dirty"},
		{"short revision kept whole", &debug.BuildInfo{Settings: vcs("abc", "false")}, "devel+abc"},
		{"nothing recorded", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	}
	for _, c := range cases {
		if got := FromBuildInfo(c.bi); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestOverrideAndLine(t *testing.T) {
	defer func(o string) { Override = o }(Override)
	Override = "v9.8.7"
	if got := String(); got != "v9.8.7" {
		t.Fatalf("String with Override: %q", got)
	}
	line := Line("zmprobe")
	if want := "zmprobe v9.8.7 (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"; line != want {
		t.Fatalf("Line: %q, want %q", line, want)
	}
	Override = ""
	// A test binary has no module version; whatever it has, String must
	// follow FromBuildInfo's rule.
	bi, _ := debug.ReadBuildInfo()
	if got, want := String(), FromBuildInfo(bi); got != want || !strings.HasPrefix(Line("x"), "x "+want+" ") {
		t.Fatalf("String %q, FromBuildInfo %q, Line %q", got, want, Line("x"))
	}
}
