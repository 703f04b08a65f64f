package orchestrator

// CUDA cells in the profile (issue #17): the bench measures the first
// CUDA slot under its own class, and the chooser reads each GPU slot's
// own class, so per metric and size the faster runtime wins. All on fake
// backends: a fake WebGPU slot and fake CUDA slots (full images only, as
// the CUDA backends are today) beside a fake CPU.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/capability"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// dual is an orchestrator over a fake CPU, a fake WebGPU slot and
// len(cudas) fake CUDA slots.
type dual struct {
	o      *Orchestrator
	dir    string
	cpu    *fakeBackend
	webgpu *fakeBackend
	cudas  []*fakeBackend
}

// newDual builds it over the profile file content (nil: none). The CUDA
// fakes decline strips, and the first declines DSSIM: a metric not ported
// yet.
func newDual(t *testing.T, nCUDA int, profile []byte) *dual {
	t.Helper()
	d := &dual{dir: t.TempDir(), cpu: newFake("cpu", cpuScore), webgpu: newFake("webgpu:fake", gpuScore)}
	for i := range nCUDA {
		c := newFake(fmt.Sprintf("cuda:fake#%d", i), gpuScore+1+float64(i))
		c.faults[zenmetrics.ModeStrip] = faultUnsupported
		c.faults[zenmetrics.ModeStripPair] = faultUnsupported
		d.cudas = append(d.cudas, c)
	}
	if len(d.cudas) > 0 {
		d.cudas[0].metrics = map[zenmetrics.Metric]bool{zenmetrics.SSIMULACRA2: true, zenmetrics.Butteraugli: true, zenmetrics.CVVDP: true}
	}
	if profile != nil {
		path := capability.ProfilePath(d.dir, capability.ReportHash(testReport))
		if err := os.WriteFile(path, profile, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	free := func() (int64, int64, bool) { return 1 << 30, 2 << 30, true }
	cfg := Config{CacheDir: d.dir, MaxParallelCPU: 2}
	cfg.probe = func(context.Context) (*capability.Report, error) { return testReport, nil }
	cfg.discover = func(context.Context, Config, *capability.Report) ([]backendSlot, error) {
		s := []backendSlot{{name: "cpu", gpuIndex: -1, backend: d.cpu},
			{name: d.webgpu.name, gpu: true, gpuIndex: 0, runtime: capability.RuntimeWebGPU, backend: d.webgpu, free: free}}
		for _, c := range d.cudas {
			s = append(s, backendSlot{name: c.name, gpu: true, gpuIndex: -1, runtime: capability.RuntimeCUDA, backend: c, free: free})
		}
		return s, nil
	}
	cfg.Pool.VRAMSampleInterval = time.Nanosecond
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.o = o
	t.Cleanup(func() { o.Close() })
	return d
}

// profileFile is a profile of testReport in the file format, validated
// now, whose ssim2 rows are the given TOML lines.
func profileFile(nsRows, extra string) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	return fmt.Appendf(nil, `schema_version = 1
machine_hash = %q
detected_at = %s
last_validated = %s
[cpu]
brand = %q
logical_cores = 4
features = ["AVX2"]
ram_mib = 8192
[[gpu]]
name = "Fake GPU"
driver = "1.0"
vram_mib = 2048
%s
[metrics.ssim2.ns_per_px_at]
%s
`, capability.ReportHash(testReport), now, now, testReport.CPU.Brand, extra, nsRows)
}

// The bench measures the WebGPU slot and the first CUDA slot (not the
// second: devices of one host are alike), every GPU layout under each
// runtime's class, all in one lane apart from the CPU; the CUDA cells
// land in the profile under cuda_full (with the memory estimate, as the
// WebGPU cells), its declined strips nowhere.
func TestBenchMeasuresCUDACells(t *testing.T) {
	d := newDual(t, 2, nil)
	ts, _ := d.o.benchTargets(context.Background())
	var classes []string
	for _, tg := range ts {
		classes = append(classes, tg.Class)
		gpu := tg.Class != capability.ClassCPU
		if gpu != (tg.Lane == gpuBenchLane) || gpu != tg.RecordVRAM {
			t.Errorf("%s: lane %q, RecordVRAM %v", tg.Class, tg.Lane, tg.RecordVRAM)
		}
		if strings.HasPrefix(tg.Class, "cuda_") && tg.Backend != zenmetrics.Backend(d.cudas[0]) {
			t.Errorf("%s benches %s, want the first CUDA slot", tg.Class, tg.Backend.Name())
		}
	}
	want := []string{"gpu_full", "cuda_full", "gpu_strip", "cuda_strip", "gpu_strip_pair", "cuda_strip_pair", "cpu"}
	if !slices.Equal(classes, want) {
		t.Fatalf("bench targets %v, want %v", classes, want)
	}

	d.o.cfg.BenchSides = []int{32, 64}
	d.o.cfg.BenchMetrics = []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.DSSIM}
	res, err := d.o.Bench(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, err := (&capability.Store{Dir: d.dir}).Load(context.Background(), capability.ReportHash(testReport))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []zenmetrics.Metric{zenmetrics.SSIMULACRA2, zenmetrics.DSSIM} {
		s := p.Samples(m, capability.ClassCUDAFull)
		if m == zenmetrics.DSSIM {
			// The first CUDA device declines DSSIM: nothing measured,
			// and the second device is not asked.
			if len(s) != 0 {
				t.Errorf("dssim on CUDA: %+v", s)
			}
			continue
		}
		if len(s) != 2 || s[0].Pixels != 32*32 || s[1].Pixels != 64*64 || s[0].NsPerPx <= 0 || s[1].VRAMMiB != 1 {
			t.Errorf("%s cuda_full samples %+v", m, s)
		}
		if s := p.Samples(m, capability.ClassGPUFull); len(s) != 2 {
			t.Errorf("%s gpu_full samples %+v", m, s)
		}
		if s := p.Samples(m, "cuda_strip"); len(s) != 0 {
			t.Errorf("%s cuda_strip samples %+v", m, s)
		}
	}
	if pr, _ := d.cudas[1].count(zenmetrics.ModeFull); pr != 0 {
		t.Errorf("the second CUDA device was benched (%d prepares)", pr)
	}
	unsupported := 0
	for _, r := range res.Bench.Results {
		if r.Class == "cuda_strip" && r.Skipped == "unsupported" {
			unsupported++
		}
	}
	if unsupported != 4 {
		t.Errorf("%d cuda_strip cells unsupported, want 2 metrics × 2 sizes", unsupported)
	}
}

// The chooser reads each slot's own class: CUDA takes ssim2 where its
// cells are faster (the small size) and WebGPU where WebGPU's are (the
// large one), CUDA takes Butteraugli at both, WebGPU takes DSSIM (the CUDA
// device declines it), whatever the discovery order's tie-break.
func TestRouteFasterRuntimePerMetricAndSize(t *testing.T) {
	const rows = `1024 = { gpu_full = 2.0, cuda_full = 1.0 }
65536 = { gpu_full = 2.0, cuda_full = 4.0 }
[metrics.butteraugli]
last_measured = 2026-01-01T00:00:00Z
[metrics.butteraugli.ns_per_px_at]
1024 = { gpu_full = 3.0, cuda_full = 1.0 }
65536 = { gpu_full = 3.0, cuda_full = 1.0 }
[metrics.dssim]
last_measured = 2026-01-01T00:00:00Z
[metrics.dssim.ns_per_px_at]
1024 = { gpu_full = 3.0, cuda_full = 1.0 }`
	d := newDual(t, 1, profileFile(rows, "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z"))
	if d.o.snapshot() == nil {
		t.Fatal("profile not loaded")
	}
	for _, c := range []struct {
		m    zenmetrics.Metric
		side int
		want string
	}{
		{zenmetrics.SSIMULACRA2, 32, d.cudas[0].name},
		{zenmetrics.SSIMULACRA2, 256, d.webgpu.name},
		{zenmetrics.Butteraugli, 32, d.cudas[0].name},
		{zenmetrics.Butteraugli, 256, d.cudas[0].name},
		{zenmetrics.DSSIM, 32, d.webgpu.name},
	} {
		r := d.o.RunSingle(context.Background(), Task{Metric: c.m, Ref: img(c.side, c.side, 1), Dist: img(c.side, c.side, 2)})
		if r.Err != nil || r.Backend != c.want || r.Rung != ladder.GpuFull {
			t.Errorf("%s at %d²: %s on %s, want %s (err %v)", c.m, c.side, r.Rung, r.Backend, c.want, r.Err)
		}
	}
	// What the CUDA slot measured teaches its own class's estimate.
	cuda := d.o.gpus[1]
	cuda.st.mu.Lock()
	_, ok := cuda.st.ema[emaKey{zenmetrics.SSIMULACRA2, capability.ClassCUDAFull, sizeClass(32 * 32)}]
	cuda.st.mu.Unlock()
	if !ok {
		t.Errorf("CUDA slot's estimates %v lack ssim2/cuda_full", cuda.st.ema)
	}
}

// A profile written before CUDA had cells (gpu_* and cpu only, the file
// as older builds wrote it) loads, and routes as before: the CUDA slot
// borrows the gpu_full numbers, so the two tie and the first discovered
// (WebGPU) wins, and a gpu_full OOM cell rules the size out for both,
// sending the task to WebGPU strips.
func TestOldProfileWithoutCUDACellsRoutesAsBefore(t *testing.T) {
	const rows = `1024 = { gpu_full = 2.0, gpu_strip = 3.0, cpu = 500.0 }
65536 = { gpu_full = 2.0, gpu_strip = 3.0, cpu = 500.0 }`
	extra := "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z\ncells_failed_oom = [[\"gpu_full\", 65536]]"
	d := newDual(t, 1, profileFile(rows, extra))
	p := d.o.snapshot()
	if p == nil || len(p.Samples(zenmetrics.SSIMULACRA2, capability.ClassGPUFull)) != 2 {
		t.Fatal("old profile not loaded")
	}
	cuda := d.o.gpus[1]
	if v := cuda.view(p, zenmetrics.SSIMULACRA2, ladder.GpuFull); v.class != "cuda_full" || v.source != "gpu_full" || len(v.samples) != 2 || len(v.cells) != 1 {
		t.Errorf("CUDA slot's view of an old profile: %+v", v)
	}
	r := d.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(32, 32, 1), Dist: img(32, 32, 2)})
	if r.Err != nil || r.Backend != d.webgpu.name || r.Rung != ladder.GpuFull {
		t.Errorf("32²: %s on %s, want gpu_full on %s", r.Rung, r.Backend, d.webgpu.name)
	}
	r = d.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(256, 256, 1), Dist: img(256, 256, 2)})
	if r.Err != nil || r.Backend != d.webgpu.name || r.Rung != ladder.GpuStrip {
		t.Errorf("256² (gpu_full OOM cell): %s on %s, want gpu_strip on %s; trace %v", r.Rung, r.Backend, d.webgpu.name, r.Trace)
	}
	if pr, _ := d.cudas[0].count(zenmetrics.ModeFull); pr != 0 {
		t.Errorf("the CUDA slot ran %d tasks", pr)
	}
}

// Once the CUDA class has cells of its own, another runtime's OOM cell no
// longer applies to it: a gpu_full cell at 256² leaves CUDA free to run
// the size in full.
func TestOOMCellOfOneRuntimeLeavesTheOther(t *testing.T) {
	const rows = `1024 = { gpu_full = 1.0, cuda_full = 2.0 }
16384 = { gpu_full = 1.0, cuda_full = 2.0 }`
	extra := "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z\ncells_failed_oom = [[\"gpu_full\", 65536]]"
	d := newDual(t, 1, profileFile(rows, extra))
	r := d.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(256, 256, 1), Dist: img(256, 256, 2)})
	if r.Err != nil || r.Backend != d.cudas[0].name || r.Rung != ladder.GpuFull {
		t.Errorf("256²: %s on %s, want gpu_full on %s; trace %v", r.Rung, r.Backend, d.cudas[0].name, r.Trace)
	}
}

// An out-of-memory failure on the CUDA slot is recorded as a cuda_full
// cell (memory and disk), not gpu_full: the next task of that size skips
// CUDA's full image but still runs WebGPU's.
func TestCUDAOOMRecordedUnderItsClass(t *testing.T) {
	const rows = `1024 = { gpu_full = 2.0, cuda_full = 1.0 }`
	d := newDual(t, 1, profileFile(rows, "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z"))
	d.cudas[0].faults[zenmetrics.ModeFull] = faultConstructor
	task := func() Result {
		return d.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(32, 32, 1), Dist: img(32, 32, 2)})
	}
	if r := task(); r.Err != nil || r.Backend != d.webgpu.name || r.Trace[0].Backend != d.cudas[0].name || !r.Trace[0].Attempted {
		t.Fatalf("first task: %s on %s, trace %v", r.Rung, r.Backend, r.Trace)
	}
	p, err := (&capability.Store{Dir: d.dir}).Load(context.Background(), capability.ReportHash(testReport))
	if err != nil {
		t.Fatal(err)
	}
	want := []capability.Cell{{Backend: capability.ClassCUDAFull, Pixels: 32 * 32}}
	if got := p.OOMCells(zenmetrics.SSIMULACRA2); !slices.Equal(got, want) {
		t.Fatalf("cells on disk %v, want %v", got, want)
	}
	r := task()
	if r.Err != nil || r.Backend != d.webgpu.name || r.Rung != ladder.GpuFull {
		t.Errorf("second task: %s on %s, want gpu_full on %s; trace %v", r.Rung, r.Backend, d.webgpu.name, r.Trace)
	}
	if pr, _ := d.cudas[0].count(zenmetrics.ModeFull); pr != 1 {
		t.Errorf("CUDA prepared %d times, want once (the cell rules it out after)", pr)
	}
}

// relax across runtimes keeps the profile's gap: a fresh WebGPU estimate
// at its profile speed pulls an inflated CUDA estimate toward CUDA's own
// profile speed, not toward WebGPU's.
func TestRelaxAcrossRuntimesKeepsTheProfileGap(t *testing.T) {
	const rows = `1024 = { gpu_full = 4.0, cuda_full = 1.0 }`
	d := newDual(t, 1, profileFile(rows, "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z"))
	webgpu, cuda := d.o.gpus[0], d.o.gpus[1]
	const px = 1024
	m := zenmetrics.SSIMULACRA2
	ck := emaKey{m, capability.ClassCUDAFull, sizeClass(px)}
	cuda.st.ema = map[emaKey]float64{ck: 10}
	d.o.relax(webgpu, ladder.GpuFull, emaKey{m, capability.ClassGPUFull, sizeClass(px)}, px, 1)
	// Toward 1 (CUDA's profile × WebGPU's ratio 1), not 4 (WebGPU's).
	if got, want := cuda.st.ema[ck], 10-relaxRate*(10-1); got != want {
		t.Fatalf("CUDA estimate %v after relax, want %v", got, want)
	}
}

// Memory too is read per class: WebGPU's measured 4000 MiB at this size
// does not fit the 1 GiB free, CUDA's 10 MiB does, so the task runs on
// CUDA in full although WebGPU is profiled faster (the chooser's check
// and the worker's re-check before the attempt both read cuda_full).
func TestVRAMCellsPerRuntime(t *testing.T) {
	const rows = `1024 = { gpu_full = 1.0, cuda_full = 2.0 }
[metrics.ssim2.vram_mib_at]
1024 = { gpu_full = 4000.0, cuda_full = 10.0 }`
	d := newDual(t, 1, profileFile(rows, "[metrics.ssim2]\nlast_measured = 2026-01-01T00:00:00Z"))
	r := d.o.RunSingle(context.Background(), Task{Metric: zenmetrics.SSIMULACRA2, Ref: img(32, 32, 1), Dist: img(32, 32, 2)})
	if r.Err != nil || r.Backend != d.cudas[0].name || r.Rung != ladder.GpuFull {
		t.Errorf("%s on %s, want gpu_full on %s; trace %v", r.Rung, r.Backend, d.cudas[0].name, r.Trace)
	}
}
