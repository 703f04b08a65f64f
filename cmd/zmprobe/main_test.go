package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

func parseArgs(args ...string) (o options, done bool, code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	o, done, code = parse(args, &out, &errb)
	return o, done, code, out.String(), errb.String()
}

// TestHelpNamesEveryFlag: the help is real usage text (not Go's flag
// dump), has examples and names every flag the parser defines.
func TestHelpNamesEveryFlag(t *testing.T) {
	for _, h := range []string{"--help", "-h"} {
		_, done, code, out, errOut := parseArgs(h)
		if !done || code != 0 || errOut != "" {
			t.Fatalf("%s: done %v code %d stderr %q", h, done, code, errOut)
		}
		for _, want := range []string{"Usage: zmprobe", "Examples:", "zmprobe --cpu-only --compact", "Exit status"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: help lacks %q", h, want)
			}
		}
		var o options
		newFlags(&o).VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "--"+f.Name+" ") {
				t.Errorf("help does not name --%s", f.Name)
			}
		})
		if !strings.Contains(out, "--help ") {
			t.Errorf("help does not name --help")
		}
	}
}

func TestVersionAndUsageErrors(t *testing.T) {
	_, done, code, out, _ := parseArgs("--version")
	if !done || code != 0 || out != ver.Line("zmprobe")+"\n" {
		t.Fatalf("--version: done %v code %d %q", done, code, out)
	}
	for _, bad := range [][]string{{"--nope"}, {"extra"}, {"--timeout", "0s"}} {
		if _, done, code, _, errOut := parseArgs(bad...); !done || code != 2 || !strings.Contains(errOut, "zmprobe:") {
			t.Errorf("%q: done %v code %d stderr %q", bad, done, code, errOut)
		}
	}
	o, done, _, _, _ := parseArgs("--cpu-only", "--timeout", "5s", "--compact")
	if done || !o.cpuOnly || !o.compact || o.timeout.Seconds() != 5 {
		t.Fatalf("flags not parsed: %+v done %v", o, done)
	}
}
