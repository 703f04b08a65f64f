package batch

import (
	"slices"
	"testing"
)

// TestParseGPUList: --gpus takes "none" (an empty, non-nil list: CPU
// only), or distinct non-negative indices; anything else is refused with a
// message, never silently read as "all GPUs".
func TestParseGPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "1,0": {1, 0}, " 0 , 1 ": {0, 1}, "none": {}, "NONE": {}} {
		got, err := parseGPUList(in)
		if err != nil || got == nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "-1", "0,0", "0,", "1.5", "all"} {
		if got, err := parseGPUList(in); err == nil {
			t.Errorf("%q: accepted as %v", in, got)
		}
	}
}
