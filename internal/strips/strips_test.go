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
