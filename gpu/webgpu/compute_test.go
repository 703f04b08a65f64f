package webgpu

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

const saxpyWGSL = `
override WG: u32 = 64;
struct Params { a: f32, b: f32, n: u32, _pad: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < params.n) { y[i] = params.a * x[i] + params.b; }
}
`

func TestAdapterIsReal(t *testing.T) {
	d := device(t)
	info := d.Info()
	if info.Backend == wgpu.BackendNull || info.Backend == wgpu.BackendUndefined {
		t.Fatalf("device runs on backend %v", info.Backend)
	}
	t.Logf("adapter %q (%s, %s, vendor %q, driver %q), init %v", info.Name(), info.Backend, info.Type, info.Vendor, info.Description, d.InitTime())
	l := d.Limits()
	if l.MaxStorageBufferBindingSize != info.Limits.MaxStorageBufferBindingSize || l.MaxBufferSize != info.Limits.MaxBufferSize ||
		l.MaxComputeWorkgroupStorageSize != info.Limits.MaxComputeWorkgroupStorageSize {
		t.Fatalf("device limits are not the adapter's: device %+v adapter %+v", l, info.Limits)
	}
	if l.MaxStorageBufferBindingSize <= 128<<20-1 && info.Limits.MaxStorageBufferBindingSize > 128<<20 {
		t.Fatalf("storage binding limit stayed at the WebGPU default")
	}
}

func TestSaxpy1M(t *testing.T) {
	d := device(t)
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*200 - 100
	}
	a, b := float32(rng.Float64()*3+0.5), float32(rng.Float64()*2-1)
	y := make([]float32, n)
	err := d.Do(context.Background(), func(g *GPU) error {
		m, err := g.Module("saxpy", saxpyWGSL)
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", Constants{"WG": 256})
		if err != nil {
			return err
		}
		params, err := g.Uniform(16)
		if err != nil {
			return err
		}
		defer params.Release()
		xb, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer xb.Release()
		yb, err := g.Storage(n * 4)
		if err != nil {
			return err
		}
		defer yb.Release()
		WriteSlice(g, params, 0, []float32{a, b, math.Float32frombits(n), 0})
		WriteSlice(g, xb, 0, x)
		e := g.Encoder()
		e.Clear(yb)
		e.Dispatch(p, Groups(n, 256), 1, 1, params, xb, yb)
		rb, err := e.ReadBack(yb, 0, n*4)
		if err != nil {
			return err
		}
		if err := e.Submit(); err != nil {
			return err
		}
		return ReadSlice(rb, y)
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range x {
		want := a*x[i] + b
		if y[i] != want && math.Abs(float64(y[i]-want)) > 1e-5*math.Abs(float64(want))+1e-6 {
			if bad < 5 {
				t.Errorf("y[%d] = %v, want %v (x=%v)", i, y[i], want, x[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d outputs wrong", bad, n)
	}
}
