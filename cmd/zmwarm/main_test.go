package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageAndVersion(t *testing.T) {
	if code, out, _ := runArgs(t, "--version"); code != exitOK || !strings.HasPrefix(out, ver.Line("zmwarm")+" profile schema ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	if code, _, errs := runArgs(t, "--help"); code != exitOK || !strings.Contains(errs, "Usage: zmwarm") {
		t.Fatalf("--help: %d", code)
	}
	for _, bad := range [][]string{{"--bogus"}, {"stray"}, {"--metrics", "nope"}, {"--sizes", "12,x"}, {"--time-limit", "-1s"}} {
		if code, _, _ := runArgs(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
}

func TestWarmTableJSONPrint(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--cpu-only", "--cache-dir", dir, "--sizes", "32,64", "--metrics", "ssim2"}
	code, out, errs := runArgs(t, base...)
	if code != exitOK {
		t.Fatalf("first run: %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"benched (missing)", "ssim2", "cpu", "32²", "64²", "ns/px", "MP/s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runArgs(t, append(base, "--print")...)
	if code != exitOK || !strings.Contains(out, "fresh, not re-measured") || !strings.Contains(out, "schema_version = 1") {
		t.Fatalf("second run: %d\n%s", code, out)
	}
	code, out, _ = runArgs(t, append(base, "--json", "--force")...)
	var js struct {
		Path    string `json:"path"`
		Benched bool   `json:"benched"`
		Rows    []struct {
			Metric  string  `json:"metric"`
			Backend string  `json:"backend"`
			Side    int     `json:"side"`
			NsPerPx float64 `json:"ns_per_px"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != exitOK {
		t.Fatalf("json: %d %v\n%s", code, err, out)
	}
	if !js.Benched || len(js.Rows) != 2 || js.Rows[0].NsPerPx <= 0 || js.Rows[1].Side != 64 {
		t.Fatalf("json content: %+v", js)
	}
	if filepath.Dir(js.Path) != dir {
		t.Fatalf("profile at %s, not in --cache-dir", js.Path)
	}
}

func TestCorruptProfileWarnsAndRebenches(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--cpu-only", "--cache-dir", dir, "--sizes", "32", "--metrics", "ssim2", "--json"}
	code, out, _ := runArgs(t, base...)
	var js struct{ Path string }
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil {
		t.Fatalf("first run %d", code)
	}
	if err := os.WriteFile(js.Path, []byte("schema_version = \"garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runArgs(t, base...)
	if code != exitOK || !strings.Contains(errs, "level=WARN") || !strings.Contains(out, `"benched": true`) {
		t.Fatalf("corrupt profile: %d\n%s\n%s", code, out, errs)
	}
}

func TestUnwritableCacheIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o644)
	code, _, errs := runArgs(t, "--cpu-only", "--cache-dir", file, "--sizes", "32", "--metrics", "ssim2")
	if code != exitError || !strings.Contains(errs, "zmwarm:") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
