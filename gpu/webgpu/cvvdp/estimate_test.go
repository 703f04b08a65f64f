package cvvdp

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimate: Estimate is what a prepared reference holds on the device
// (webgpu.ReferenceBytes, the kit's own accounting of every buffer) once
// scores have made both staging slots of the pipelined path (from 1 MiB
// of upload on: the 420×390 case; one slot after one score, none before),
// exactly, for the worst-case RGBA16 upload, at sizes where the image
// (not the display) limits the band count; for a display with fewer bands
// it is an upper bound. Sizes below 2 and unknown modes are declined
// (TestStrips and TestStripPairs check Estimate for those modes).
func TestEstimate(t *testing.T) {
	b := backend(t)
	for _, s := range [][2]int{{2, 2}, {64, 48}, {333, 257}, {420, 390}} {
		ref, _ := metrictest.Synthetic(s[0], s[1], 1, zenmetrics.RGBA16)
		est, ok := b.Estimate(zenmetrics.CVVDP, s[0], s[1], zenmetrics.ModeFull)
		if !ok {
			t.Fatalf("%v: Estimate declined", s)
		}
		var slot int64
		if raw := worstRaw(s[0], s[1]); raw >= webgpu.StagingMin {
			slot = (raw + 3) &^ 3
		}
		for _, disp := range []string{"", "standard_hmd"} {
			r, err := b.Prepare(context.Background(), zenmetrics.CVVDP, ref, zenmetrics.Options{Display: disp})
			if err != nil {
				t.Fatal(err)
			}
			held := webgpu.ReferenceBytes(r)
			if _, err := r.Score(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
			after := webgpu.ReferenceBytes(r)
			r.Release()
			t.Logf("%dx%d %q: Estimate %d, held %d, after a score %d (slot %d)", s[0], s[1], disp, est, held, after, slot)
			if after != held+slot {
				t.Errorf("%dx%d %q: a score took the reference from %d to %d bytes, want one slot (%d) more", s[0], s[1], disp, held, after, slot)
			}
			if disp == "" && held+pipeSlots*slot != est {
				t.Errorf("%dx%d: Estimate %d, reference holds %d + %d slots of %d", s[0], s[1], est, held, pipeSlots, slot)
			}
			if held+pipeSlots*slot > est {
				t.Errorf("%dx%d %q: reference holds %d with both slots, above Estimate %d", s[0], s[1], disp, held+pipeSlots*slot, est)
			}
		}
	}
	// The distortion map's planes come on top (Estimate has no Options).
	ref, _ := metrictest.Synthetic(64, 48, 1, zenmetrics.RGBA16)
	r, err := b.Prepare(context.Background(), zenmetrics.CVVDP, ref, zenmetrics.Options{DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	held := webgpu.ReferenceBytes(r)
	r.Release()
	est, _ := b.Estimate(zenmetrics.CVVDP, 64, 48, zenmetrics.ModeFull)
	plan, err := cpucv.NewPlan(64, 48, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := est + mapBytes(plan.W, plan.H); held != want {
		t.Errorf("64x48 with the map: held %d, Estimate %d + map %d", held, est, mapBytes(plan.W, plan.H))
	}
	for _, c := range []struct {
		w, h int
		m    zenmetrics.Mode
	}{{1, 400, zenmetrics.ModeFull}, {400, 1, zenmetrics.ModeFull}, {1, 400, zenmetrics.ModeStrip}, {400, 1, zenmetrics.ModeStripPair}, {400, 400, zenmetrics.Mode(9)}} {
		if _, ok := b.Estimate(zenmetrics.CVVDP, c.w, c.h, c.m); ok {
			t.Errorf("Estimate %dx%d %v accepted", c.w, c.h, c.m)
		}
	}
}
