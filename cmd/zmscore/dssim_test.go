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

// useCPU makes the command open a fresh CPU backend per run (it closes the
// backend it opened when it ends).
func useCPU(t *testing.T) {
	t.Helper()
	newBackend = func(_ string, threads int) (zenmetrics.Backend, error) {
		return cpu.New(cpu.Config{Threads: threads}), nil
	}
	t.Cleanup(func() { newBackend = openBackend })
}

// TestDSSIMCPUScores scores testdata/tiny's DSSIM table through the
// command on the CPU backend: within 1e-3 relative of dssim-core 3.4.0
// (the project's DSSIM tolerance), or 1e-8 absolute for the rounding of
// the 8-decimal reference values.
func TestDSSIMCPUScores(t *testing.T) {
	useCPU(t)
	table, err := shared.ReadTSV(tiny(t, "scores_dssim.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for r := range table.Rows {
		want, err := table.Float(r, "dssim")
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI("--metric", "dssim", tiny(t, table.Get(r, "ref")), tiny(t, table.Get(r, "dist")))
		if code != 0 {
			t.Fatalf("row %d: exit %d: %s", r, code, errOut)
		}
		got, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		if err != nil {
			t.Fatalf("row %d: output %q", r, out)
		}
		if d := math.Abs(got - want); d > 1e-8 && d > 1e-3*want {
			t.Errorf("%s: %.8f, dssim-core %.8f", table.Get(r, "dist"), got, want)
		}
	}
}

// TestDSSIMMaps writes both maps for two DISTs on the CPU backend and
// checks them against the backend's own SSIM map: the PFM bit for bit,
// the PNG byte for byte against imageio.DSSIMMapImage of that map.
func TestDSSIMMaps(t *testing.T) {
	useCPU(t)
	b := cpu.New(cpu.Config{})
	defer b.Close()
	dir := t.TempDir()
	ref := tiny(t, "coffee_crop256__ref.png")
	dists := []string{tiny(t, "coffee_crop256__jxl_d1.png"), tiny(t, "coffee_crop256__jpeg_q20.png")}
	code, out, errOut := runCLI("--metric", "dssim", "--json",
		"--distmap", filepath.Join(dir, "{}.png"), "--rawdistmap", filepath.Join(dir, "{}.pfm"), ref, dists[0], dists[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := jsonLines(t, out)
	refImg, err := imageio.DecodeFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dists {
		name := distName(d)
		if lines[i]["distmap"] != filepath.Join(dir, name+".png") || lines[i]["rawdistmap"] != filepath.Join(dir, name+".pfm") {
			t.Fatalf("line %d: %v", i, lines[i])
		}
		distImg, err := imageio.DecodeFile(d)
		if err != nil {
			t.Fatal(err)
		}
		s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.DSSIM, refImg, distImg, zenmetrics.Options{DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		if lines[i]["score"] != s.Value {
			t.Errorf("%s: CLI score %v, backend %v", name, lines[i]["score"], s.Value)
		}
		f, err := os.Open(filepath.Join(dir, name+".pfm"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := imageio.ReadPFM(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if raw.Width != s.DistMap.Width || raw.Height != s.DistMap.Height {
			t.Fatalf("%s: PFM %dx%d", name, raw.Width, raw.Height)
		}
		below := 0
		for k := range raw.Pix {
			if math.Float32bits(raw.Pix[k]) != math.Float32bits(s.DistMap.Pix[k]) {
				t.Fatalf("%s: PFM differs at %d: %v vs %v", name, k, raw.Pix[k], s.DistMap.Pix[k])
			}
			if raw.Pix[k] < 0.99 {
				below++
			}
		}
		if below == 0 {
			t.Errorf("%s: SSIM map has no value below 0.99 for a distorted image", name)
		}
		png, err := imageio.DecodeFile(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		want := imageio.DSSIMMapImage(s.DistMap)
		if png.Format != zenmetrics.RGBA8 || png.Width != want.Width || string(png.Pix) != string(want.Pix) {
			t.Errorf("%s: PNG map (%v %dx%d) differs from DSSIMMapImage", name, png.Format, png.Width, png.Height)
		}
	}
}

// TestDSSIMMapFlags: --distmap and --rawdistmap are accepted for dssim,
// --pnorm and --intensity-target are still Butteraugli's only.
func TestDSSIMMapFlags(t *testing.T) {
	useCPU(t)
	ref, d1 := tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")
	for _, flag := range []string{"--pnorm", "--intensity-target"} {
		code, _, errOut := runCLI("--metric", "dssim", flag, "3", ref, d1)
		if code != 2 || !strings.Contains(errOut, flag) {
			t.Errorf("%s with dssim: exit %d, %q", flag, code, errOut)
		}
	}
	code, _, errOut := runCLI("--metric", "dssim", "--rawdistmap", filepath.Join(t.TempDir(), "m.pfm"), ref, d1)
	if code != 0 {
		t.Errorf("--rawdistmap with dssim: exit %d: %s", code, errOut)
	}
}
