package main

import (
	"strings"
	"testing"
)

// TestMaxPixels (issue #21): a bench size above --max-pixels (default
// 2^30, as zmscore's) is a usage error before anything is allocated; a
// smaller limit applies to --sizes too.
func TestMaxPixels(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sizes", "40000"}, "size 40000 (1600000000 pixels) exceeds --max-pixels 1073741824"},
		{[]string{"--sizes", "64,1024", "--max-pixels", "100000"}, "size 1024 (1048576 pixels) exceeds --max-pixels 100000"},
	} {
		code, _, stderr := runArgs(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}
