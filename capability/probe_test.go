package capability

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// useRepoLib points the loader at the repository's .tools/ Dawn library
// (git-ignored) unless the environment already names one.
func useRepoLib(t *testing.T) {
	if os.Getenv(wgpu.EnvLibrary) != "" {
		return
	}
	if p, err := filepath.Abs("../.tools/libwebgpu_wrapper.so"); err == nil {
		if _, err := os.Stat(p); err == nil {
			t.Setenv(wgpu.EnvLibrary, p)
		}
	}
}

func TestProbeCPU(t *testing.T) {
	r, err := Probe(context.Background(), ProbeOptions{SkipGPU: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.CPU.LogicalCores != runtime.NumCPU() || r.CPU.Brand == "" {
		t.Fatalf("cpu: %+v", r.CPU)
	}
	if runtime.GOOS == "linux" && r.CPU.RAMMiB < 64 {
		t.Fatalf("RAM %d MiB", r.CPU.RAMMiB)
	}
	if runtime.GOARCH == "amd64" && (len(r.CPU.Features) == 0 || r.CPU.Features[0] != "SSE2") {
		t.Fatalf("amd64 features %v", r.CPU.Features)
	}
	t.Logf("%+v", r.CPU)
}

func TestProbeGPU(t *testing.T) {
	useRepoLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Probe(ctx, ProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GPUs) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no GPU adapter probed; problems: %v", r.Problems)
		}
		if len(r.Problems) == 0 {
			t.Fatal("no GPUs and no problem recorded")
		}
		t.Skipf("no WebGPU runtime: %v", r.Problems)
	}
	if r.Runtime == nil || r.Runtime.Library != wgpu.LibraryPath() || r.Runtime.ABI == "" {
		t.Fatalf("runtime not reported: %+v (loaded %q)", r.Runtime, wgpu.LibraryPath())
	}
	t.Logf("runtime: %+v", *r.Runtime)
	for _, g := range r.GPUs {
		if g.Backend == "Null" || g.Name == "" || g.InitMs <= 0 || len(g.Limits) < 30 || g.Limits["maxBufferSize"] == 0 {
			t.Fatalf("bad GPU info: %+v", g)
		}
		for _, f := range []string{"f32_atomics", "f16", "subgroups", "timestamp_query"} {
			s, ok := g.Verified[f]
			if !ok || s.How == "" || g.Features[f] == "" {
				t.Fatalf("%s: feature %s not probed: %+v", g.Name, f, s)
			}
		}
		// f32 atomics never exist in WGSL; the CAS emulation must be exact.
		if s := g.Verified["f32_atomics"]; s.Supported || !strings.Contains(s.How, "verified exact") || g.Features["f32_atomics"] != "emulated-cas" {
			t.Fatalf("f32 atomics: %+v", s)
		}
		if g.AdapterType == "CPU" { // lavapipe offers and runs all three
			for _, f := range []string{"f16", "subgroups", "timestamp_query"} {
				if !g.Verified[f].Supported {
					t.Errorf("lavapipe %s: %+v", f, g.Verified[f])
				}
			}
			if g.Verified["subgroups"].Value == "" {
				t.Error("subgroup size not measured")
			}
		}
		t.Logf("%s (%s/%s): init %.1f ms, features %v", g.Name, g.Backend, g.AdapterType, g.InitMs, g.Features)
	}
}
