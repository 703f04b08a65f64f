package main

import (
	"bytes"
	"strings"
	"testing"
)

// An unknown --balance is a usage error (exit 2) naming the choices,
// before anything is opened.
func TestServeRefusesUnknownBalance(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runServe([]string{"--balance", "fastest"}, strings.NewReader(""), &out, &errOut, nil)
	if code != 2 || !strings.Contains(errOut.String(), "--balance") || !strings.Contains(errOut.String(), "least-loaded") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}
