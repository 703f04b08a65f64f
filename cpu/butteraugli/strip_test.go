package butteraugli

import (
	"context"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestStripsEqualFull: scoring in strips gives the full comparison's
// maximum, 3-norm, p-norm and distance map bit for bit (tolerance 0: the
// interior of every strip is computed from the same inputs by the same
// arithmetic, and the norms' sums are taken in the same order; see
// strip.go), opaque and with alpha, for bands that cut the image into 2 to
// 5 strips, with an odd height (a last strip ending on an odd row).
func TestStripsEqualFull(t *testing.T) {
	if StripHalo() != 84 {
		t.Fatalf("StripHalo() = %d, want 84 (2·41 + 2)", StripHalo())
	}
	for _, c := range []struct {
		w, h, band int
		f          zenmetrics.PixelFormat
	}{
		{48, 501, 100, zenmetrics.RGB8},
		{40, 400, 230, zenmetrics.RGBA8},
		{33, 365, 60, zenmetrics.Gray16},
	} {
		ref, dist := photoPair(c.w, c.h, 3, c.f)
		cfg := Config{PNorm: 2, DistMap: true, Threads: 2}
		full := mustCompare(t, ref, dist, cfg)
		got, err := CompareStrips(context.Background(), ref, dist, cfg, c.band)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if got.Max != full.Max || got.PNorm3 != full.PNorm3 || got.PNorm != full.PNorm {
			t.Errorf("%+v: strips %v, full %v", c, summary(got), summary(full))
		}
		if len(got.DistMap) != len(full.DistMap) {
			t.Fatalf("%+v: map of %d values, want %d", c, len(got.DistMap), len(full.DistMap))
		}
		for i := range got.DistMap {
			if got.DistMap[i] != full.DistMap[i] {
				t.Fatalf("%+v: map differs first at row %d col %d: %v vs %v", c, i/c.w, i%c.w, got.DistMap[i], full.DistMap[i])
			}
		}
		if !(full.Max > 0) {
			t.Errorf("%+v: max %v, the pair should differ", c, full.Max)
		}
	}
}

// TestStripBand: the band fits the budget and is the largest that does.
func TestStripBand(t *testing.T) {
	w, h := 20000, 20000
	budget := int64(2 << 30)
	b := StripBand(w, h, budget)
	if b < 2 || b%2 != 0 || StripBytes(w, h, b) > budget || StripBytes(w, h, b+2) <= budget {
		t.Fatalf("StripBand = %d: bytes %d (budget %d), next %d", b, StripBytes(w, h, b), budget, StripBytes(w, h, b+2))
	}
	if StripBand(w, h, EstimateBytes(w, 2*StripHalo())) != 0 {
		t.Fatal("a budget below one 2-row strip gave a band")
	}
}
