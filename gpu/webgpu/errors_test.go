package webgpu

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

func TestInvalidShaderValidationError(t *testing.T) {
	d := device(t)
	err := d.Do(context.Background(), func(g *GPU) error {
		_, err := g.Module("broken", `@compute @workgroup_size(1) fn main() { let x: f32 = undefined_thing; }`)
		return err
	})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %T %v", err, err)
	}
	if !strings.Contains(err.Error(), "undefined_thing") || len(ve.Compilation) == 0 || ve.Message == "" {
		t.Fatalf("error lacks Dawn's message: %+v", ve)
	}
	t.Logf("%v", err)
	// The device is still fine afterwards.
	if err := d.Do(context.Background(), func(g *GPU) error { return nil }); err != nil {
		t.Fatalf("Do after a validation error: %v", err)
	}
}

func TestPipelineValidationError(t *testing.T) {
	d := device(t)
	err := d.Do(context.Background(), func(g *GPU) error {
		m, err := g.Module("saxpy", saxpyWGSL)
		if err != nil {
			return err
		}
		_, err = g.Pipeline(m, "no_such_entry", nil)
		return err
	})
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(ve.Message, "no_such_entry") {
		t.Fatalf("want *ValidationError naming the entry point, got %T %v", err, err)
	}
}

// An error that no helper checks (a dispatch with a missing binding) is
// caught by the scopes Do pushes around the closure.
func TestDoScopeCatchesEncodingError(t *testing.T) {
	d := device(t)
	err := d.Do(context.Background(), func(g *GPU) error {
		m, err := g.Module("saxpy", saxpyWGSL)
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", Constants{"WG": 64})
		if err != nil {
			return err
		}
		x, err := g.Storage(256)
		if err != nil {
			return err
		}
		defer x.Release()
		e := g.Encoder()
		e.Dispatch(p, 1, 1, 1, x) // 1 of 3 bindings
		return e.Submit()
	})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %T %v", err, err)
	}
	t.Logf("%v", err)
}

func TestOutOfMemory(t *testing.T) {
	d := device(t)
	max := d.Limits().MaxBufferSize
	// Beyond maxBufferSize: refused before Dawn is asked.
	err := d.Do(context.Background(), func(g *GPU) error {
		_, err := g.NewBuffer(int64(max)+4, wgpu.BufferUsageStorage, "too big")
		return err
	})
	var oom *zenmetrics.OutOfMemoryError
	if !errors.Is(err, zenmetrics.ErrOutOfMemory) || !errors.As(err, &oom) || oom.Requested != int64(max)+4 {
		t.Fatalf("beyond maxBufferSize: want OutOfMemoryError, got %T %v", err, err)
	}
	// A single impossible allocation within the limit: Dawn's OutOfMemory
	// scope (lavapipe allocates lazily, so only one huge buffer fails).
	size := int64(1)<<32 - 1
	if uint64(size) > max {
		size = int64(max)
	}
	if size < 1<<31 {
		t.Skipf("maxBufferSize %d too small for an impossible allocation", max)
	}
	err = d.Do(context.Background(), func(g *GPU) error {
		b, err := g.NewBuffer(size, wgpu.BufferUsageStorage|wgpu.BufferUsageCopyDst, "huge")
		if err == nil {
			b.Destroy()
		}
		return err
	})
	if err == nil {
		if d.Info().Type == wgpu.AdapterTypeCPU { // lavapipe: this size must fail
			t.Fatalf("a single %d-byte buffer was allocated on %s", size, d.Name())
		}
		t.Skipf("the adapter really allocated %d bytes", size)
	}
	if !errors.As(err, &oom) || oom.Detail == "" || oom.Backend != d.Name() {
		t.Fatalf("want OutOfMemoryError with Dawn's message, got %T %v", err, err)
	}
	t.Logf("%v", err)
	if err := d.Do(context.Background(), func(g *GPU) error { return nil }); err != nil {
		t.Fatalf("Do after OOM: %v", err)
	}
}

func TestContextCancel(t *testing.T) {
	d := device(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := d.Do(ctx, func(g *GPU) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("cancelled ctx: err %v, ran %v", err, ran)
	}

	var finished atomic.Bool
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := d.Do(ctx, func(g *GPU) error {
		time.Sleep(300 * time.Millisecond)
		finished.Store(true)
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 250*time.Millisecond {
		t.Fatalf("deadline: err %v after %v", err, time.Since(t0))
	}
	// The next call waits for the running closure, which finishes.
	if err := d.Do(context.Background(), func(g *GPU) error {
		if !finished.Load() {
			return errors.New("previous closure did not finish first")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceLostAndClose(t *testing.T) {
	device(t) // skip without a runtime
	d, err := Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Do(context.Background(), func(g *GPU) error {
		_, dev, _ := g.Raw()
		dev.Destroy()
		return nil
	})
	err2 := d.Do(context.Background(), func(g *GPU) error { return nil })
	for _, e := range []error{err, err2} {
		var dl *DeviceLostError
		if !errors.Is(e, zenmetrics.ErrDeviceLost) || !errors.As(e, &dl) || dl.Reason != "Destroyed" || dl.Message == "" {
			t.Fatalf("want device lost (Destroyed) with Dawn's message, got %T %v", e, e)
		}
	}
	t.Logf("%v", err2)
	d.Close()
	d.Close()
	if err := d.Do(context.Background(), func(g *GPU) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
}

func TestAdaptersRefuseNull(t *testing.T) {
	device(t)
	list, err := Adapters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Backend == wgpu.BackendNull {
			t.Fatalf("Null adapter listed: %+v", a)
		}
		t.Logf("#%d %s %s %s heaps=%v subgroups=%d..%d", a.Index, a.Name(), a.Backend, a.Type, a.Heaps, a.SubgroupMinSize, a.SubgroupMaxSize)
	}
	if _, err := Open(context.Background(), &Options{PreferIndex: len(list), AllowCPUAdapter: true}); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("PreferIndex out of range: %v", err)
	}
}
