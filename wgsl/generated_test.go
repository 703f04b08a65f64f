package wgsl

import (
	"flag"
	"os"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/wgsl/internal/gen"
)

var update = flag.Bool("update", false, "rewrite the generated shaders")

// TestGenerated checks that each generated shader in this directory is
// what wgsl/internal/gen writes today, so the embedded kernel never
// drifts from its generator. With -update it rewrites them.
func TestGenerated(t *testing.T) {
	for name, src := range map[string]string{
		"ssim2_vmaps.wgsl":  gen.SSIM2VMaps(),
		"ssim2_vstate.wgsl": gen.SSIM2VState(),
	} {
		if *update {
			if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(have) != src {
			t.Errorf("%s is not the generator's output: run go test ./wgsl -run Generated -update", name)
		}
	}
}
