package butteraugli

import "testing"

// The halo Butteraugli derives, pinned: a change in a kernel must show up
// here.
func TestButteraugliStripHalo(t *testing.T) {
	if s := bfStripSpec(); s.Halo != 84 || s.Align != 2 {
		t.Errorf("butteraugli spec %+v, want halo 84 align 2", s)
	}
}
