package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/all"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/orchestrator"
)

// backendInfo describes one --backend value for the usage text.
type backendInfo struct {
	name, desc string
}

// backendList is what --help prints. Keep it in step with openBackend.
var backendList = []backendInfo{
	{"auto", "a hardware GPU through WebGPU when one is found, else the CPU;\n" +
		"           a metric the GPU lacks, or a reference too big for it, goes to the CPU"},
	{"cpu", "CPU reference implementation (pure Go)"},
	{"webgpu", "WebGPU (alias gpu), any real adapter including a CPU Vulkan\n" +
		"           driver (lavapipe); an error saying what was tried when none is found"},
	{"cuda", "CUDA device 0 through the NVIDIA driver and NVRTC (every metric, whole\n" +
		"           images and, for SSIMULACRA2, Butteraugli and DSSIM, strips); an error naming every library tried when absent"},
}

// usageError marks errors that are the user's to fix on the command line
// (exit status 2), as opposed to a backend that fails to start (1).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// openWebGPU opens the WebGPU backend. It is a variable so tests can run
// without a GPU runtime.
var openWebGPU = func(allowCPUAdapter bool) (zenmetrics.Backend, error) {
	return webgpu.NewBackend(context.Background(), &webgpu.Options{AllowCPUAdapter: allowCPUAdapter, Label: "zmscore"})
}

// hasCUDA reports whether the NVIDIA driver loads and sees a device (and
// $ZENMETRICS_CUDA is not "off"): a batch on --backend auto then runs on
// the orchestrator, which routes between CUDA, WebGPU and the CPU.
// A variable so tests can run without one.
var hasCUDA = func() bool {
	if os.Getenv(orchestrator.EnvCUDA) == "off" {
		return false
	}
	n, err := cuda.DeviceCount()
	return err == nil && n > 0
}

// openCUDA opens CUDA device 0. A variable so tests can run without one.
var openCUDA = func() (zenmetrics.Backend, error) { return cuda.NewBackend(0) }

// warnings is where openBackend reports what it overcame (the run's
// stderr; set by runContext).
var warnings io.Writer = os.Stderr

// openBackend opens the backend named on the command line. threads is
// --threads (0: all cores). An unknown name is a *usageError.
//
// "auto" prefers a hardware GPU but not a software Vulkan adapter: lavapipe
// computes the same scores as the CPU reference, no faster. When no GPU
// runtime or adapter is found it is the CPU, silently: that is the normal
// case on a machine without a GPU, not an error, unless
// $ZENMETRICS_WEBGPU_LIB names a library that fails to load: then it is
// still the CPU, with a warning on stderr.
func openBackend(name string, threads int) (zenmetrics.Backend, error) {
	c := cpu.New(cpu.Config{Threads: threads})
	switch strings.ToLower(name) {
	case "auto":
		g, err := openWebGPU(false)
		if err != nil {
			if wgpu.ExplicitLoadFailed(err) {
				// Named by the user, so not the quiet "no GPU here" case.
				fmt.Fprintf(warnings, "zmscore: warning: scoring on the CPU: %v\n", err)
			}
			return c, nil
		}
		return &autoBackend{gpu: g, cpu: c}, nil
	case "cpu":
		return c, nil
	case "webgpu", "gpu":
		g, err := openWebGPU(true)
		if err != nil {
			// The error lists every library path tried and how to install
			// one (gpu/wgpu.LoadError), or the adapters refused and why.
			return nil, fmt.Errorf("the %s backend is not available: %w\n"+
				"(score on the CPU with --backend cpu; see README.md for installing a WebGPU runtime)", name, err)
		}
		return &gpuLadder{g}, nil
	case "cuda":
		g, err := openCUDA()
		if err != nil {
			// A *cuda.LoadError lists every library path tried.
			return nil, fmt.Errorf("the cuda backend is not available: %w\n"+
				"(score on the CPU with --backend cpu, or through WebGPU with --backend webgpu)", err)
		}
		return g, nil
	}
	names := make([]string, len(backendList))
	for i, b := range backendList {
		names[i] = b.name
	}
	return nil, &usageError{fmt.Sprintf("unknown backend %q (known: %s)", name, strings.Join(names, ", "))}
}

// autoBackend scores on the GPU and falls back to the CPU per reference:
// when the GPU does not implement the metric (ErrUnsupported) or the
// reference does not fit its memory (ErrOutOfMemory). A one-shot CLI does
// not need the orchestrator's profile and ladder for that; batch runs and
// library users get the full ladder from the orchestrator.
type autoBackend struct {
	gpu, cpu zenmetrics.Backend
}

func (a *autoBackend) Name() string { return a.gpu.Name() }

func (a *autoBackend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if n, ok := a.gpu.Estimate(m, w, h, mode); ok {
		return n, true
	}
	return a.cpu.Estimate(m, w, h, mode)
}

func (a *autoBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	r, err := a.gpu.Prepare(ctx, m, ref, opt)
	if err == nil {
		return &namedRef{Reference: r, backend: a.gpu.Name()}, nil
	}
	if !errors.Is(err, zenmetrics.ErrUnsupported) && !errors.Is(err, zenmetrics.ErrOutOfMemory) {
		return nil, err
	}
	r, err = a.cpu.Prepare(ctx, m, ref, opt)
	if err != nil {
		return nil, err
	}
	return &namedRef{Reference: r, backend: a.cpu.Name()}, nil
}

func (a *autoBackend) Close() error { return errors.Join(a.gpu.Close(), a.cpu.Close()) }

// UploadStats forwards the GPU backend's upload counters, so that a batch
// on the auto backend shows the upload as its own stage (batch.UploadMeter);
// the CPU fallback uploads nothing.
func (a *autoBackend) UploadStats() webgpu.UploadStats {
	if m, ok := a.gpu.(interface{ UploadStats() webgpu.UploadStats }); ok {
		return m.UploadStats()
	}
	return webgpu.UploadStats{}
}

// namedRef remembers which backend prepared a reference, so the output
// names the backend that really scored.
type namedRef struct {
	zenmetrics.Reference
	backend string
}

func (n *namedRef) BackendName() string { return n.backend }

// backendOf is the name to report for scores from r prepared on b.
func backendOf(b zenmetrics.Backend, r zenmetrics.Reference) string {
	if n, ok := r.(interface{ BackendName() string }); ok {
		return n.BackendName()
	}
	return b.Name()
}

// adapterOf is the GPU adapter's name when the scores come from WebGPU.
func adapterOf(b zenmetrics.Backend, backend string) string {
	if a, ok := b.(*autoBackend); ok {
		b = a.gpu
	}
	if l, ok := b.(*gpuLadder); ok {
		b = l.Backend
	}
	if g, ok := b.(*webgpu.Backend); ok && backend == g.Name() {
		return g.Info().Adapter
	}
	return ""
}
