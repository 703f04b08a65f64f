package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestIWSSIMCPUScores scores testdata/tiny's IW-SSIM column through the
// command on the CPU backend, every DIST of a reference in one call (so
// through one prepared reference), spelling the metric both ways: within
// 1e-6 absolute of piq 0.8.0 in float64 (the CPU tolerance; the
// reference values have 10 decimals, the output 8, so the comparison is
// limited by the printed 5e-9).
func TestIWSSIMCPUScores(t *testing.T) {
	useCPU(t)
	table, err := shared.ReadTSV(tiny(t, "scores_cvvdp_iwssim.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string][]int{}
	var refs []string
	for r := range table.Rows {
		ref := table.Get(r, "ref")
		if byRef[ref] == nil {
			refs = append(refs, ref)
		}
		byRef[ref] = append(byRef[ref], r)
	}
	for i, ref := range refs {
		name := []string{"iwssim", "iw-ssim"}[i%2]
		args := []string{"--metric", name, tiny(t, ref)}
		for _, r := range byRef[ref] {
			args = append(args, tiny(t, table.Get(r, "dist")))
		}
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", ref, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(byRef[ref]) {
			t.Fatalf("%s: %d lines for %d DISTs: %q", ref, len(lines), len(byRef[ref]), out)
		}
		for k, r := range byRef[ref] {
			want, err := table.Float(r, "iwssim")
			if err != nil {
				t.Fatal(err)
			}
			got, err := strconv.ParseFloat(lines[k], 64)
			if err != nil || got-want > 1e-6 || want-got > 1e-6 {
				t.Errorf("%s: %q, piq %.10f", table.Get(r, "dist"), lines[k], want)
			}
		}
	}
}

// TestIWSSIMRefusals: images under 161 px a side (piq's minimum for five
// scales) fail their DIST (exit 1, "nan", the reason on stderr); the
// map flags are usage errors for IW-SSIM, which has no map (exit 2).
func TestIWSSIMRefusals(t *testing.T) {
	useCPU(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	smallPNG(t, a, 160, 300, 1)
	smallPNG(t, b, 160, 300, 9)
	code, out, errOut := runCLI("--metric", "iwssim", a, b)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "too small") {
		t.Errorf("160×300: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	ref, dist := tiny(t, "camera__ref.png"), tiny(t, "camera__jpeg_q20.png")
	for _, flag := range []string{"--distmap", "--rawdistmap"} {
		code, _, errOut := runCLI("--metric", "iwssim", flag, filepath.Join(dir, "m.png"), ref, dist)
		if code != 2 || !strings.Contains(errOut, "iwssim") {
			t.Errorf("%s: exit %d, stderr %q; want a usage error", flag, code, errOut)
		}
	}
}
