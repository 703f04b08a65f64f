package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// stripOnlyGPU stands for a GPU whose storage-binding limit is below a
// whole plane of the image: ModeFull is out of memory, ModeStrip works
// (unless noStrips), ModeStripPair does not exist. It records the modes
// Prepare was asked for.
type stripOnlyGPU struct {
	noStrips bool
	mu       sync.Mutex
	modes    []zenmetrics.Mode
}

func (g *stripOnlyGPU) Name() string { return "webgpu:fake" }
func (g *stripOnlyGPU) Estimate(_ zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	return int64(w * h * 40), mode == zenmetrics.ModeStrip && !g.noStrips
}
func (g *stripOnlyGPU) Prepare(_ context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, o zenmetrics.Options) (zenmetrics.Reference, error) {
	g.mu.Lock()
	g.modes = append(g.modes, o.Mode)
	g.mu.Unlock()
	switch {
	case o.Mode == zenmetrics.ModeStripPair:
		return nil, fmt.Errorf("%w: mode %v", zenmetrics.ErrUnsupported, o.Mode)
	case o.Mode == zenmetrics.ModeFull || g.noStrips:
		return nil, &zenmetrics.OutOfMemoryError{Backend: g.Name(), Requested: int64(ref.Width * ref.Height * 40), Free: -1,
			Detail: "a plane exceeds maxStorageBufferBindingSize"}
	}
	return stripRef{}, nil
}
func (g *stripOnlyGPU) Close() error { return nil }

type stripRef struct{}

func (stripRef) Score(context.Context, *zenmetrics.Image) (zenmetrics.Score, error) {
	return zenmetrics.Score{Value: 42}, nil
}
func (stripRef) Release() {}

// TestForcedWebGPUWalksGPURungs: --backend webgpu scores in strips when
// the whole image does not fit, and when no GPU rung fits it fails (exit
// 1, naming the rungs tried) rather than scoring on the CPU.
func TestForcedWebGPUWalksGPURungs(t *testing.T) {
	defer func(f func(bool) (zenmetrics.Backend, error)) { openWebGPU = f }(openWebGPU)
	g := &stripOnlyGPU{}
	openWebGPU = func(bool) (zenmetrics.Backend, error) { return g, nil }
	var out, errb bytes.Buffer
	code := run([]string{"--json", "--backend", "webgpu", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb)
	var r result
	if code != 0 || json.Unmarshal(out.Bytes(), &r) != nil || r.Score == nil || *r.Score != 42 || r.Backend != "webgpu:fake" {
		t.Fatalf("exit %d, out %s, err %s", code, out.String(), errb.String())
	}
	if len(g.modes) != 2 || g.modes[0] != zenmetrics.ModeFull || g.modes[1] != zenmetrics.ModeStrip {
		t.Fatalf("modes tried %v, want [full strip]", g.modes)
	}

	g = &stripOnlyGPU{noStrips: true}
	out.Reset()
	errb.Reset()
	code = run([]string{"--backend", "webgpu", tiny(t, "camera__ref.png"), tiny(t, "camera__jxl_d1.png")}, &out, &errb)
	if code != 1 || strings.TrimSpace(out.String()) != "nan" || !strings.Contains(errb.String(), "GPU rungs tried: gpu_full, gpu_strip") ||
		!strings.Contains(errb.String(), "out of memory") {
		t.Fatalf("no GPU rung fits: exit %d, out %q, err %q", code, out.String(), errb.String())
	}

	// The ladder's view of the same backend: Estimate finds the strip rung.
	l := &gpuLadder{&stripOnlyGPU{}}
	if _, ok := l.Estimate(zenmetrics.SSIMULACRA2, 8000, 8000, zenmetrics.ModeFull); !ok {
		t.Fatal("Estimate: no GPU rung found")
	}
	if _, err := l.Prepare(context.Background(), zenmetrics.SSIMULACRA2, &zenmetrics.Image{Width: 8, Height: 8}, zenmetrics.Options{Mode: zenmetrics.ModeFull}); err != nil {
		t.Fatal(err)
	}
	var oom *zenmetrics.OutOfMemoryError
	_, err := (&gpuLadder{&stripOnlyGPU{noStrips: true}}).Prepare(context.Background(), zenmetrics.SSIMULACRA2, &zenmetrics.Image{Width: 8, Height: 8}, zenmetrics.Options{})
	if !errors.As(err, &oom) || !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		t.Fatalf("all rungs out of memory: %v", err)
	}
}

// TestForcedWebGPUStripsReal: on the real runtime (lavapipe in CI), a VRAM
// budget below the whole image's estimate makes the full rung refuse, as
// a binding limit below a 64 MP plane does; --backend webgpu then scores
// in strips and still matches libjxl (parity targets as in
// TestWebGPUBackendReal: 0.02 absolute for SSIMULACRA2).
func TestForcedWebGPUStripsReal(t *testing.T) {
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
	full, ok := b.Estimate(zenmetrics.SSIMULACRA2, 256, 256, zenmetrics.ModeFull)
	b.Close()
	if !ok {
		t.Fatalf("256² does not fit whole on this adapter (%d bytes)", full)
	}
	// A budget just under the whole image's estimate, in whole MiB: the
	// full rung refuses, strips of fewer rows fit.
	mib := (full - 1) >> 20
	if mib < 1 {
		t.Fatalf("whole-image estimate %d bytes: too small to force strips with a MiB budget", full)
	}
	t.Logf("whole image %.1f MiB, budget %d MiB", float64(full)/(1<<20), mib)
	t.Setenv(webgpu.EnvVRAMBudget, fmt.Sprint(mib))
	var out, errb bytes.Buffer
	code := run([]string{"--json", "--backend", "webgpu", "--metric", "ssim2", tiny(t, "coffee_crop256__ref.png"), tiny(t, "coffee_crop256__webp_q75.png")}, &out, &errb)
	var r result
	if code != 0 || json.Unmarshal(out.Bytes(), &r) != nil || r.Score == nil {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if d := math.Abs(*r.Score - 73.64331027); d > 0.02 {
		t.Errorf("strips: %.8f vs libjxl 73.64331027", *r.Score)
	}
}
