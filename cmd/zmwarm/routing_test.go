package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
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

// --compare-routing judges each disagreement against the reference's
// noise: the quick profile below prefers WebGPU everywhere, the reference
// CUDA, by 3 % within runs of ±5 % up to 1024² (coin flips) and by 50 %
// within ±2 % from 2048² (real errors).
func TestCompareRoutingNoiseVerdicts(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--cpu-only", "--cache-dir", dir, "--sizes", "32", "--metrics", "ssim2"}
	code, out, errs := runArgs(t, append(base, "--json")...)
	var js struct {
		MachineHash string `json:"machine_hash"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil {
		t.Fatalf("bench: %d\n%s\n%s", code, out, errs)
	}
	m := zenmetrics.SSIMULACRA2
	set := func(p *capability.Profile, cells map[string][4]float64) {
		for c, v := range cells { // ns/px and spread at 1024², then at 2048²
			p.SetSample(m, c, capability.Sample{Pixels: 1 << 20, NsPerPx: v[0], Spread: v[1]})
			p.SetSample(m, c, capability.Sample{Pixels: 1 << 22, NsPerPx: v[2], Spread: v[3]})
		}
	}
	store := &capability.Store{Dir: dir}
	var ref *capability.Profile
	err := store.Update(context.Background(), js.MachineHash, func(p *capability.Profile, lerr error) (*capability.Profile, error) {
		if p == nil {
			t.Fatalf("profile: %v", lerr)
		}
		ref = p.Clone()
		set(p, map[string][4]float64{capability.ClassGPUFull: {0.9, 0.03, 0.5, 0.03}, capability.ClassCUDAFull: {1.0, 0.03, 0.55, 0.03}})
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set(ref, map[string][4]float64{capability.ClassGPUFull: {1.0, 0.05, 0.6, 0.02}, capability.ClassCUDAFull: {0.97, 0.05, 0.4, 0.02}})
	data, err := ref.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	refPath := filepath.Join(t.TempDir(), "thorough.toml")
	if err := os.WriteFile(refPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runArgs(t, append(base, "--compare-routing", refPath)...)
	if code != exitOK {
		t.Fatalf("compare: %d\n%s\n%s", code, out, errs)
	}
	verdicts := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 7 && f[0] == "ssim2" && f[2] == "gpu_full" {
			verdicts[f[1]] = f[6] + " " + f[7]
		}
	}
	want := map[string]string{"256": "coin flip", "512": "coin flip", "1024": "coin flip", "2048": "real gpu_full", "4096": "real gpu_full", "8192": "real gpu_full"}
	for side, v := range want {
		if verdicts[side] != v {
			t.Errorf("%s²: verdict %q, want %q\n%s", side, verdicts[side], v, out)
		}
	}
	for _, s := range []string{"gpu_full 0.9±3.0%/1±5.0%", "of the 6 disagreements, 3 are coin flips (within the reference's noise), 3 real, 0 of unknown noise; worst real regret 50.0%"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}
