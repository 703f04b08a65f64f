package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPairModeCacheDir: pair mode takes --cache-dir like batch mode (it
// used to refuse it as an unknown flag, exit 2).
func TestPairModeCacheDir(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--backend", "cpu", "--cache-dir", t.TempDir(), tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb)
	if code != 0 || strings.TrimSpace(out.String()) != "87.45059317" {
		t.Fatalf("exit %d, out %q, err %q", code, out.String(), errb.String())
	}
}
