package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
)

// A profile with CUDA cells (as a bench on a CUDA machine writes it)
// prints them: a cuda_full row per measured size right after the gpu_full
// one, its OOM cell, in the table and in the JSON. The profile is this
// machine's CPU-only one, benched first and then given GPU cells, so the
// second run only reads it.
func TestCUDARowsPrinted(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--cpu-only", "--cache-dir", dir, "--sizes", "32", "--metrics", "ssim2"}
	code, out, errs := runArgs(t, append(base, "--json")...)
	var js struct {
		MachineHash string `json:"machine_hash"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil {
		t.Fatalf("first run: %d\n%s\n%s", code, out, errs)
	}
	err := (&capability.Store{Dir: dir}).Update(context.Background(), js.MachineHash, func(p *capability.Profile, lerr error) (*capability.Profile, error) {
		if p == nil {
			t.Fatalf("profile: %v", lerr)
		}
		m := zenmetrics.SSIMULACRA2
		p.SetSample(m, capability.ClassCUDAFull, capability.Sample{Pixels: 1 << 20, NsPerPx: 2.5, VRAMMiB: 80})
		p.SetSample(m, capability.ClassGPUFull, capability.Sample{Pixels: 1 << 20, NsPerPx: 4.68, VRAMMiB: 71})
		p.RecordOOM(m, capability.Cell{Backend: capability.ClassCUDAFull, Pixels: 1 << 26})
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = runArgs(t, base...)
	if code != exitOK {
		t.Fatalf("second run: %d\n%s\n%s", code, out, errs)
	}
	// gpu_full, then cuda_full (both runtimes' full images side by side),
	// then the cpu row, then the OOM cell.
	order := regexp.MustCompile(`(?s)ssim2 +gpu_full +1024² +4\.68 .*\n *ssim2 +cuda_full +1024² +2\.50 +400\.00 +80 *\n.*ssim2 +cpu +32² .*ssim2 +cuda_full +67108864 px .*out of memory`)
	if !order.MatchString(out) {
		t.Fatalf("table lacks the CUDA rows in order:\n%s", out)
	}
	code, out, _ = runArgs(t, append(base, "--json")...)
	var rows struct {
		Rows []row `json:"rows"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("json run: %d\n%s", code, out)
	}
	n := 0
	for _, r := range rows.Rows {
		if r.Backend == capability.ClassCUDAFull {
			n++
			if r.Pixels == 1<<20 && (r.Side != 1024 || r.NsPerPx != 2.5 || r.VRAMMiB != 80) {
				t.Errorf("cuda_full row %+v", r)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d cuda_full rows in the JSON, want 2 (a size and an OOM cell): %+v", n, rows.Rows)
	}
}
