package capability

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

// A runtime's class is its prefix and the layout: WebGPU keeps the names
// existing profiles use, CUDA gets its own, strips included for later.
func TestRuntimeClass(t *testing.T) {
	for _, c := range []struct {
		r    Runtime
		mode zenmetrics.Mode
		want string
	}{
		{RuntimeWebGPU, zenmetrics.ModeFull, ClassGPUFull},
		{RuntimeWebGPU, zenmetrics.ModeStrip, ClassGPUStrip},
		{RuntimeWebGPU, zenmetrics.ModeStripPair, ClassGPUStripPair},
		{RuntimeCUDA, zenmetrics.ModeFull, ClassCUDAFull},
		{RuntimeCUDA, zenmetrics.ModeStrip, "cuda_strip"},
	} {
		if got := c.r.Class(c.mode); got != c.want {
			t.Errorf("%s in %s: %q, want %q", c.r, c.mode, got, c.want)
		}
	}
}

// CUDA cells survive the file round trip next to WebGPU's, and Classes
// lists what a metric has: layouts in ladder order, runtimes side by
// side, an unknown class (a newer build's) last, OOM-only classes too.
func TestCUDACellsRoundTripAndClasses(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := NewProfile(testReport(), now)
	p.LastValidated = now
	m := zenmetrics.SSIMULACRA2
	p.SetSample(m, ClassCPU, Sample{Pixels: 1 << 20, NsPerPx: 500})
	p.SetSample(m, ClassGPUStrip, Sample{Pixels: 1 << 20, NsPerPx: 5})
	p.SetSample(m, ClassCUDAFull, Sample{Pixels: 1 << 20, NsPerPx: 2.5, VRAMMiB: 80})
	p.SetSample(m, ClassGPUFull, Sample{Pixels: 1 << 20, NsPerPx: 4, VRAMMiB: 96})
	p.SetSample(m, "metal_full", Sample{Pixels: 1 << 20, NsPerPx: 3})
	p.RecordOOM(m, Cell{RuntimeCUDA.Class(zenmetrics.ModeStrip), 1 << 24})
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Samples(m, ClassCUDAFull); len(s) != 1 || s[0].NsPerPx != 2.5 || s[0].VRAMMiB != 80 {
		t.Fatalf("cuda_full after the round trip: %+v\n%s", s, data)
	}
	want := []string{ClassGPUFull, ClassCUDAFull, ClassGPUStrip, "cuda_strip", ClassCPU, "metal_full"}
	if got := q.Classes(m); !slices.Equal(got, want) {
		t.Fatalf("Classes = %v, want %v", got, want)
	}
	if got := q.Classes(zenmetrics.DSSIM); got != nil {
		t.Fatalf("Classes of an unmeasured metric = %v", got)
	}
}

// A profile written before CUDA cells existed (WebGPU and CPU classes
// only) loads as it did: same schema, no CUDA class, nothing invented.
func TestProfileWithoutCUDACellsLoads(t *testing.T) {
	const file = `schema_version = 1
machine_hash = "%s"
detected_at = 2026-01-01T00:00:00Z
last_validated = 2026-01-01T00:00:00Z
[cpu]
brand = "Test CPU 9000"
logical_cores = 2
features = ["AVX2", "FMA3"]
ram_mib = 4096
[[gpu]]
name = "Test GPU"
driver = "1.2.3"
runtime = "dawn/vulkan"
vram_mib = 8192
[metrics.ssim2]
last_measured = 2026-01-01T00:00:00Z
cells_failed_oom = [["gpu_full", 67108864]]
[metrics.ssim2.ns_per_px_at]
1048576 = { gpu_full = 4.68, gpu_strip = 4.05, cpu = 589.0 }
[metrics.ssim2.vram_mib_at]
1048576 = { gpu_full = 71.0 }
`
	data := strings.Replace(file, "%s", ReportHash(testReport()), 1)
	p, err := Unmarshal([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Staleness(testReport(), time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), 0); r != "" {
		t.Fatalf("old profile is stale: %s", r)
	}
	m := zenmetrics.SSIMULACRA2
	// Written before spreads were kept too: every spread is unknown.
	if s := p.Samples(m, ClassGPUFull); len(s) != 1 || s[0].NsPerPx != 4.68 || s[0].VRAMMiB != 71 || s[0].Spread != 0 {
		t.Fatalf("gpu_full: %+v", s)
	}
	if s := p.Samples(m, ClassCUDAFull); len(s) != 0 {
		t.Fatalf("cuda_full from a file without it: %+v", s)
	}
	if got, want := p.Classes(m), []string{ClassGPUFull, ClassGPUStrip, ClassCPU}; !slices.Equal(got, want) {
		t.Fatalf("Classes = %v, want %v", got, want)
	}
}

// lanes: a shared backend or a shared Lane puts targets in one lane (and
// a target sharing with two lanes merges them), anything else runs side
// by side; lanes and the targets in them keep their order.
func TestLanes(t *testing.T) {
	webgpu := &fakeBackend{name: "webgpu"}
	cuda := &fakeBackend{name: "cuda"}
	cpu := &fakeBackend{name: "cpu"}
	other := &fakeBackend{name: "other gpu"}
	for _, c := range []struct {
		name string
		ts   []BenchTarget
		want [][]int
	}{
		{"by backend", []BenchTarget{{Backend: webgpu}, {Backend: cpu}, {Backend: webgpu}}, [][]int{{0, 2}, {1}}},
		{"two runtimes of one GPU", []BenchTarget{
			{Backend: webgpu, Lane: "gpu"}, {Backend: cuda, Lane: "gpu"}, {Backend: webgpu, Lane: "gpu"}, {Backend: cpu},
		}, [][]int{{0, 1, 2}, {3}}},
		{"no lane: side by side", []BenchTarget{{Backend: webgpu}, {Backend: cuda}, {Backend: cpu}}, [][]int{{0}, {1}, {2}}},
		{"other lane", []BenchTarget{{Backend: webgpu, Lane: "gpu0"}, {Backend: other, Lane: "gpu1"}, {Backend: cuda, Lane: "gpu0"}},
			[][]int{{0, 2}, {1}}},
		{"merge", []BenchTarget{
			{Backend: webgpu}, {Backend: cuda}, {Backend: cpu}, {Backend: cuda, Lane: "x"}, {Backend: webgpu, Lane: "x"},
		}, [][]int{{0, 1, 3, 4}, {2}}},
	} {
		if got := lanes(c.ts); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%s: lanes %v, want %v", c.name, got, c.want)
		}
	}
}

// overlapBackend's Score holds on for a while (or until a peer's Score
// overlaps it) and records the most Scores of the group running at once.
type overlapBackend struct {
	fakeBackend
	running, peak *atomic.Int64
	prepared      atomic.Int64
}

// Prepare's first reference is the GPU lane's priming task (primeGPU),
// which runs beside the other targets' on purpose (untimed: it only
// compiles kernels), so only later references count.
func (o *overlapBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	return overlapRef{o, o.prepared.Add(1) > 1}, nil
}

type overlapRef struct {
	o     *overlapBackend
	timed bool
}

func (r overlapRef) Score(ctx context.Context, d *zenmetrics.Image) (zenmetrics.Score, error) {
	if !r.timed {
		return zenmetrics.Score{Value: 1}, nil
	}
	n := r.o.running.Add(1)
	defer r.o.running.Add(-1)
	for t0 := time.Now(); time.Since(t0) < 300*time.Millisecond; time.Sleep(time.Millisecond) {
		n = max(n, r.o.running.Load())
		if n > 1 {
			break
		}
	}
	for {
		p := r.o.peak.Load()
		if n <= p || r.o.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return zenmetrics.Score{Value: 1}, nil
}
func (r overlapRef) Release() {}

// Two backends in one Lane never run cells at the same time (they would
// time each other's work); without the Lane they do (the check can fail).
func TestBenchSharedLaneTakesTurns(t *testing.T) {
	for _, lane := range []string{"gpu", ""} {
		var running, peak atomic.Int64
		a := &overlapBackend{fakeBackend: fakeBackend{name: "webgpu"}, running: &running, peak: &peak}
		b := &overlapBackend{fakeBackend: fakeBackend{name: "cuda"}, running: &running, peak: &peak}
		p := NewProfile(testReport(), time.Now())
		rep, err := Bench(context.Background(), BenchConfig{
			Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
			Sides:   []int{32},
			Runs:    1,
			Targets: []BenchTarget{
				{Class: ClassGPUFull, Backend: a, Lane: lane, RecordVRAM: true},
				{Class: ClassCUDAFull, Backend: b, Lane: lane, RecordVRAM: true},
			},
		}, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 2 || rep.Results[1].Class != ClassCUDAFull || rep.Results[1].NsPerPx <= 0 {
			t.Fatalf("lane %q: results %+v", lane, rep.Results)
		}
		if s := p.Samples(zenmetrics.SSIMULACRA2, ClassCUDAFull); len(s) != 1 || s[0].VRAMMiB <= 0 {
			t.Fatalf("lane %q: cuda_full samples %+v", lane, s)
		}
		want := int64(1)
		if lane == "" {
			want = 2
		}
		if got := peak.Load(); got != want {
			t.Errorf("lane %q: %d scores at once, want %d", lane, got, want)
		}
	}
}

// primeBackend's first prepares (the priming tasks, one per metric) wait
// for each other: they meet only if primeGPU runs them side by side.
type primeBackend struct {
	fakeBackend
	n, running, peak atomic.Int64
}

func (o *primeBackend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if o.n.Add(1) > 2 {
		return o.fakeBackend.Prepare(ctx, m, ref, opt)
	}
	n := o.running.Add(1)
	defer o.running.Add(-1)
	for t0 := time.Now(); n < 2 && time.Since(t0) < 2*time.Second; time.Sleep(time.Millisecond) {
		n = o.running.Load()
	}
	for {
		p := o.peak.Load()
		if n <= p || o.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return o.fakeBackend.Prepare(ctx, m, ref, opt)
}

// A GPU lane's priming tasks (one per metric: kernel compiles on a cold
// cache) run side by side.
func TestBenchPrimesMetricsTogether(t *testing.T) {
	b := &primeBackend{fakeBackend: fakeBackend{name: "cuda", nsPerPx: 1}}
	p := NewProfile(testReport(), time.Now())
	if _, err := Bench(context.Background(), BenchConfig{
		Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.Butteraugli},
		Sides:   []int{32},
		Runs:    1,
		Targets: []BenchTarget{{Class: ClassCUDAFull, Backend: b}},
	}, p); err != nil {
		t.Fatal(err)
	}
	if got := b.peak.Load(); got != 2 {
		t.Errorf("priming tasks at once: %d, want 2", got)
	}
}
