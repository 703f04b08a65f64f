package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
	ver "github.com/zenmetrics-go/zenmetrics/internal/version"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func tiny(t *testing.T, name string) string { return shared.Testdata(t, "tiny", name) }

func TestTinyScoresMatchLibjxl(t *testing.T) {
	table, err := shared.ReadTSV(tiny(t, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	// Group the rows by reference so that several DISTs go in one call.
	byRef := map[string][]int{}
	var refs []string
	for r := range table.Rows {
		ref := table.Get(r, "ref")
		if _, ok := byRef[ref]; !ok {
			refs = append(refs, ref)
		}
		byRef[ref] = append(byRef[ref], r)
	}
	for _, ref := range refs {
		args := []string{tiny(t, ref)}
		for _, r := range byRef[ref] {
			args = append(args, tiny(t, table.Get(r, "dist")))
		}
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(byRef[ref]) {
			t.Fatalf("%d output lines for %d DISTs: %q", len(lines), len(byRef[ref]), out)
		}
		for i, r := range byRef[ref] {
			want, _ := table.Float(r, "ssimulacra2")
			got, err := strconv.ParseFloat(lines[i], 64)
			if err != nil {
				t.Fatalf("line %q: %v", lines[i], err)
			}
			if d := got - want; d > 0.01 || d < -0.01 {
				t.Errorf("%s vs %s: %.8f, libjxl %.8f", ref, table.Get(r, "dist"), got, want)
			}
			if dec := strings.SplitN(lines[i], ".", 2); len(dec) != 2 || len(dec[1]) != 8 {
				t.Errorf("line %q is not %%.8f", lines[i])
			}
		}
	}
}

func TestExitCodes(t *testing.T) {
	ref, dist := tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")
	cases := []struct {
		name string
		args []string
		code int
		msg  string // expected in stderr
	}{
		{"ok", []string{ref, dist}, 0, ""},
		{"flags after files", []string{ref, dist, "--threads", "2", "--metric=ssimulacra2"}, 0, ""},
		{"no args", nil, 2, "need a reference"},
		{"one file", []string{ref}, 2, "need a reference"},
		{"unknown flag", []string{"--frobnicate", ref, dist}, 2, "frobnicate"},
		{"unknown metric", []string{"--metric", "psnr", ref, dist}, 2, "unknown metric"},
		{"unknown backend", []string{"--backend", "tpu", ref, dist}, 2, "unknown backend"},
		{"negative threads", []string{"--threads", "-1", ref, dist}, 2, "--threads"},
		{"bad threads", []string{"--threads", "many", ref, dist}, 2, "threads"},
		{"missing dist", []string{ref, "/nonexistent/x.png"}, 1, "/nonexistent/x.png"},
		{"missing ref", []string{"/nonexistent/r.png", dist}, 1, "/nonexistent/r.png"},
		{"not an image", []string{ref, tiny(t, "scores.tsv")}, 1, "unknown image format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if !strings.Contains(errOut, c.msg) {
				t.Fatalf("stderr %q lacks %q", errOut, c.msg)
			}
		})
	}
}

func TestSeveralDistsOneBad(t *testing.T) {
	ref := tiny(t, "coffee_crop256__ref.png")
	bad := filepath.Join(t.TempDir(), "bad.png")
	code, out, errOut := runCLI(ref, tiny(t, "coffee_crop256__jxl_d1.png"), bad, tiny(t, "coffee_crop256__webp_q75.png"))
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[1] != "nan" {
		t.Fatalf("stdout %q: want score, nan, score", out)
	}
	for _, i := range []int{0, 2} {
		if _, err := strconv.ParseFloat(lines[i], 64); err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
	}
	if !strings.Contains(errOut, bad) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr %q should be one line naming %s", errOut, bad)
	}
}

func TestSizeMismatch(t *testing.T) {
	code, out, errOut := runCLI(tiny(t, "camera__ref.png"), tiny(t, "coffee_crop256__ref.png"))
	if code != 1 || out != "nan\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"coffee_crop256__ref.png", "512x512", "256x256"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
}

func TestJSON(t *testing.T) {
	ref := tiny(t, "astronaut_crop256__ref.png")
	code, out, _ := runCLI("--json", ref, tiny(t, "astronaut_crop256__jxl_d1.png"), tiny(t, "camera__ref.png"), tiny(t, "astronaut_crop256__webp_q75.png"))
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one size mismatch)", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines: %q", len(lines), out)
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		for _, k := range []string{"ref", "dist", "metric", "backend"} {
			if _, ok := m[k].(string); !ok {
				t.Errorf("line %d lacks string %q: %s", i, k, line)
			}
		}
		if m["metric"] != "ssim2" || m["backend"] != "cpu" || m["ref"] != ref {
			t.Errorf("line %d: %s", i, line)
		}
		_, hasPrep := m["prepare_ms"]
		if hasPrep != (i == 0) {
			t.Errorf("line %d: prepare_ms present=%v", i, hasPrep)
		}
		_, hasScore := m["score"]
		errMsg, hasErr := m["error"].(string)
		if i == 1 {
			if hasScore || !hasErr || !strings.Contains(errMsg, "512x512") {
				t.Errorf("failed line: %s", line)
			}
			continue
		}
		if _, ok := m["score"].(float64); !ok || hasErr {
			t.Errorf("line %d: %s", i, line)
		}
		if ms, ok := m["ms"].(float64); !ok || ms <= 0 {
			t.Errorf("line %d: ms %v", i, m["ms"])
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runCLI("--version")
	if code != 0 || !strings.HasPrefix(out, "zmscore "+ver.String()+" (") {
		t.Fatalf("--version: %d %q", code, out)
	}
	version = "v9.8.7"
	code, out, _ = runCLI("--version")
	version = ""
	if code != 0 || !strings.HasPrefix(out, "zmscore v9.8.7 ") {
		t.Fatalf("--version with -X version: %d %q", code, out)
	}
	for _, flagName := range []string{"--help", "-h"} {
		code, out, _ = runCLI(flagName)
		if code != 0 {
			t.Fatalf("%s: exit %d", flagName, code)
		}
		for _, want := range []string{"Usage: zmscore", "ssim2", "butteraugli", "cvvdp", "auto", "cpu", "webgpu", "--json"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q", flagName, want)
			}
		}
	}
}

// fakeBackend counts Prepare and Score calls; its score is the mean
// absolute difference of the first samples.
type fakeBackend struct {
	prepares, scores atomic.Int32
	fail             string // a DIST path whose Score panics
}

type fakeRef struct {
	b   *fakeBackend
	ref *zenmetrics.Image
}

func (f *fakeBackend) Name() string { return "fake" }
func (f *fakeBackend) Estimate(zenmetrics.Metric, int, int, zenmetrics.Mode) (int64, bool) {
	return 0, true
}
func (f *fakeBackend) Prepare(_ context.Context, _ zenmetrics.Metric, ref *zenmetrics.Image, _ zenmetrics.Options) (zenmetrics.Reference, error) {
	f.prepares.Add(1)
	return &fakeRef{f, ref}, nil
}
func (f *fakeBackend) Close() error { return nil }
func (r *fakeRef) Score(_ context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	r.b.scores.Add(1)
	if d.Pix[0] == 0xEE {
		panic("fake backend exploded")
	}
	return zenmetrics.Score{Value: float64(d.Pix[0]) - float64(r.ref.Pix[0]), Extras: map[string]float64{"n": 1}}, nil
}
func (r *fakeRef) Release() {}

func TestPrepareOnceAndPanicContained(t *testing.T) {
	fb := &fakeBackend{}
	newBackend = func(string, int) (zenmetrics.Backend, error) { return fb, nil }
	defer func() { newBackend = openBackend }()
	ref := tiny(t, "camera__ref.png")
	var args []string
	args = append(args, "--json", ref)
	for i := 0; i < 7; i++ {
		args = append(args, tiny(t, "camera__jxl_d1.png"))
	}
	code, out, errOut := runCLI(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if p, s := fb.prepares.Load(), fb.scores.Load(); p != 1 || s != 7 {
		t.Fatalf("Prepare called %d times, Score %d; want 1 and 7", p, s)
	}
	if !strings.Contains(out, `"extras":{"n":1}`) || !strings.Contains(out, `"backend":"fake"`) {
		t.Fatalf("JSON lacks extras or backend: %s", out)
	}
	// A panicking Score fails that DIST only.
	dir := t.TempDir()
	boom := filepath.Join(dir, "boom.png")
	writeGray(t, boom, 512, 512, 0xEE)
	code, out, errOut = runCLI(ref, boom, tiny(t, "camera__jxl_d1.png"))
	if code != 1 || !strings.HasPrefix(out, "nan\n") || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "panic") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func writeGray(t *testing.T, path string, w, h int, v byte) {
	t.Helper()
	im := zenmetrics.NewImage(w, h, zenmetrics.Gray8)
	for i := range im.Pix {
		im.Pix[i] = v
	}
	if err := writePNG(path, im); err != nil {
		t.Fatal(err)
	}
}
