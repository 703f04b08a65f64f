package batch

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

func fakeDeps(b *fakeBackend, env map[string]string) Deps {
	return Deps{
		OpenBackend: func(BackendOptions) (zenmetrics.Backend, error) { return b, nil },
		Decode:      decodeStd,
		Getenv:      func(k string) string { return env[k] },
	}
}

func runCLI(t *testing.T, deps Deps, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = CLI(context.Background(), args, &o, &e, deps)
	return code, o.String(), e.String()
}

func TestCLIExitCodesAndSummary(t *testing.T) {
	good := makeCorpus(t, 2, 3, false)
	bad := makeCorpus(t, 2, 3, true)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	deps := fakeDeps(&fakeBackend{name: "fake"}, nil)
	code, _, stderr := runCLI(t, deps, "--manifest", good.manifest, "--metric", "ssim2,butteraugli", "--out", out)
	if code != ExitOK || !strings.Contains(stderr, "12 ok, 0 failed") || !strings.Contains(stderr, "fake:") {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	checkExactlyOnce(t, good, readAll(t, out), twoMetrics)
	// Existing output without --resume: usage error.
	if code, _, _ := runCLI(t, deps, "--manifest", good.manifest, "--out", out); code != ExitUsage {
		t.Errorf("existing output: code %d, want %d", code, ExitUsage)
	}
	out2 := filepath.Join(t.TempDir(), "o.csv")
	code, _, stderr = runCLI(t, deps, "--manifest", bad.manifest, "--out", out2, "--quiet")
	if code != ExitPartial || stderr != "" {
		t.Errorf("failed rows: code %d (want %d), stderr %q", code, ExitPartial, stderr)
	}
	// Resumed with nothing left: still 3, the failures are in the output.
	if code, _, _ := runCLI(t, deps, "--manifest", bad.manifest, "--out", out2, "--resume", "--quiet"); code != ExitPartial {
		t.Errorf("resumed: code %d", code)
	}
	for _, args := range [][]string{
		{"--manifest", good.manifest}, // no --out
		{"--out", out},                // no input
		{"--manifest", good.manifest, "--out", out, "--metric", "nope"},
		{"--manifest", good.manifest, "--out", out, "--shard", "3/3"},
		{"--manifest", good.manifest, "--out", out, "--resume", "--force"},
		{"--manifest", filepath.Join(t.TempDir(), "absent.tsv"), "--out", filepath.Join(t.TempDir(), "x.jsonl")},
		{"--ref-dir", good.dir, "--out", out},
	} {
		if code, _, _ := runCLI(t, deps, args...); code != ExitUsage {
			t.Errorf("%q: code %d, want %d", args, code, ExitUsage)
		}
	}
	if code, _, stderr := runCLI(t, deps, "--help"); code != ExitOK || !strings.Contains(stderr, "--manifest FILE") {
		t.Errorf("--help: %d %q", code, stderr)
	}
}

func TestCLIStdoutAndDirs(t *testing.T) {
	c := makeCorpus(t, 3, 2, false)
	deps := fakeDeps(&fakeBackend{name: "fake"}, nil)
	dir := filepath.Join(c.dir, "img")
	code, stdout, stderr := runCLI(t, deps, "--ref-dir", dir, "--dist-dir", dir, "--out", "-", "--format", "csv", "--quiet")
	if code != ExitOK {
		t.Fatalf("code %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1+6 || !strings.HasPrefix(lines[0], "id,ref,dist,metric,score") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, "__ref.png") || strings.Count(l, "__ref.png") != 1 {
			t.Errorf("bad pairing: %s", l)
		}
	}
}

func TestCLIShardFromEnvAndMerge(t *testing.T) {
	c := makeCorpus(t, 4, 5, false)
	dir := t.TempDir()
	out := filepath.Join(dir, "res-{shard}.jsonl")
	for i := 1; i <= 3; i++ { // Slurm array 1-3
		env := map[string]string{"SLURM_ARRAY_TASK_ID": string(rune('0' + i)), "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}
		code, _, stderr := runCLI(t, fakeDeps(&fakeBackend{name: "fake"}, env), "--manifest", c.manifest, "--out", out, "--progress", "none")
		if code != ExitOK {
			t.Fatalf("shard %d: %d %s", i, code, stderr)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "res-shard-*-of-0003.jsonl"))
	if len(parts) != 3 {
		t.Fatalf("shard outputs %v", parts)
	}
	merged := filepath.Join(dir, "all.parquet")
	code, _, stderr := runCLI(t, Deps{}, append([]string{"merge", "--manifest", c.manifest, "--out", merged}, parts...)...)
	if code != ExitOK || !strings.Contains(stderr, "0 missing") {
		t.Fatalf("merge: %d %s", code, stderr)
	}
	checkExactlyOnce(t, c, readAll(t, merged), []zenmetrics.Metric{zenmetrics.SSIMULACRA2})
	code, _, stderr = runCLI(t, Deps{}, "merge", "--manifest", c.manifest, "--out", filepath.Join(dir, "m.csv"), parts[0])
	if code != ExitPartial || !strings.Contains(stderr, "missing") {
		t.Errorf("merge of one shard: %d %s", code, stderr)
	}
}

func TestShardFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		want  Shard
		found bool
		err   bool
	}{
		{map[string]string{}, Shard{}, false, false},
		{map[string]string{"ZENMETRICS_SHARD": "2/5"}, Shard{2, 5}, true, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "ZENMETRICS_SHARDS": "8"}, Shard{3, 8}, true, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "3"}, Shard{}, true, true},
		{map[string]string{"JOB_COMPLETION_INDEX": "8", "ZENMETRICS_SHARDS": "8"}, Shard{}, true, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "16", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "16"}, Shard{15, 16}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, Shard{0, 4}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "5"}, Shard{3, 5}, true, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, Shard{}, true, true},
	} {
		got, found, err := ShardFromEnv(func(k string) string { return tc.env[k] })
		if got != tc.want || found != tc.found || (err != nil) != tc.err {
			t.Errorf("%v: got %v %v %v", tc.env, got, found, err)
		}
	}
	// The partition is stable and roughly even.
	counts := make([]int, 4)
	for i := 0; i < 4000; i++ {
		counts[ShardOf(PairID("r", string(rune(i))), 4)]++
	}
	for _, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("uneven shards %v", counts)
		}
	}
	if ShardOf("abc", 7) != 2 { // fixed forever: shards of one manifest must agree across versions
		t.Errorf("ShardOf(abc, 7) = %d", ShardOf("abc", 7))
	}
}

func TestParseSizeAndArgs(t *testing.T) {
	for s, want := range map[string]int64{"2GiB": 2 << 30, "512MiB": 512 << 20, "1.5G": 1.5e9, "1000": 1000} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", s, got, err)
		}
	}
	if _, err := ParseSize("3 parsecs"); err == nil {
		t.Error("bad unit accepted")
	}
	if !IsBatchArgs([]string{"--metric", "ssim2", "--manifest=x"}) || !IsBatchArgs([]string{"merge"}) ||
		IsBatchArgs([]string{"a.png", "b.png"}) || IsBatchArgs([]string{"--", "--manifest"}) {
		t.Error("IsBatchArgs")
	}
}

func TestManifestFormats(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"m.tsv":   "# comment\nid\tref\tdist\tmetric\na\tr.png\td.png\t\nb\tsub/r.png\t/abs/d.png\tssim2,butteraugli\n",
		"m.csv":   "ref,dist,id\n\"r.png\",d.png,a\nsub/r.png,/abs/d.png,b\n",
		"m.jsonl": "{\"ref\":\"r.png\",\"dist\":\"d.png\",\"id\":\"a\"}\n\n{\"ref\":\"sub/r.png\",\"dist\":\"/abs/d.png\",\"id\":\"b\",\"metric\":[\"ssim2\",\"ba\"]}\n",
		"noext":   "{\"ref\":\"r.png\",\"dist\":\"d.png\",\"id\":\"a\"}\n{\"ref\":\"sub/r.png\",\"dist\":\"/abs/d.png\",\"id\":\"b\"}\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		pairs, err := ReadManifest(p, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(pairs) != 2 || pairs[0].ID != "a" || pairs[1].ID != "b" || pairs[0].RefPath != filepath.Join(dir, "r.png") ||
			pairs[1].Ref != "sub/r.png" || (filepath.Separator == '/' && pairs[1].DistPath != "/abs/d.png") {
			t.Errorf("%s: %+v", name, pairs)
		}
		if strings.HasPrefix(name, "m.tsv") || name == "m.jsonl" {
			if len(pairs[1].Metrics) != 2 || pairs[0].Metrics != nil {
				t.Errorf("%s: metrics %v %v", name, pairs[0].Metrics, pairs[1].Metrics)
			}
		}
	}
	for name, text := range map[string]string{
		"h.tsv": "a\tb\nx\ty\n", "m.tsv": "ref\tdist\tmetric\nx\ty\tnope\n", "j.jsonl": "{\"ref\":1}\n", "e.csv": "ref,dist\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		if _, err := ReadManifest(p, ""); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if PairID("a/b.png", "c.png") == PairID("a/b.pn", "gc.png") || PairID("x", "y") != PairID("x", "y") {
		t.Error("PairID")
	}
}

// TestRealCPUBackendOnTinyCorpus runs the CLI with its default decoder and
// CPU backend over the repository's tiny corpus (dir pairing) and compares
// SSIMULACRA2 with libjxl's scores.
func TestRealCPUBackendOnTinyCorpus(t *testing.T) {
	tiny := shared.Testdata(t, "tiny")
	golden, err := shared.ReadTSV(filepath.Join(tiny, "scores.tsv"))
	if err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "tiny.parquet")
	code, _, stderr := runCLI(t, Deps{}, "--ref-dir", tiny, "--dist-dir", tiny, "--out", out, "--progress", "none")
	if code != ExitOK {
		t.Fatalf("code %d: %s", code, stderr)
	}
	rows := readAll(t, out)
	if len(rows) != 9 {
		t.Fatalf("%d rows, want 9", len(rows))
	}
	byDist := map[string]float64{}
	for _, r := range rows {
		byDist[filepath.Base(r.Dist)] = *r.Score
	}
	for i := range golden.Rows {
		want, err := golden.Float(i, "ssimulacra2")
		if err != nil {
			continue
		}
		got, ok := byDist[filepath.Base(golden.Get(i, "dist"))]
		if !ok || math.Abs(got-want) > 0.05 {
			t.Errorf("%s: got %v (found %v), libjxl %v", golden.Get(i, "dist"), got, ok, want)
		}
	}
}

// TestOrchestratorEngineOnTinyCorpus runs the batch through the real
// orchestrator (CPU only) over testdata/tiny and checks the SSIMULACRA2
// scores against libjxl's.
func TestOrchestratorEngineOnTinyCorpus(t *testing.T) {
	tiny := shared.Testdata(t, "tiny")
	golden, err := shared.ReadTSV(filepath.Join(tiny, "scores.tsv"))
	if err != nil {
		t.Skip(err)
	}
	pairs, err := ReadManifest(filepath.Join(tiny, "scores.tsv"), TSV)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o, err := orchestrator.New(ctx, orchestrator.Config{CacheDir: t.TempDir(), DisableGPU: true, MaxParallelCPU: 2})
	if err != nil {
		t.Skipf("orchestrator: %v", err)
	}
	defer o.Close()
	e := NewOrchestratorEngine(o, 4)
	out := filepath.Join(t.TempDir(), "o.jsonl")
	sum, err := Run(ctx, Config{Pairs: pairs, Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2}, Out: out,
		Engine: e, Decode: imageio.DecodeFile, Decoders: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.OK != len(golden.Rows) {
		t.Fatalf("summary %+v", sum)
	}
	got := map[string]float64{}
	for _, r := range readAll(t, out) {
		got[r.Dist] = *r.Score
	}
	for i := range golden.Rows {
		want, _ := golden.Float(i, "ssimulacra2")
		if g := got[golden.Get(i, "dist")]; math.Abs(g-want) > 0.05 {
			t.Errorf("%s: %v, libjxl %v", golden.Get(i, "dist"), g, want)
		}
	}
}
