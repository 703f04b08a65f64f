package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
)

// TestDiscoverGPUSubset: Config.GPUs keeps only the named adapters (by
// probe index, software adapters never), an empty list means none, and an
// index that is no hardware adapter is a typed bad-input error rather than
// a silent run on fewer GPUs than asked for. Nothing is opened: slots open
// lazily, so this runs without any GPU runtime. CUDA shows no devices here
// (TestDiscoverGPUSubsetCUDA has them): on an NVIDIA machine the real
// count would add CUDA slots that the fake report does not describe.
func TestDiscoverGPUSubset(t *testing.T) {
	defer func(c func() (int, error)) { cudaCount = c }(cudaCount)
	cudaCount = func() (int, error) { return 0, nil }
	rep := &capability.Report{GPUs: []capability.GPUInfo{
		{Name: "H200 a", AdapterType: "DiscreteGPU"},
		{Name: "H200 b", AdapterType: "DiscreteGPU"},
		{Name: "llvmpipe", AdapterType: "CPU"},
	}}
	names := func(s []backendSlot) []string {
		var n []string
		for _, x := range s {
			n = append(n, x.name)
		}
		return n
	}
	for _, c := range []struct {
		gpus []int
		want []string
	}{
		{nil, []string{"cpu", "webgpu:H200 a", "webgpu:H200 b"}},
		{[]int{1}, []string{"cpu", "webgpu:H200 b"}},
		{[]int{0, 1}, []string{"cpu", "webgpu:H200 a", "webgpu:H200 b"}},
		{[]int{}, []string{"cpu"}},
	} {
		slots, err := discoverBackends(context.Background(), Config{GPUs: c.gpus, MaxParallelCPU: 1}, rep)
		if err != nil {
			t.Fatalf("GPUs %v: %v", c.gpus, err)
		}
		if got := names(slots); !slices.Equal(got, c.want) {
			t.Errorf("GPUs %v: slots %v, want %v", c.gpus, got, c.want)
		}
	}
	for _, bad := range [][]int{{2}, {3}, {-1}, {0, 7}} {
		_, err := discoverBackends(context.Background(), Config{GPUs: bad, MaxParallelCPU: 1}, rep)
		if !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("GPUs %v: err %v, want ErrBadInput", bad, err)
		}
	}
}

// TestDiscoverGPUSubsetCUDA: the same ordinals select CUDA devices, and
// an ordinal that only CUDA has is valid (a two-GPU NVIDIA host shows one
// WebGPU adapter, the first GPU, and both GPUs through CUDA: --gpus 0
// must then leave CUDA device 1 out, and --gpus 0,1 must be accepted).
// Fake CUDA devices: nothing is opened.
func TestDiscoverGPUSubsetCUDA(t *testing.T) {
	defer func(c func() (int, error), o func(int, int) (backendSlot, error)) { cudaCount, cudaOpen = c, o }(cudaCount, cudaOpen)
	cudaCount = func() (int, error) { return 2, nil }
	cudaOpen = func(i, n int) (backendSlot, error) {
		return backendSlot{name: fmt.Sprintf("cuda:H200#%d", i), gpu: true, gpuIndex: -1}, nil
	}
	rep := &capability.Report{GPUs: []capability.GPUInfo{
		{Name: "H200", AdapterType: "DiscreteGPU"},
		{Name: "llvmpipe", AdapterType: "CPU"},
	}}
	for _, c := range []struct {
		gpus []int
		want []string
	}{
		{nil, []string{"cpu", "webgpu:H200", "cuda:H200#0", "cuda:H200#1"}},
		{[]int{0}, []string{"cpu", "webgpu:H200", "cuda:H200#0"}},
		{[]int{1}, []string{"cpu", "cuda:H200#1"}},
		{[]int{0, 1}, []string{"cpu", "webgpu:H200", "cuda:H200#0", "cuda:H200#1"}},
		{[]int{}, []string{"cpu"}},
	} {
		slots, err := discoverBackends(context.Background(), Config{GPUs: c.gpus, MaxParallelCPU: 1}, rep)
		if err != nil {
			t.Fatalf("GPUs %v: %v", c.gpus, err)
		}
		var got []string
		for _, s := range slots {
			got = append(got, s.name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("GPUs %v: slots %v, want %v", c.gpus, got, c.want)
		}
	}
	for _, bad := range [][]int{{2}, {-1}, {0, 5}} {
		_, err := discoverBackends(context.Background(), Config{GPUs: bad, MaxParallelCPU: 1}, rep)
		if !errors.Is(err, zenmetrics.ErrBadInput) {
			t.Errorf("GPUs %v: err %v, want ErrBadInput", bad, err)
		}
	}
}
