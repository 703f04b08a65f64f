package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// --backend cuda without a CUDA driver is an error that keeps the
// driver's own (every library tried) and says what to use instead; it
// never falls back silently.
func TestBackendCUDAMissing(t *testing.T) {
	defer func(f func() (zenmetrics.Backend, error)) { openCUDA = f }(openCUDA)
	openCUDA = func() (zenmetrics.Backend, error) {
		return nil, errors.Join(zenmetrics.ErrUnsupported, errors.New("libcuda.so.1: not found"))
	}
	b, err := openBackend("CUDA", 1)
	if err == nil || b != nil {
		t.Fatalf("got %v, %v", b, err)
	}
	if !errors.Is(err, zenmetrics.ErrUnsupported) || !strings.Contains(err.Error(), "libcuda.so.1") ||
		!strings.Contains(err.Error(), "--backend cpu") {
		t.Errorf("error %q", err)
	}
	found := false
	for _, bi := range backendList {
		found = found || bi.name == "cuda"
	}
	if !found {
		t.Error("--help does not list cuda")
	}
}
