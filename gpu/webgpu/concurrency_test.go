package webgpu

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

const addWGSL = `
override WG: u32 = 64;
@group(0) @binding(0) var<storage, read_write> v: array<u32>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x < arrayLength(&v)) { v[gid.x] = v[gid.x] * 3u + 1u; }
}
`

// Many goroutines share the device; each closure's writes, dispatch and
// readback must come back intact (run with -race).
func TestConcurrentDo(t *testing.T) {
	d := device(t)
	const workers, rounds, n = 8, 6, 4096
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				in := make([]uint32, n)
				for i := range in {
					in[i] = uint32(w*1_000_000 + r*10_000 + i)
				}
				out := make([]uint32, n)
				err := d.Do(context.Background(), func(g *GPU) error {
					m, err := g.Module("add", addWGSL)
					if err != nil {
						return err
					}
					p, err := g.Pipeline(m, "main", Constants{"WG": float64(int(32) << (w % 3))})
					if err != nil {
						return err
					}
					b, err := g.Storage(n * 4)
					if err != nil {
						return err
					}
					defer b.Release()
					WriteSlice(g, b, 0, in)
					e := g.Encoder()
					e.Dispatch(p, Groups(n, 32<<(w%3)), 1, 1, b)
					rb, err := e.ReadBack(b, 0, n*4)
					if err != nil {
						return err
					}
					if err := e.Submit(); err != nil {
						return err
					}
					return ReadSlice(rb, out)
				})
				if err != nil {
					errs <- err
					return
				}
				for i := range out {
					if out[i] != in[i]*3+1 {
						errs <- fmt.Errorf("worker %d round %d: out[%d]=%d want %d", w, r, i, out[i], in[i]*3+1)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPoolReuse(t *testing.T) {
	d := device(t)
	err := d.Do(context.Background(), func(g *GPU) error {
		a, err := g.Storage(1000)
		if err != nil {
			return err
		}
		a.Release()
		b, err := g.Storage(1000)
		if err != nil {
			return err
		}
		defer b.Release()
		if a != b {
			return fmt.Errorf("pool did not reuse the buffer")
		}
		c, err := g.Acquire(1000, wgpu.BufferUsageStorage)
		if err != nil {
			return err
		}
		defer c.Release()
		if c == b {
			return fmt.Errorf("different usage shared a buffer")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTimedPass(t *testing.T) {
	d := device(t)
	var times []PassTime
	err := d.Do(context.Background(), func(g *GPU) error {
		if !g.Timestamps() {
			return nil
		}
		m, err := g.Module("add", addWGSL)
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", Constants{"WG": 64})
		if err != nil {
			return err
		}
		b, err := g.Storage(1 << 22)
		if err != nil {
			return err
		}
		defer b.Release()
		e := g.Encoder()
		e.TimedPass("first")
		e.Dispatch(p, Groups(1<<20, 64), 1, 1, b)
		e.TimedPass("second")
		e.Dispatch(p, Groups(1<<20, 64), 1, 1, b)
		if err := e.Submit(); err != nil {
			return err
		}
		times, err = e.PassTimes()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasFeature(wgpu.FeatureTimestampQuery) {
		t.Skip("no TimestampQuery")
	}
	if len(times) != 2 {
		t.Fatalf("got %d pass times", len(times))
	}
	for _, pt := range times {
		if pt.BeginNS == 0 || pt.EndNS < pt.BeginNS {
			t.Fatalf("bad timestamps %+v", pt)
		}
		t.Logf("%s: %.3f ms", pt.Label, pt.DurationNS/1e6)
	}
	if times[1].BeginNS < times[0].EndNS {
		t.Fatalf("second pass began before the first ended: %+v", times)
	}
	_ = time.Now
}
