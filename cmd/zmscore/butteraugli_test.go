package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// baFake is a Butteraugli-shaped fake backend following the CPU backend's
// conventions: Value is the max, Extras["pnorm3"] always, Extras["pnorm"]
// when PNorm > 0, DistMap when Options.DistMap. Its map is a ramp from 0 at
// the top-left corner to about 3 at the bottom-right, whatever the images.
type baFake struct {
	mu   sync.Mutex
	opts []zenmetrics.Options
	// noMap drops the map even when asked for.
	noMap bool
}

type baFakeRef struct {
	b   *baFake
	opt zenmetrics.Options
	ref *zenmetrics.Image
}

func (f *baFake) Name() string { return "fake" }
func (f *baFake) Estimate(zenmetrics.Metric, int, int, zenmetrics.Mode) (int64, bool) {
	return 0, true
}
func (f *baFake) Prepare(_ context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.Butteraugli {
		return nil, zenmetrics.ErrUnsupported
	}
	f.mu.Lock()
	f.opts = append(f.opts, opt)
	f.mu.Unlock()
	return &baFakeRef{f, opt, ref}, nil
}
func (f *baFake) Close() error { return nil }

func fakeMap(w, h int) *zenmetrics.FloatPlane {
	p := &zenmetrics.FloatPlane{Width: w, Height: h, Pix: make([]float32, w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p.Pix[y*w+x] = float32(x+y) / float32(w+h-2) * 3
		}
	}
	return p
}

func (r *baFakeRef) Score(_ context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	s := zenmetrics.Score{
		Metric: zenmetrics.Butteraugli,
		Value:  3,
		Extras: map[string]float64{"pnorm3": 1.25},
	}
	if r.opt.PNorm > 0 {
		s.Extras["pnorm"] = r.opt.PNorm / 10
	}
	if r.opt.DistMap && !r.b.noMap {
		s.DistMap = fakeMap(d.Width, d.Height)
	}
	return s, nil
}
func (r *baFakeRef) Release() {}

func useBackend(t *testing.T, b zenmetrics.Backend) {
	t.Helper()
	newBackend = func(string, int) (zenmetrics.Backend, error) { return b, nil }
	t.Cleanup(func() { newBackend = openBackend })
}

func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var res []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		res = append(res, m)
	}
	return res
}

func TestButteraugliFakeJSON(t *testing.T) {
	fb := &baFake{}
	useBackend(t, fb)
	ref, dist := tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")

	code, out, errOut := runCLI("--metric", "butteraugli", ref, dist)
	if code != 0 || out != "3.00000000\n" {
		t.Fatalf("plain: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI("--metric", "ba", "--json", "--intensity-target", "250", "--pnorm", "6", ref, dist)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	m := jsonLines(t, out)[0]
	if m["metric"] != "butteraugli" || m["score"] != 3.0 || m["pnorm3"] != 1.25 || m["pnorm"] != 0.6 {
		t.Fatalf("JSON %s", out)
	}
	ex, _ := m["extras"].(map[string]any)
	if ex["pnorm3"] != 1.25 || ex["pnorm"] != 0.6 {
		t.Fatalf("extras %v", m["extras"])
	}
	if _, ok := m["distmap"]; ok {
		t.Fatalf("distmap named without --distmap: %s", out)
	}
	want := []zenmetrics.Options{
		{IntensityTarget: 80},
		{IntensityTarget: 250, PNorm: 6},
	}
	if len(fb.opts) != len(want) {
		t.Fatalf("Prepare options %+v", fb.opts)
	}
	for i := range want {
		if fb.opts[i] != want[i] {
			t.Errorf("run %d: Prepare got %+v, want %+v", i, fb.opts[i], want[i])
		}
	}
	// Without --pnorm there is no "pnorm".
	code, out, _ = runCLI("--metric", "butteraugli", "--json", ref, dist)
	if m := jsonLines(t, out)[0]; code != 0 || m["pnorm3"] != 1.25 || m["pnorm"] != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestButteraugliFakeMaps(t *testing.T) {
	fb := &baFake{}
	useBackend(t, fb)
	dir := t.TempDir()
	ref := tiny(t, "coffee_crop256__ref.png")
	d1, d2 := tiny(t, "coffee_crop256__jxl_d1.png"), tiny(t, "coffee_crop256__webp_q75.png")
	code, out, errOut := runCLI("--metric", "butteraugli", "--json",
		"--distmap", filepath.Join(dir, "heat_{}.png"), "--rawdistmap", filepath.Join(dir, "%s.pfm"), ref, d1, d2)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !fb.opts[0].DistMap {
		t.Fatalf("Prepare not asked for the map: %+v", fb.opts[0])
	}
	lines := jsonLines(t, out)
	good, bad := imageio.ButteraugliHeatMapThresholds()
	wantMap := fakeMap(256, 256)
	wantHeat := imageio.HeatMap(wantMap, good, bad)
	for i, name := range []string{"coffee_crop256__jxl_d1", "coffee_crop256__webp_q75"} {
		heatPath, rawPath := filepath.Join(dir, "heat_"+name+".png"), filepath.Join(dir, name+".pfm")
		if lines[i]["distmap"] != heatPath || lines[i]["rawdistmap"] != rawPath {
			t.Errorf("line %d names %v and %v", i, lines[i]["distmap"], lines[i]["rawdistmap"])
		}
		heat, err := imageio.DecodeFile(heatPath)
		if err != nil {
			t.Fatal(err)
		}
		if heat.Format != zenmetrics.RGB8 || string(heat.Pix) != string(wantHeat.Pix) {
			t.Errorf("%s is not the heat map of the distance map", heatPath)
		}
		// Top-left is distance 0: black; bottom-right is 3 (above bad).
		if c := heat.Pix[:3]; c[0] != 0 || c[1] != 0 || c[2] != 0 {
			t.Errorf("top-left %v, want black", c)
		}
		f, err := os.Open(rawPath)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := imageio.ReadPFM(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for j := range wantMap.Pix {
			if raw.Pix[j] != wantMap.Pix[j] {
				t.Fatalf("%s differs at %d: %v, want %v", rawPath, j, raw.Pix[j], wantMap.Pix[j])
			}
		}
	}

	// One DIST, a plain path.
	one := filepath.Join(dir, "one.png")
	if code, _, errOut := runCLI("--metric", "butteraugli", "--distmap", one, ref, d1); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(one); err != nil {
		t.Fatal(err)
	}

	// A backend that returns no map fails the DIST.
	fb.noMap = true
	code, out, errOut = runCLI("--metric", "butteraugli", "--distmap", filepath.Join(dir, "x.png"), ref, d1)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "no distance map") {
		t.Fatalf("no map: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	fb.noMap = false

	// An unwritable map fails its DIST, the others still score.
	code, out, errOut = runCLI("--metric", "butteraugli", "--distmap", filepath.Join(dir, "missing", "{}.png"), ref, d1, d2)
	if code != 1 || out != "nan\nnan\n" || !strings.Contains(errOut, "--distmap") {
		t.Fatalf("unwritable: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestButteraugliUsageErrors(t *testing.T) {
	useBackend(t, &baFake{})
	dir := t.TempDir()
	ref, d1, d2 := tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png"), tiny(t, "camera__webp_q75.png")
	other := filepath.Join(dir, "sub", "camera__jxl_d1.png")
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"distmap on ssim2", []string{"--distmap", "m.png", ref, d1}, "--distmap applies to --metric butteraugli, dssim and cvvdp only"},
		{"rawdistmap on ssim2", []string{"--metric", "ssim2", "--rawdistmap", "m.pfm", ref, d1}, "--rawdistmap"},
		{"pnorm on ssim2", []string{"--pnorm", "2", ref, d1}, "--pnorm"},
		{"intensity on ssim2", []string{"--intensity-target", "80", ref, d1}, "--intensity-target"},
		{"zero intensity", []string{"--metric", "butteraugli", "--intensity-target", "0", ref, d1}, "--intensity-target"},
		{"nan intensity", []string{"--metric", "butteraugli", "--intensity-target", "NaN", ref, d1}, "--intensity-target"},
		{"zero pnorm", []string{"--metric", "butteraugli", "--pnorm", "0", ref, d1}, "--pnorm"},
		{"negative pnorm", []string{"--metric", "butteraugli", "--pnorm", "-3", ref, d1}, "--pnorm"},
		{"inf pnorm", []string{"--metric", "butteraugli", "--pnorm", "inf", ref, d1}, "--pnorm"},
		{"bad pnorm", []string{"--metric", "butteraugli", "--pnorm", "three", ref, d1}, "pnorm"},
		{"empty distmap", []string{"--metric", "butteraugli", "--distmap", "", ref, d1}, "needs a file name"},
		{"one map for two", []string{"--metric", "butteraugli", "--distmap", "m.png", ref, d1, d2}, "{}"},
		{"one raw map for two", []string{"--metric", "butteraugli", "--rawdistmap", "m.pfm", ref, d1, d2}, "--rawdistmap"},
		{"same name twice", []string{"--metric", "butteraugli", "--distmap", "{}.png", ref, d1, other}, "more than once"},
		{"same file both maps", []string{"--metric", "butteraugli", "--distmap", "m", "--rawdistmap", "m", ref, d1}, "more than once"},
		{"overwrites input", []string{"--metric", "butteraugli", "--distmap", d1, ref, d1}, "overwrite an input"},
		{"template hits input", []string{"--metric", "butteraugli", "--distmap", filepath.Join(filepath.Dir(d1), "{}.png"), ref, d1}, "overwrite an input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" {
				t.Fatalf("exit %d, stdout %q, want 2 (stderr %q)", code, out, errOut)
			}
			if !strings.Contains(errOut, c.msg) {
				t.Fatalf("stderr %q lacks %q", errOut, c.msg)
			}
		})
	}
}

func TestMapPaths(t *testing.T) {
	got, err := mapPaths("--distmap", "out/{}-%s.png", []string{"a/x.q80.png", "b.webp", "dir/noext"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"out/x.q80-x.q80.png", "out/b-b.png", "out/noext-noext.png"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %q, want %q", i, got[i], want[i])
		}
	}
	if got, err := mapPaths("--distmap", "m.png", []string{"a.png"}); err != nil || got[0] != "m.png" {
		t.Errorf("single DIST: %v %v", got, err)
	}
}

// baRow is one tiny pair with libjxl's Butteraugli numbers.
type baRow struct {
	ref, dist   string
	max, pnorm3 float64
}

func tinyButteraugliRows(t *testing.T) []baRow {
	table, err := shared.ReadTSV(tiny(t, "scores.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []baRow
	for r := range table.Rows {
		mx, err1 := table.Float(r, "butteraugli_max")
		p3, err2 := table.Float(r, "butteraugli_3norm")
		if err1 != nil || err2 != nil {
			t.Fatalf("row %d: %v %v", r, err1, err2)
		}
		rows = append(rows, baRow{table.Get(r, "ref"), table.Get(r, "dist"), mx, p3})
	}
	return rows
}

// checkButteraugliCLI runs zmscore --metric butteraugli --json on every tiny
// pair (the DISTs of a reference in one call) with the current newBackend
// and compares with libjxl's butteraugli_main within 1e-3 relative. With
// maps it also checks that the PFM's maximum is the score and the PNG is the
// heat map of the PFM.
func checkButteraugliCLI(t *testing.T, maps bool) {
	rows := tinyButteraugliRows(t)
	byRef := map[string][]baRow{}
	var refs []string
	for _, r := range rows {
		if _, ok := byRef[r.ref]; !ok {
			refs = append(refs, r.ref)
		}
		byRef[r.ref] = append(byRef[r.ref], r)
	}
	dir := t.TempDir()
	for _, ref := range refs {
		args := []string{"--metric", "butteraugli", "--json", tiny(t, ref)}
		if maps {
			args = append(args, "--distmap", filepath.Join(dir, "{}.png"), "--rawdistmap", filepath.Join(dir, "{}.pfm"))
		}
		for _, r := range byRef[ref] {
			args = append(args, tiny(t, r.dist))
		}
		code, out, errOut := runCLI(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		lines := jsonLines(t, out)
		if len(lines) != len(byRef[ref]) {
			t.Fatalf("%d lines for %d DISTs", len(lines), len(byRef[ref]))
		}
		for i, r := range byRef[ref] {
			m := lines[i]
			got, _ := m["score"].(float64)
			p3, _ := m["pnorm3"].(float64)
			if rel(got, r.max) > 1e-3 || rel(p3, r.pnorm3) > 1e-3 {
				t.Errorf("%s vs %s: max %.10f 3-norm %.6f, libjxl %.10f %.6f", r.ref, r.dist, got, p3, r.max, r.pnorm3)
			}
			if ex, _ := m["extras"].(map[string]any); ex["pnorm3"] != m["pnorm3"] {
				t.Errorf("extras %v vs pnorm3 %v", ex, m["pnorm3"])
			}
			if !maps {
				continue
			}
			f, err := os.Open(m["rawdistmap"].(string))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := imageio.ReadPFM(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			mx := math.Inf(-1)
			for _, v := range raw.Pix {
				mx = math.Max(mx, float64(v))
			}
			if mx != got {
				t.Errorf("%s: PFM maximum %v, score %v", r.dist, mx, got)
			}
			heat, err := imageio.DecodeFile(m["distmap"].(string))
			if err != nil {
				t.Fatal(err)
			}
			good, bad := imageio.ButteraugliHeatMapThresholds()
			if want := imageio.HeatMap(raw, good, bad); string(heat.Pix) != string(want.Pix) {
				t.Errorf("%s: heat map is not the PFM's", r.dist)
			}
		}
	}
}

func rel(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(b), 1e-12)
}

// TestButteraugliCPUBackend is the real thing: the cpu backend through
// openBackend. It skips until cpu.Backend has its Butteraugli case.
func TestButteraugliCPUBackend(t *testing.T) {
	b := cpu.New(cpu.Config{})
	defer b.Close()
	im := zenmetrics.NewImage(16, 16, zenmetrics.RGB8)
	r, err := b.Prepare(context.Background(), zenmetrics.Butteraugli, im, zenmetrics.Options{})
	if errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Skipf("cpu backend has no Butteraugli yet: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	checkButteraugliCLI(t, true)
	code, out, errOut := runCLI("--metric", "butteraugli", "--pnorm", "3", "--json", tiny(t, "camera__ref.png"), tiny(t, "camera__jpeg_q20.png"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if m := jsonLines(t, out)[0]; m["pnorm"] == nil || m["pnorm"] != m["pnorm3"] {
		t.Errorf("--pnorm 3 gives pnorm %v, pnorm3 %v", m["pnorm"], m["pnorm3"])
	}
}

// adapterBackend serves Butteraugli from cpu/butteraugli's own adapter, so
// the CLI is checked against libjxl before cpu.Backend dispatches to it.
type adapterBackend struct{}

func (adapterBackend) Name() string { return "cpu" }
func (adapterBackend) Estimate(zenmetrics.Metric, int, int, zenmetrics.Mode) (int64, bool) {
	return 0, true
}
func (adapterBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.Butteraugli {
		return nil, zenmetrics.ErrUnsupported
	}
	return butteraugli.PrepareBackend(ctx, ref, opt, 0)
}
func (adapterBackend) Close() error { return nil }

func TestButteraugliAdapterMatchesLibjxl(t *testing.T) {
	if testing.Short() {
		t.Skip("scores 9 pairs with the CPU reference")
	}
	useBackend(t, adapterBackend{})
	checkButteraugliCLI(t, true)
	// Plain output is the max as %.8f.
	code, out, _ := runCLI("--metric", "butteraugli", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png"))
	v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if code != 0 || err != nil {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, r := range tinyButteraugliRows(t) {
		if r.dist == "camera__jxl_d1.png" && rel(v, r.max) > 1e-3 {
			t.Errorf("plain output %v, libjxl %v", v, r.max)
		}
	}
}
