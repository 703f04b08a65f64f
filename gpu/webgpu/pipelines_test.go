package webgpu

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestComputePipelinesSideBySide creates pipelines through the async batch
// path (ComputePipelines, what Compile uses) and checks that they compute
// what the serial path's pipeline computes, that a spec repeated in one
// batch and one already made come back as the same cached objects, and that
// a batch with a bad entry point fails with a ValidationError and keeps
// nothing of it.
func TestComputePipelinesSideBySide(t *testing.T) {
	d := device(t)
	const n = 4096
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%97) - 40
	}
	run := func(g *GPU, p *Pipeline, a, b float32) ([]float32, error) {
		params, err := g.Uniform(16)
		if err != nil {
			return nil, err
		}
		defer params.Release()
		xb, err := g.Storage(n * 4)
		if err != nil {
			return nil, err
		}
		defer xb.Release()
		yb, err := g.Storage(n * 4)
		if err != nil {
			return nil, err
		}
		defer yb.Release()
		WriteSlice(g, params, 0, []float32{a, b, math.Float32frombits(n), 0})
		WriteSlice(g, xb, 0, x)
		e := g.Encoder()
		e.Clear(yb)
		e.Dispatch(p, Groups(n, 64), 1, 1, params, xb, yb)
		out := make([]float32, n)
		return out, SubmitRead(e, yb, 0, out)
	}
	err := d.Do(context.Background(), func(g *GPU) error {
		m, err := g.Module("saxpy-async", saxpyWGSL+"\n// async batch\n")
		if err != nil {
			return err
		}
		serial, err := g.Pipeline(m, "main", Constants{"WG": 64})
		if err != nil {
			return err
		}
		specs := []PipelineSpec{
			{Module: m, Entry: "main", Constants: Constants{"WG": 128}},
			{Module: m, Entry: "main", Constants: Constants{"WG": 64}}, // made above: cached
			{Module: m, Entry: "main", Constants: Constants{"WG": 256}},
			{Module: m, Entry: "main", Constants: Constants{"WG": 128}}, // repeated in the batch
		}
		ps, err := g.ComputePipelines(specs)
		if err != nil {
			return err
		}
		if ps[1] != serial {
			t.Error("a pipeline made before the batch was not reused")
		}
		if ps[0] != ps[3] {
			t.Error("a spec repeated in one batch made two pipelines")
		}
		if again, err := g.Pipeline(m, "main", Constants{"WG": 256}); err != nil || again != ps[2] {
			t.Errorf("the serial path does not find the batch's pipeline: %v", err)
		}
		want, err := run(g, serial, 1.5, -2)
		if err != nil {
			return err
		}
		for i, p := range ps {
			got, err := run(g, p, 1.5, -2)
			if err != nil {
				return err
			}
			for j := range got {
				if got[j] != want[j] || got[j] != 1.5*x[j]-2 {
					t.Fatalf("pipeline %d: y[%d] = %v, serial %v, want %v", i, j, got[j], want[j], 1.5*x[j]-2)
				}
			}
		}
		before := len(g.pipelines)
		_, err = g.ComputePipelines([]PipelineSpec{
			{Module: m, Entry: "main", Constants: Constants{"WG": 32}},
			{Module: m, Entry: "no_such_entry"},
		})
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("bad entry point: err %v, want a *ValidationError", err)
		}
		if len(g.pipelines) != before {
			t.Errorf("a failed batch kept %d pipelines", len(g.pipelines)-before)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
