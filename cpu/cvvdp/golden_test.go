package cvvdp

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// crop returns the w×h window of im at (x, y) as a tightly packed copy;
// w = 0 means the whole image.
func crop(t testing.TB, im *zenmetrics.Image, x, y, w, h int) *zenmetrics.Image {
	t.Helper()
	if w == 0 {
		return im
	}
	bpp := im.Format.BytesPerPixel()
	out := zenmetrics.NewImage(w, h, im.Format)
	for r := 0; r < h; r++ {
		src := im.Row(y + r)[x*bpp : (x+w)*bpp]
		copy(out.Pix[r*out.Stride:], src)
	}
	return out
}

// to16 widens an 8-bit RGB image to 16 bits as v·257 (big-endian).
func to16(t testing.TB, im *zenmetrics.Image) *zenmetrics.Image {
	t.Helper()
	if im.Format != zenmetrics.RGB8 {
		t.Fatalf("to16: %v", im.Format)
	}
	out := zenmetrics.NewImage(im.Width, im.Height, zenmetrics.RGB16)
	for y := 0; y < im.Height; y++ {
		row := im.Row(y)[:3*im.Width]
		for i, v := range row {
			o := y*out.Stride + 2*i
			out.Pix[o], out.Pix[o+1] = v, v
		}
	}
	return out
}

// TestGoldens checks testdata/pycvvdp_goldens.tsv (pycvvdp 0.5.4 run on
// this machine, see testdata/README.md): every display model on two JPEG
// qualities, crops of odd and mixed-parity sizes down to 2×2 (which
// exercise pycvvdp's pyramid edge rules, the too-small-to-blur bands and
// the one-band pyramid), 16-bit input, and the two images exchanged (a
// different score: the order is respected). Tolerance 1e-4 JOD, the
// issue's aim, as in TestRefvectors.
func TestGoldens(t *testing.T) {
	dir := sharedDir(t, "refvectors")
	tab, err := shared.ReadTSV(filepath.Join("testdata", "pycvvdp_goldens.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-4
	cache := map[string]*zenmetrics.Image{}
	load := func(p string) *zenmetrics.Image {
		if im := cache[p]; im != nil {
			return im
		}
		im := decode(t, dir, p)
		cache[p] = im
		return im
	}
	var maxd float64
	for i := range tab.Rows {
		var c [4]int
		for k, f := range strings.Split(tab.Get(i, "crop_xywh"), ",") {
			if c[k], err = strconv.Atoi(f); err != nil {
				t.Fatal(err)
			}
		}
		ref := crop(t, load(tab.Get(i, "ref")), c[0], c[1], c[2], c[3])
		dist := crop(t, load(tab.Get(i, "dist")), c[0], c[1], c[2], c[3])
		if tab.Get(i, "depth") == "16" {
			ref, dist = to16(t, ref), to16(t, dist)
		}
		if tab.Get(i, "swap") == "swap" {
			ref, dist = dist, ref
		}
		want, err := tab.Float(i, "jod")
		if err != nil {
			t.Fatal(err)
		}
		disp := tab.Get(i, "display")
		got := predict(t, dist, ref, Config{Display: disp})
		d := math.Abs(got - want)
		maxd = max(maxd, d)
		if !(d <= tol) {
			t.Errorf("row %d (%s %s %s crop %s depth %s %s): got %.7f, want %.7f (|Δ| %.3g > %g)", i+1,
				tab.Get(i, "case"), disp, tab.Get(i, "dist"), tab.Get(i, "crop_xywh"), tab.Get(i, "depth"), tab.Get(i, "swap"), got, want, d, tol)
		}
	}
	t.Logf("goldens: %d rows, max |Δ| %.3g", len(tab.Rows), maxd)
}
