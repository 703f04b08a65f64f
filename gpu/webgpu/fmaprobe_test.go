package webgpu

import (
	"context"
	"testing"
)

// ProbeFMA's plumbing: the inputs reach elements 0–2, and elements 3 and 4
// are read back and compared with the fused result 2^-24. The modules
// here compute nothing: each writes the fused or the unfused result where
// the real probes write fma() and the kernels' emulation.
func TestProbeFMA(t *testing.T) {
	d := device(t)
	const fused, unfused = "exp2(-24.0)", "0.0"
	for _, c := range []struct {
		r3, r4           string
		native, emulated bool
	}{{fused, unfused, true, false}, {unfused, fused, false, true}, {fused, fused, true, true}, {unfused, unfused, false, false}} {
		// io[3] and io[4] are only set when the inputs arrived as sent.
		src := `@group(0) @binding(0) var<storage, read_write> io: array<f32>;
@compute @workgroup_size(1, 1, 1)
fn probe() {
  let ok = io[0] == 1.0 + exp2(-12.0) && io[1] == io[0] && io[2] == -(1.0 + exp2(-11.0));
  io[3] = select(1.0, ` + c.r3 + `, ok);
  io[4] = select(1.0, ` + c.r4 + `, ok);
}`
		err := d.Do(context.Background(), func(g *GPU) error {
			native, emulated, err := ProbeFMA(g, "probe_test", src)
			if err != nil {
				return err
			}
			if native != c.native || emulated != c.emulated {
				t.Errorf("io[3] = %s, io[4] = %s: native %v emulated %v", c.r3, c.r4, native, emulated)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
