package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

func parseArgs(args ...string) (o options, m zenmetrics.Metric, done bool, code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	o, m, done, code = parse(args, &out, &errb)
	return o, m, done, code, out.String(), errb.String()
}

// TestHelpNamesEveryFlag: the help is real usage text (not Go's flag
// dump), shows each mode with an example and names every flag the parser
// defines.
func TestHelpNamesEveryFlag(t *testing.T) {
	for _, h := range []string{"--help", "-h"} {
		_, _, done, code, out, errOut := parseArgs(h)
		if !done || code != 0 || errOut != "" {
			t.Fatalf("%s: done %v code %d stderr %q", h, done, code, errOut)
		}
		for _, want := range []string{"Usage: zmbench", "Examples:", "zmbench --sizes 1,4,16 --reps 20 --json out.json",
			"zmbench --metric butteraugli", "zmbench --profile", "zmbench --strips --strip-metric butteraugli", "Exit status"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: help lacks %q", h, want)
			}
		}
		var o options
		newFlags(&o).VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "  --"+f.Name+" ") {
				t.Errorf("help does not describe --%s", f.Name)
			}
		})
	}
}

func TestVersionAndUsageErrors(t *testing.T) {
	_, _, done, code, out, _ := parseArgs("--version")
	if !done || code != 0 || out != ver.Line("zmbench")+"\n" {
		t.Fatalf("--version: done %v code %d %q", done, code, out)
	}
	for _, bad := range [][]string{{"--nope"}, {"extra"}, {"--metric", "cvvdp"}, {"--reps", "0"}, {"--strips", "--strip-runtime", "vulkan"}} {
		if _, _, done, code, _, errOut := parseArgs(bad...); !done || code != 2 || !strings.Contains(errOut, "zmbench:") {
			t.Errorf("%q: done %v code %d stderr %q", bad, done, code, errOut)
		}
	}
	o, m, done, _, _, _ := parseArgs("--metric", "butteraugli", "--sizes", "4", "--strips", "--vram-budget-mib", "2048")
	if done || m != zenmetrics.Butteraugli || o.sizes != "4" || !o.strips || o.budgetMiB != 2048 {
		t.Fatalf("flags not parsed: %+v %v done %v", o, m, done)
	}
	if o.stripRuntime != "webgpu" {
		t.Errorf("default strip runtime %q", o.stripRuntime)
	}
	if o, _, done, _, _, _ := parseArgs("--strips", "--strip-runtime", "cuda"); done || o.stripRuntime != "cuda" {
		t.Errorf("--strip-runtime cuda: %+v done %v", o, done)
	}
}
