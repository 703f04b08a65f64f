package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// TestCVVDPCPUScores scores testdata/tiny's cvvdp_jod column (pycvvdp
// 0.5.4, standard_4k, test = dist) through the command on the CPU
// backend, every DIST of a reference in one call, spelling the metric both
// ways: within 1e-4 JOD (the aim; cpu/cvvdp measures 3.3e-8 on
// these rows, the output has 8 decimals).
func TestCVVDPCPUScores(t *testing.T) {
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
		name := []string{"cvvdp", "colorvideovdp"}[i%2]
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
			want, err := table.Float(r, "cvvdp_jod")
			if err != nil {
				t.Fatal(err)
			}
			got, err := strconv.ParseFloat(lines[k], 64)
			if err != nil || !(math.Abs(got-want) <= 1e-4) {
				t.Errorf("%s: %q, pycvvdp %.7f", table.Get(r, "dist"), lines[k], want)
			}
		}
	}
}

// TestCVVDPDisplayAndMaps: --display reaches the metric (the CLI prints
// what the backend gives for that display, and a different display gives
// a different score), the maps are the backend's raw heatmap (PFM bit for
// bit, PNG as its grey rendering), and the flag errors are usage errors.
func TestCVVDPDisplayAndMaps(t *testing.T) {
	useCPU(t)
	b := cpu.New(cpu.Config{})
	defer b.Close()
	dir := t.TempDir()
	ref, dist := tiny(t, "coffee_crop256__ref.png"), tiny(t, "coffee_crop256__jpeg_q20.png")
	refImg, err := imageio.DecodeFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	distImg, err := imageio.DecodeFile(dist)
	if err != nil {
		t.Fatal(err)
	}
	var scores []float64
	for _, disp := range []string{"standard_4k", "standard_hdr_pq"} {
		raw, heat := filepath.Join(dir, disp+".pfm"), filepath.Join(dir, disp+".png")
		code, out, errOut := runCLI("--metric", "cvvdp", "--display", disp, "--json", "--rawdistmap", raw, "--distmap", heat, ref, dist)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", disp, code, errOut)
		}
		line := jsonLines(t, out)[0]
		s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.CVVDP, refImg, distImg, zenmetrics.Options{Display: disp, DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		if line["score"] != s.Value || line["rawdistmap"] != raw || line["distmap"] != heat {
			t.Errorf("%s: CLI %v, backend %v", disp, line, s.Value)
		}
		scores = append(scores, s.Value)
		f, err := os.Open(raw)
		if err != nil {
			t.Fatal(err)
		}
		m, err := imageio.ReadPFM(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.Width != 256 || m.Height != 256 {
			t.Fatalf("%s: PFM %dx%d", disp, m.Width, m.Height)
		}
		for k := range m.Pix {
			if math.Float32bits(m.Pix[k]) != math.Float32bits(s.DistMap.Pix[k]) {
				t.Fatalf("%s: PFM differs at %d", disp, k)
			}
		}
		png, err := imageio.DecodeFile(heat)
		if err != nil {
			t.Fatal(err)
		}
		want := greyMap(s.DistMap)
		if png.Format != zenmetrics.Gray8 || string(png.Pix) != string(want.Pix) {
			t.Errorf("%s: PNG map (%v) differs from the grey rendering", disp, png.Format)
		}
	}
	if scores[0] == scores[1] {
		t.Errorf("standard_4k and standard_hdr_pq give the same score %v", scores[0])
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metric", "cvvdp", "--display", "nope", ref, dist}, "standard_4k"},
		{[]string{"--metric", "cvvdp", "--display", "", ref, dist}, "unknown display"},
		{[]string{"--metric", "ssim2", "--display", "standard_4k", ref, dist}, "--display applies to --metric cvvdp only"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q", c.args, code, errOut)
		}
	}
}
