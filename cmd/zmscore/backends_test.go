package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// unsupportedGPU stands in for a GPU backend that lacks every metric.
type unsupportedGPU struct{ closed bool }

func (u *unsupportedGPU) Name() string { return "webgpu:fake" }
func (u *unsupportedGPU) Estimate(zenmetrics.Metric, int, int, zenmetrics.Mode) (int64, bool) {
	return 0, false
}
func (u *unsupportedGPU) Prepare(context.Context, zenmetrics.Metric, *zenmetrics.Image, zenmetrics.Options) (zenmetrics.Reference, error) {
	return nil, fmt.Errorf("%w: not on this fake", zenmetrics.ErrUnsupported)
}
func (u *unsupportedGPU) Close() error { u.closed = true; return nil }

func TestAutoFallsBackToCPU(t *testing.T) {
	defer func(f func(bool) (zenmetrics.Backend, error)) { openWebGPU = f }(openWebGPU)

	// No runtime at all: auto is the CPU, without complaint.
	openWebGPU = func(bool) (zenmetrics.Backend, error) { return nil, errors.New("no library") }
	var out, errb bytes.Buffer
	if code := run([]string{"--json", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Backend != "cpu" || r.Adapter != "" {
		t.Fatalf("no runtime: %s (%v)", out.String(), err)
	}

	// A GPU that lacks the metric: the reference goes to the CPU and the
	// output names the CPU, not the GPU that was asked first.
	g := &unsupportedGPU{}
	openWebGPU = func(allowCPU bool) (zenmetrics.Backend, error) {
		if allowCPU {
			t.Error("auto must not accept software adapters")
		}
		return g, nil
	}
	out.Reset()
	if code := run([]string{"--json", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	r = result{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Backend != "cpu" || r.Score == nil || math.Abs(*r.Score-87.45059317) > 0.01 {
		t.Fatalf("fallback: %s (%v)", out.String(), err)
	}
	if !g.closed {
		t.Error("the GPU backend was not closed")
	}
}

func TestWebGPUUnavailableExplains(t *testing.T) {
	defer func(f func(bool) (zenmetrics.Backend, error)) { openWebGPU = f }(openWebGPU)
	openWebGPU = func(bool) (zenmetrics.Backend, error) {
		return nil, fmt.Errorf("%w: tried /x/libwebgpu_wrapper.so", zenmetrics.ErrUnsupported)
	}
	var out, errb bytes.Buffer
	code := run([]string{"--backend", "gpu", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "not available") || !strings.Contains(errb.String(), "/x/libwebgpu_wrapper.so") ||
		!strings.Contains(errb.String(), "--backend cpu") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestWebGPUBackendReal runs --backend webgpu on the real runtime (lavapipe
// in CI, where its absence is a failure) and compares with libjxl's scores.
func TestWebGPUBackendReal(t *testing.T) {
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
	for _, tc := range []struct {
		metric, dist string
		want, tol    float64
	}{
		// libjxl v0.12.0 (testdata/tiny/scores.tsv); GPU parity targets are
		// 0.02 absolute (ssim2) and 1e-3 relative (butteraugli).
		{"ssim2", "coffee_crop256__webp_q75.png", 73.64331027, 0.02},
		{"butteraugli", "coffee_crop256__webp_q75.png", 2.9443740845, 2.9443740845e-3},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"--json", "--backend", "webgpu", "--metric", tc.metric, tiny(t, "coffee_crop256__ref.png"), tiny(t, tc.dist)}, &out, &errb)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.metric, code, errb.String())
		}
		var r result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Score == nil {
			t.Fatalf("%s: %s (%v)", tc.metric, out.String(), err)
		}
		if !strings.HasPrefix(r.Backend, "webgpu:") || r.Adapter == "" {
			t.Errorf("%s: backend %q adapter %q", tc.metric, r.Backend, r.Adapter)
		}
		if d := math.Abs(*r.Score - tc.want); d > tc.tol {
			t.Errorf("%s: %s vs libjxl %v", tc.metric, strconv.FormatFloat(*r.Score, 'f', 8, 64), tc.want)
		}
	}
}

// TestWebGPUMissingRuntime runs zmscore with no WebGPU runtime to be
// found: a copy of this test binary in an empty directory (nothing next to
// the executable), run there with a clean environment (no loader paths)
// and ZENMETRICS_WEBGPU_LIB naming a file that does not exist, which is
// then the only candidate. In-process it could not be hidden once another
// test had loaded Dawn (wgpu.Load is once per process), so it skipped in
// every full run. The child checks: --backend webgpu fails (exit 1) saying
// what it tried and how to install; auto scores on the CPU with a warning
// naming the broken library; auto without the variable scores quietly.
func TestWebGPUMissingRuntime(t *testing.T) {
	if os.Getenv("ZM_MISSING_CHILD") == "1" {
		missingRuntimeChild(t)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("the child runs a copied test binary; not set up for Windows")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	child := filepath.Join(dir, "zmscore.test")
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, wgpu.EnvLibrary+"=") || strings.HasPrefix(kv, "LD_LIBRARY_PATH=") || strings.HasPrefix(kv, "DYLD_") {
			continue
		}
		env = append(env, kv)
	}
	cmd := exec.Command(child, "-test.run", "^TestWebGPUMissingRuntime$", "-test.v")
	cmd.Env = append(env, "ZM_MISSING_CHILD=1", "ZM_MISSING_LIB="+filepath.Join(dir, "no-such-libwebgpu.so"))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = wd // the package directory: testdata paths resolve as here
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWebGPUMissingRuntime") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func missingRuntimeChild(t *testing.T) {
	missing := os.Getenv("ZM_MISSING_LIB")
	t.Setenv(wgpu.EnvLibrary, missing)
	if _, err := openWebGPU(true); err == nil {
		t.Fatalf("a WebGPU backend opened with %s=%s", wgpu.EnvLibrary, missing)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--backend", "webgpu", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "no-such-libwebgpu.so") || !strings.Contains(errb.String(), "npm pack") {
		t.Fatalf("--backend webgpu: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb); code != 0 || strings.TrimSpace(out.String()) != "87.45059317" ||
		!strings.Contains(errb.String(), "warning") || !strings.Contains(errb.String(), missing) {
		t.Fatalf("auto with a broken %s: exit %d out %q err %q", wgpu.EnvLibrary, code, out.String(), errb.String())
	}
	// Without the variable nothing is named: quiet, whatever the search
	// finds (auto refuses software adapters, so it is the CPU here unless
	// the machine has a real GPU and a system-wide Dawn).
	t.Setenv(wgpu.EnvLibrary, "")
	out.Reset()
	errb.Reset()
	if code := run([]string{tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb); code != 0 || strings.TrimSpace(out.String()) != "87.45059317" ||
		strings.Contains(errb.String(), "warning") {
		t.Fatalf("auto without a runtime: exit %d out %q err %q", code, out.String(), errb.String())
	}
}
