package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// --compare-routing against a second, thorough bench of the same machine:
// the table lists every metric and size, and the summary line counts them.
// CPU-only profiles have one class, so every cell must agree; the
// chooser-level disagreements and regrets are TestCompareRouting's
// (orchestrator).
func TestCompareRoutingFlag(t *testing.T) {
	quick, thorough := t.TempDir(), t.TempDir()
	base := []string{"--cpu-only", "--sizes", "32,64", "--metrics", "ssim2"}
	code, out, errs := runArgs(t, append(base, "--cache-dir", thorough, "--runs", "5", "--run-budget", "1s", "--json")...)
	if code != exitOK {
		t.Fatalf("thorough bench: %d\n%s\n%s", code, out, errs)
	}
	var js struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || filepath.Dir(js.Path) != thorough {
		t.Fatalf("thorough profile path: %v %q", err, js.Path)
	}
	code, out, errs = runArgs(t, append(base, "--cache-dir", quick, "--compare-routing", js.Path)...)
	if code != exitOK {
		t.Fatalf("compare: %d\n%s\n%s", code, out, errs)
	}
	// 256² … 8192²: six sizes of the one metric, all on the CPU.
	for _, want := range []string{"routing: this profile vs", "routing agrees on 6 of 6 cells (GPU runtime: 0 of 0)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	var sides []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "ssim2" && f[2] == "cpu" {
			sides = append(sides, f[1])
		}
	}
	if got := strings.Join(sides, ","); got != "256,512,1024,2048,4096,8192" {
		t.Fatalf("table sides %s:\n%s", got, out)
	}
	if code, _, errs := runArgs(t, append(base, "--cache-dir", quick, "--compare-routing", filepath.Join(quick, "missing.toml"))...); code != exitError || !strings.Contains(errs, "missing.toml") {
		t.Fatalf("missing file: exit %d, %q", code, errs)
	}
	for _, bad := range [][]string{{"--runs", "-1"}, {"--run-budget", "-1s"}} {
		if code, _, _ := runArgs(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}
