package capability

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// ProbeOptions tune Probe.
type ProbeOptions struct {
	// SkipGPU probes the CPU only.
	SkipGPU bool
	// PerAdapterTimeout bounds the feature kernels of one adapter
	// (0: one minute).
	PerAdapterTimeout time.Duration
}

// Probe measures this machine: the CPU (cpuid, cores, RAM) and every
// usable WebGPU adapter (identity, limits, advertised features, memory
// heaps, device init time) with shader features verified by running tiny
// kernels. A missing runtime or a Null-only system is recorded in
// Report.Problems, not returned as an error; the error is only ctx's.
func Probe(ctx context.Context, opt ProbeOptions) (*Report, error) {
	r := &Report{CPU: probeCPU()}
	if opt.SkipGPU {
		return r, ctx.Err()
	}
	if opt.PerAdapterTimeout <= 0 {
		opt.PerAdapterTimeout = time.Minute
	}
	list, refused, err := webgpu.Enumerate(ctx, webgpu.DefaultOptions())
	r.Runtime = loadedRuntime()
	r.Problems = append(r.Problems, refused...)
	if err != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	if len(list) == 0 {
		r.Problems = append(r.Problems, "webgpu: no usable GPU adapter")
	}
	for i := range list {
		info, err := probeAdapter(ctx, i, opt)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.Problems = append(r.Problems, fmt.Sprintf("adapter #%d %q: %v", i, list[i].Name(), err))
			continue
		}
		r.GPUs = append(r.GPUs, *info)
	}
	return r, nil
}

// RuntimeInfo says which WebGPU library a probe used: the file, the ABI
// table the binding picked from its exports, and the npm package beside
// the file when there is one.
type RuntimeInfo struct {
	Library      string `json:"library"`
	ABI          string `json:"abi"`
	DawnRevision string `json:"dawn_revision,omitempty"`
	// Package is "name@version" from the package.json beside the library
	// ("" when there is none, e.g. a library copied out of its package).
	Package string `json:"package,omitempty"`
}

// loadedRuntime describes the library wgpu.Load bound (nil before).
func loadedRuntime() *RuntimeInfo {
	a := wgpu.LoadedABI()
	if a == nil {
		return nil
	}
	lib := wgpu.LibraryPath()
	return &RuntimeInfo{Library: lib, ABI: a.Name, DawnRevision: a.DawnRevision, Package: wgpu.PackageVersion(lib)}
}

// interesting CPU features for the metric kernels, in report order.
var cpuFeatures = []cpuid.FeatureID{
	cpuid.SSE2, cpuid.SSE3, cpuid.SSSE3, cpuid.SSE4, cpuid.SSE42, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C,
	cpuid.BMI1, cpuid.BMI2, cpuid.AVXVNNI, cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL,
	cpuid.AVX512CD, cpuid.AVX512VNNI, cpuid.AVX512BF16, cpuid.AVX512FP16, cpuid.AMXBF16, cpuid.ASIMD,
	cpuid.ASIMDHP, cpuid.ASIMDDP, cpuid.FPHP, cpuid.SVE, cpuid.SVE2,
}

func probeCPU() CPUInfo {
	c := CPUInfo{Brand: strings.TrimSpace(cpuid.CPU.BrandName), LogicalCores: runtime.NumCPU()}
	if c.Brand == "" {
		c.Brand = runtime.GOARCH
	}
	for _, f := range cpuFeatures {
		if cpuid.CPU.Supports(f) {
			c.Features = append(c.Features, f.String())
		}
	}
	if b := totalRAM(); b > 0 {
		c.RAMMiB = b >> 20
	}
	return c
}

func probeAdapter(ctx context.Context, index int, opt ProbeOptions) (*GPUInfo, error) {
	dev, err := webgpu.Open(ctx, &webgpu.Options{PreferIndex: index, AllowCPUAdapter: true, Label: "zenmetrics-probe"})
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	a := dev.Info()
	g := &GPUInfo{
		Name: a.Name(), Vendor: a.Vendor, Architecture: a.Architecture,
		Runtime: "dawn/" + strings.ToLower(a.Backend.String()), Backend: a.Backend.String(),
		AdapterType: a.Type.String(), Driver: a.Description, VendorID: a.VendorID, DeviceID: a.DeviceID,
		InitMs:   math.Round(float64(dev.InitTime().Microseconds())) / 1000,
		Features: map[string]string{}, Verified: map[string]FeatureStatus{},
		Limits: limitsMap(dev.Limits()),
	}
	for _, f := range a.Features {
		g.AdapterFeatures = append(g.AdapterFeatures, f.String())
	}
	for _, h := range a.Heaps {
		g.Heaps = append(g.Heaps, MemoryHeap{SizeMiB: int64(h.Size >> 20), Properties: h.Properties.Names()})
		if h.Properties&wgpu.HeapPropertyDeviceLocal != 0 && int64(h.Size>>20) > g.VRAMMiB {
			g.VRAMMiB = int64(h.Size >> 20)
		}
	}
	kctx, cancel := context.WithTimeout(ctx, opt.PerAdapterTimeout)
	defer cancel()
	for _, p := range []struct {
		name string
		fn   func(context.Context, *webgpu.Device) FeatureStatus
		tag  func(FeatureStatus) string
	}{
		{"f32_atomics", probeF32Atomics, func(s FeatureStatus) string {
			switch {
			case s.Supported:
				return "native"
			case strings.Contains(s.How, "emulated with CAS (verified exact"):
				return "emulated-cas"
			}
			return "unsupported"
		}},
		{"f16", probeF16, nativeTag},
		{"subgroups", probeSubgroups, nativeTag},
		{"timestamp_query", probeTimestamps, nativeTag},
	} {
		s := p.fn(kctx, dev)
		g.Verified[p.name] = s
		g.Features[p.name] = p.tag(s)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

func nativeTag(s FeatureStatus) string {
	if s.Supported {
		return "native"
	}
	return "unsupported"
}

func limitsMap(l wgpu.Limits) map[string]uint64 {
	m := map[string]uint64{}
	v := reflect.ValueOf(l)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "_" || f.Type.Kind() == reflect.Pointer {
			continue
		}
		m[strings.ToLower(f.Name[:1])+f.Name[1:]] = v.Field(i).Uint()
	}
	return m
}

// short keeps the first line of an error message.
func short(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i > 0 {
		s = s[:i]
	}
	return s
}

func probeF32Atomics(ctx context.Context, dev *webgpu.Device) FeatureStatus {
	const groups, wg = 256, 256
	run := func(shader string) (float32, error) {
		var sum float32
		err := dev.Do(ctx, func(g *webgpu.GPU) error {
			m, err := g.Module(shader, wgsl.MustSource(shader))
			if err != nil {
				return err
			}
			p, err := g.Pipeline(m, "main", webgpu.Constants{"WG": wg})
			if err != nil {
				return err
			}
			acc, err := g.Storage(4)
			if err != nil {
				return err
			}
			defer acc.Release()
			e := g.Encoder()
			e.Clear(acc)
			e.Dispatch(p, groups, 1, 1, acc)
			rb, err := e.ReadBack(acc, 0, 4)
			if err != nil {
				return err
			}
			if err := e.Submit(); err != nil {
				return err
			}
			out := []float32{0}
			err = webgpu.ReadSlice(rb, out)
			sum = out[0]
			return err
		})
		return sum, err
	}
	want := float32(groups * wg)
	native, nerr := run("probe_atomic_f32")
	if nerr == nil && native == want {
		return FeatureStatus{Supported: true, How: "native atomic<f32> ran exact", Value: fmt.Sprint(native)}
	}
	why := "atomic<f32> rejected"
	if nerr != nil {
		var ve *webgpu.ValidationError
		if errors.As(nerr, &ve) && len(ve.Compilation) > 0 {
			why += ": " + ve.Compilation[0]
		} else {
			why += ": " + short(nerr)
		}
	} else {
		why = fmt.Sprintf("atomic<f32> compiled but summed %v, want %v", native, want)
	}
	sum, err := run("probe_atomic_cas")
	if err != nil {
		return FeatureStatus{How: why + "; CAS emulation failed: " + short(err)}
	}
	if sum != want {
		return FeatureStatus{How: fmt.Sprintf("%s; CAS emulation summed %v, want %v", why, sum, want), Value: fmt.Sprint(sum)}
	}
	return FeatureStatus{How: fmt.Sprintf("unsupported, emulated with CAS (verified exact: %d × 1.0 = %v); %s", groups*wg, sum, why),
		Value: fmt.Sprint(sum)}
}

func probeF16(ctx context.Context, dev *webgpu.Device) FeatureStatus {
	if !dev.HasFeature(wgpu.FeatureShaderF16) {
		return FeatureStatus{How: "adapter does not offer ShaderF16"}
	}
	const n = 1024
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i%512)*0.5 - 64 // multiples of 0.5 in [-64, 191.5]: exact in f16, and so is x*1.5+0.25
	}
	dst := make([]float32, n)
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		m, err := g.Module("probe_f16", wgsl.MustSource("probe_f16"))
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", webgpu.Constants{"WG": 64})
		if err != nil {
			return err
		}
		in, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer in.Release()
		out, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer out.Release()
		webgpu.WriteSlice(g, in, 0, src)
		e := g.Encoder()
		e.Clear(out)
		e.Dispatch(p, webgpu.Groups(n, 64), 1, 1, in, out)
		rb, err := e.ReadBack(out, 0, n*4)
		if err != nil {
			return err
		}
		if err := e.Submit(); err != nil {
			return err
		}
		return webgpu.ReadSlice(rb, dst)
	})
	if err != nil {
		return FeatureStatus{How: "enable f16 kernel failed: " + short(err)}
	}
	for i := range src {
		if want := src[i]*1.5 + 0.25; dst[i] != want {
			return FeatureStatus{How: fmt.Sprintf("enable f16 kernel ran but dst[%d] = %v, want %v", i, dst[i], want)}
		}
	}
	return FeatureStatus{Supported: true, How: fmt.Sprintf("enable f16 kernel ran, %d results exact", n)}
}

func probeSubgroups(ctx context.Context, dev *webgpu.Device) FeatureStatus {
	if !dev.HasFeature(wgpu.FeatureSubgroups) {
		return FeatureStatus{How: "adapter does not offer Subgroups"}
	}
	const groups, wg = 4, 64
	res := make([]uint32, 2*groups)
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		m, err := g.Module("probe_subgroups", wgsl.MustSource("probe_subgroups"))
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", webgpu.Constants{"WG": wg})
		if err != nil {
			return err
		}
		out, err := g.Storage(int64(len(res) * 4))
		if err != nil {
			return err
		}
		defer out.Release()
		e := g.Encoder()
		e.Clear(out)
		e.Dispatch(p, groups, 1, 1, out)
		rb, err := e.ReadBack(out, 0, int64(len(res)*4))
		if err != nil {
			return err
		}
		if err := e.Submit(); err != nil {
			return err
		}
		return webgpu.ReadSlice(rb, res)
	})
	if err != nil {
		return FeatureStatus{How: "enable subgroups kernel failed: " + short(err)}
	}
	size := res[1]
	for i := 0; i < groups; i++ {
		sum, sgs := res[2*i], res[2*i+1]
		if sgs == 0 || sgs > 128 || sgs&(sgs-1) != 0 || sgs != size || sum != min(sgs, wg) {
			return FeatureStatus{How: fmt.Sprintf("subgroup kernel gave subgroupAdd(1)=%d, subgroup_size=%d (workgroup %d)", sum, sgs, i)}
		}
	}
	return FeatureStatus{Supported: true, How: fmt.Sprintf("subgroupAdd(1) = subgroup_size = %d in every workgroup", size),
		Value: fmt.Sprint(size)}
}

func probeTimestamps(ctx context.Context, dev *webgpu.Device) FeatureStatus {
	if !dev.HasFeature(wgpu.FeatureTimestampQuery) {
		return FeatureStatus{How: "adapter does not offer TimestampQuery"}
	}
	const n = 1 << 18
	var times []webgpu.PassTime
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		m, err := g.Module("probe_saxpy", wgsl.MustSource("probe_saxpy"))
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", webgpu.Constants{"WG": 256})
		if err != nil {
			return err
		}
		params, err := g.Uniform(16)
		if err != nil {
			return err
		}
		defer params.Release()
		x, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer x.Release()
		y, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer y.Release()
		webgpu.WriteSlice(g, params, 0, []uint32{math.Float32bits(2), math.Float32bits(1), n, 0})
		e := g.Encoder()
		for _, l := range []string{"a", "b"} {
			e.TimedPass(l)
			e.Dispatch(p, webgpu.Groups(n, 256), 1, 1, params, x, y)
		}
		if err := e.Submit(); err != nil {
			return err
		}
		times, err = e.PassTimes()
		return err
	})
	if err != nil {
		return FeatureStatus{How: "timestamp query set failed: " + short(err)}
	}
	if len(times) != 2 {
		return FeatureStatus{How: fmt.Sprintf("got %d timed passes, want 2", len(times))}
	}
	a, b := times[0], times[1]
	if a.BeginNS == 0 || a.EndNS < a.BeginNS || b.BeginNS < a.EndNS || b.EndNS < b.BeginNS || b.EndNS == a.BeginNS {
		return FeatureStatus{How: fmt.Sprintf("timestamps not monotonic/non-zero: %+v", times)}
	}
	return FeatureStatus{Supported: true, How: "query set created and resolved; 4 timestamps non-zero and monotonic",
		Value: fmt.Sprintf("%.3f ms for a %d-element dispatch", a.DurationNS/1e6, n)}
}
