package dssim

import (
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// TestPlanTiles checks that the strips' owned windows tile every scale of
// the image exactly once (so the partial sums add up to the full image's),
// that each window keeps at least 4 rows of context (the four 3×3 passes)
// from a crop edge that is not the image's, and that crops start on
// multiples of 16.
func TestPlanTiles(t *testing.T) {
	for _, c := range [][3]int{{100, 1000, 64}, {37, 333, 16}, {640, 481, 112}, {9, 200, 48}, {300, 7, 16}} {
		w, h, band := c[0], c[1], c[2]
		strips, err := webgpu.PlanStrips(h, band, stripSpec)
		if err != nil {
			t.Fatal(err)
		}
		p := newPlan(w, h, strips)
		for s := 0; s < p.scales; s++ {
			next := 0 // next global row expected at this scale
			for _, b := range p.bands {
				if b.C0%stripAlign != 0 {
					t.Fatalf("%dx%d: crop starts at %d", w, h, b.C0)
				}
				l := b.lv[s]
				g0 := b.C0>>s + l.own0
				if g0 != next && l.own1 > l.own0 {
					t.Fatalf("%dx%d band %d scale %d: owned rows start at %d, want %d", w, h, band, s, g0, next)
				}
				next = b.C0>>s + l.own1
				if b.C0 > 0 && l.own0 < 4 && l.own1 > l.own0 {
					t.Errorf("%dx%d scale %d: %d rows of context above", w, h, s, l.own0)
				}
				if b.C1 < h && l.rows-l.own1 < 4 && l.own1 > l.own0 {
					t.Errorf("%dx%d scale %d: %d rows of context below", w, h, s, l.rows-l.own1)
				}
			}
			if next != h>>s {
				t.Errorf("%dx%d scale %d: owned rows end at %d, want %d", w, h, s, next, h>>s)
			}
		}
	}
}

// TestNumScales: scale k+1 exists when scale k is at least 8×8, at most 5.
func TestNumScales(t *testing.T) {
	for _, c := range [][3]int{{1, 1, 1}, {8, 8, 2}, {7, 100, 1}, {16, 16, 3}, {15, 16, 2}, {4000, 3000, 5}, {128, 128, 5}, {64, 64, 5}, {32, 32, 4}} {
		if n := numScales(c[0], c[1]); n != c[2] {
			t.Errorf("numScales(%d, %d) = %d, want %d", c[0], c[1], n, c[2])
		}
	}
}

// TestStripPlanBudget: the plan's model stays within the budget and the
// binding limit, and falls back to recomputing the reference when the
// kept planes do not fit.
func TestStripPlanBudget(t *testing.T) {
	const w, h = 1000, 4000
	full := newPlan(w, h, nil).memory(int64(w*h*3), true).total()
	for _, budget := range []int64{full / 2, full / 4, full / 10} {
		p, keep, err := stripPlan(w, h, w*3, zenmetrics.RGB8, budget, 1<<30, 0)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		m := p.memory(cropRaw(w, p.maxRows, w*3, zenmetrics.RGB8), keep).total()
		t.Logf("budget %.2f of full: %d strips, crop %d rows, kept %v, %d bytes", float64(budget)/float64(full), len(p.bands), p.maxRows, keep, m)
		if m > budget {
			t.Errorf("budget %d: plan needs %d", budget, m)
		}
	}
	p, _, err := stripPlan(w, h, w*3, zenmetrics.RGB8, -1, 16*w*200, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.maxPlane() > int64(16*w*200) {
		t.Errorf("binding limit %d, plane %d", 16*w*200, p.maxPlane())
	}
}
