package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestZensimCLI: `zmscore --metric zensim` prints one score per DIST,
// exactly 100 for the reference itself, below it for JPEG XL d1 and lower
// still for JPEG q20 on testdata/tiny's camera; a 7-px image fails its DIST (exit 1,
// "nan"); the map flags are usage errors (exit 2), zensim having no map.
func TestZensimCLI(t *testing.T) {
	useCPU(t)
	ref := tiny(t, "camera__ref.png")
	d1, q20 := tiny(t, "camera__jxl_d1.png"), tiny(t, "camera__jpeg_q20.png")
	code, out, errOut := runCLI("--metric", "zensim", ref, ref, d1, q20)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Fields(out)
	if len(lines) != 3 {
		t.Fatalf("stdout %q: want 3 scores", out)
	}
	var v [3]float64
	for i, l := range lines {
		f, err := strconv.ParseFloat(l, 64)
		if err != nil {
			t.Fatalf("score %q: %v", l, err)
		}
		v[i] = f
	}
	if v[0] != 100 || !(v[1] < 100) || !(v[2] < v[1]) {
		t.Errorf("scores ref %v, jxl d1 %v, jpeg q20 %v: want 100 > d1 > q20", v[0], v[1], v[2])
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	smallPNG(t, a, 7, 40, 1)
	smallPNG(t, b, 7, 40, 9)
	if code, out, errOut := runCLI("--metric", "zensim", a, b); code != 1 || out != "nan\n" || !strings.Contains(errOut, "too small") {
		t.Errorf("7×40: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, flag := range []string{"--distmap", "--rawdistmap"} {
		code, _, errOut := runCLI("--metric", "zensim", flag, filepath.Join(dir, "m.png"), ref, q20)
		if code != 2 || !strings.Contains(errOut, "zensim") {
			t.Errorf("%s: exit %d, stderr %q; want a usage error", flag, code, errOut)
		}
	}
}
