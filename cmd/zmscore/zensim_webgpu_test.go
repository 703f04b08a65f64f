package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// TestZensimWebGPU: `zmscore --backend webgpu --metric zensim` on the real
// runtime (lavapipe in CI, where its absence is a failure) scores the
// reference itself exactly 100 and the distorted images within 1e-3 of
// `--backend cpu` (the GPU tolerance; gpu/webgpu/zensim's tests
// measure ~1e-5), each JSON line naming the WebGPU backend.
func TestZensimWebGPU(t *testing.T) {
	if os.Getenv(wgpu.EnvLibrary) == "" {
		if p, err := filepath.Abs("../../.tools/libwebgpu_wrapper.so"); err == nil {
			if _, err := os.Stat(p); err == nil {
				t.Setenv(wgpu.EnvLibrary, p)
			}
		}
	}
	b, err := openWebGPU(true)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no WebGPU runtime in CI: %v", err)
		}
		t.Skipf("no WebGPU runtime: %v", err)
	}
	b.Close()
	ref := tiny(t, "camera__ref.png")
	args := []string{ref, ref, tiny(t, "camera__jxl_d1.png"), tiny(t, "camera__jpeg_q20.png")}
	scores := func(backend string) []result {
		var out, errb bytes.Buffer
		if code := run(append([]string{"--json", "--backend", backend, "--metric", "zensim"}, args...), &out, &errb); code != 0 {
			t.Fatalf("--backend %s: exit %d: %s", backend, code, errb.String())
		}
		var rs []result
		dec := json.NewDecoder(&out)
		for dec.More() {
			var r result
			if err := dec.Decode(&r); err != nil || r.Score == nil {
				t.Fatalf("--backend %s: %s (%v)", backend, out.String(), err)
			}
			rs = append(rs, r)
		}
		if len(rs) != len(args)-1 {
			t.Fatalf("--backend %s: %d results, want %d", backend, len(rs), len(args)-1)
		}
		return rs
	}
	gpu, cpu := scores("webgpu"), scores("cpu")
	if *gpu[0].Score != 100 {
		t.Errorf("webgpu: the reference scores %v, want exactly 100", *gpu[0].Score)
	}
	for i := range gpu {
		d := math.Abs(*gpu[i].Score - *cpu[i].Score)
		t.Logf("%s: webgpu %.8f, cpu %.8f, |Δ| %.3g", filepath.Base(gpu[i].Dist), *gpu[i].Score, *cpu[i].Score, d)
		if !(d <= 1e-3) {
			t.Errorf("%s: webgpu %.8f, cpu %.8f (|Δ| %.3g > 1e-3)", gpu[i].Dist, *gpu[i].Score, *cpu[i].Score, d)
		}
		if !strings.HasPrefix(gpu[i].Backend, "webgpu:") {
			t.Errorf("%s: backend %q", gpu[i].Dist, gpu[i].Backend)
		}
	}
}
