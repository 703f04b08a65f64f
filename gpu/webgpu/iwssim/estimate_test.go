package iwssim

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEstimate: Estimate is what a prepared reference holds on the device
// (webgpu.ReferenceBytes, the kit's own accounting of every buffer),
// exactly, for the worst-case RGBA16 upload it reserves; sizes below 161
// and strip modes are declined.
func TestEstimate(t *testing.T) {
	b := backend(t)
	for _, s := range [][2]int{{161, 161}, {333, 257}} {
		ref, _ := metrictest.Synthetic(s[0], s[1], 1, zenmetrics.RGBA16)
		est, ok := b.Estimate(zenmetrics.IWSSIM, s[0], s[1], zenmetrics.ModeFull)
		if !ok {
			t.Fatalf("%v: Estimate declined", s)
		}
		r, err := b.Prepare(context.Background(), zenmetrics.IWSSIM, ref, zenmetrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		held := webgpu.ReferenceBytes(r)
		r.Release()
		t.Logf("%dx%d: Estimate %d, held %d", s[0], s[1], est, held)
		if held != est {
			t.Errorf("%dx%d: Estimate %d, reference holds %d", s[0], s[1], est, held)
		}
	}
	for _, c := range []struct {
		w, h int
		m    zenmetrics.Mode
	}{{160, 400, zenmetrics.ModeFull}, {400, 160, zenmetrics.ModeFull}, {400, 400, zenmetrics.ModeStrip}} {
		if _, ok := b.Estimate(zenmetrics.IWSSIM, c.w, c.h, c.m); ok {
			t.Errorf("Estimate %dx%d %v accepted", c.w, c.h, c.m)
		}
	}
}
