package strips

import (
	"testing"
)

// The planner tiles every row of the image with interiors, once, at every
// pyramid level, with aligned crops that add at most the halo.
func TestPlan(t *testing.T) {
	spec := Spec{Halo: 160, Align: 32, MinCrop: 256}
	for _, tc := range []struct{ h, band, want int }{
		{1000, 300, 4}, {1000, 1000, 1}, {1001, 96, 11}, {8192, 2048, 4}, {999, 33, 32},
	} {
		ss, err := Plan(tc.h, tc.band, spec)
		if err != nil {
			t.Fatalf("h %d band %d: %v", tc.h, tc.band, err)
		}
		if len(ss) != tc.want {
			t.Errorf("h %d band %d: %d strips, want %d", tc.h, tc.band, len(ss), tc.want)
		}
		for l := 0; l < 6; l++ {
			next := 0
			for i, s := range ss {
				if s.Y0%spec.Align != 0 || s.C0%spec.Align != 0 || s.C0 > max(0, s.Y0-spec.Halo) || s.C1 < min(tc.h, s.Y1+spec.Halo) ||
					(s.Rows() < spec.MinCrop && s.Rows() < tc.h) {
					t.Fatalf("h %d: strip %d %+v not aligned or wrong halo", tc.h, i, s)
				}
				lo, hi := s.WindowAt(l, tc.h)
				if lo+s.C0>>l != next || lo < 0 || hi > (s.Rows()+(1<<l)-1)>>l || hi <= lo {
					t.Fatalf("h %d level %d strip %d: window [%d,%d) of crop %+v, expected to start at %d", tc.h, l, i, lo, hi, s, next)
				}
				next = hi + s.C0>>l
			}
			if want := (tc.h + (1 << l) - 1) >> l; next != want {
				t.Errorf("h %d level %d: interiors end at %d, want %d", tc.h, l, next, want)
			}
		}
	}
	if _, err := Plan(100, 10, Spec{Halo: 5, Align: 2}); err == nil {
		t.Error("a halo that is not a multiple of the alignment was accepted")
	}
}

func TestBand(t *testing.T) {
	spec := Spec{Halo: 84, Align: 2, MinCrop: 16}
	if b, ok := Band(1000, spec, 5000); !ok || b != 1000 {
		t.Errorf("everything fits: band %d %v", b, ok)
	}
	if b, ok := Band(1000, spec, 401); !ok || b != 232 {
		t.Errorf("401 crop rows: band %d %v, want 232", b, ok)
	}
	if _, ok := Band(1000, spec, 169); ok {
		t.Error("a crop of 169 rows cannot hold 2 interior rows and two 84-row halos")
	}
}

// Choose takes the whole image when it fits, prefers the resident
// reference at each band, halves the band until a plan fits, forces a
// band when asked, and says when nothing fits.
func TestChoose(t *testing.T) {
	spec := Spec{Halo: 64, Align: 16, MinCrop: 32}
	rows := func(ss []Strip) int {
		n := 0
		for _, s := range ss {
			n = max(n, s.Rows())
		}
		return n
	}
	// A plan "fits" when its tallest crop is at most limit rows, kept or
	// not, and kept only while the sum of its crops is at most keepRows.
	choose := func(limit, keepRows int) ([]Strip, bool, bool) {
		ss, keep, ok, err := Choose(4000, spec, 0, func(ss []Strip, keep bool) bool {
			total := 0
			for _, s := range ss {
				total += s.Rows()
			}
			return rows(ss) <= limit && (!keep || total <= keepRows)
		})
		if err != nil {
			t.Fatal(err)
		}
		return ss, keep, ok
	}
	if ss, keep, ok := choose(4000, 4000); !ok || len(ss) != 1 || !keep {
		t.Errorf("everything fits: %d strips, keep %v, ok %v", len(ss), keep, ok)
	}
	if ss, keep, ok := choose(1200, 1<<30); !ok || !keep || rows(ss) > 1200 || len(ss) < 4 {
		t.Errorf("1200 rows: %d strips of %d rows, keep %v", len(ss), rows(ss), keep)
	}
	if ss, keep, ok := choose(1200, 4500); !ok || keep || rows(ss) > 1200 {
		t.Errorf("1200 rows, no room to keep: %d strips, keep %v", len(ss), keep)
	}
	if _, _, ok := choose(100, 1<<30); ok {
		t.Error("a 100-row limit cannot hold a 16-row band and two 64-row halos")
	}
	ss, keep, ok, err := Choose(4000, spec, 256, func([]Strip, bool) bool { return false })
	if err != nil || !ok || keep || len(ss) != 16 {
		t.Errorf("forced 256-row bands: %d strips, keep %v, ok %v, %v", len(ss), keep, ok, err)
	}
}
