package ssim2

import (
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpussim2 "github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// emulateAll is a whole-image score through the emulator with the
// sequence ssim2.go queues: the reference as buildPyramid does
// (queueRefPyramid), the distorted half as Score does (queueView, every
// scale's blurs in one launch each). With banded, scale 0's decode and
// the upper half's horizontal pass are queued first, as uploadBands does.
func emulateAll(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, banded bool) float64 {
	t.Helper()
	p := plan(ref.Width, ref.Height)
	fa := &cudaemu.FakeAlloc{Round: cuda.AllocSize}
	py := newPyramid(p, fa.Alloc)
	s := &slot{}
	fillSlot(s, p, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	r := cudatest.NewReplay(t, emu, fa.Bufs)
	k := newKernels()
	if err := r.Upload(s.raw, ref.Pix[:cuda.RawBytes(ref)]); err != nil {
		t.Fatal(err)
	}
	if err := queueRefPyramid(&r.Rec, k, p, s, side(ref, false, 0), py); err != nil {
		t.Fatal(err)
	}
	if err := r.Upload(s.raw, dist.Pix[:cuda.RawBytes(dist)]); err != nil {
		t.Fatal(err)
	}
	sd := side(dist, false, 0.5)
	y0 := 0
	if banded {
		// As uploadBands: the upper half's rows (whole blocks of 32, if
		// any), then the rest of scale 0's decode.
		half := p[0].h / 2 / 32 * 32
		if half > 0 {
			if err := firstBand(&r.Rec, k, p, s, sd, s.img2, 0, half/2); err != nil {
				t.Fatal(err)
			}
			if err := r.Rec.Launch(&k.hDist, tiles(half), tb, py[0].img, s.img2, s.hb, p[0].w, p[0].h, 0, half); err != nil {
				t.Fatal(err)
			}
		}
		if err := firstBand(&r.Rec, k, p, s, sd, s.img2, half/2, p[1].h); err != nil {
			t.Fatal(err)
		}
		y0 = half
	}
	if err := queueView(&r.Rec, k, p, s, sd, py, 0, banded, y0); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	r.Run.Dump(s.tot, numScales*3*numTerms*8)
	out := r.Run.Run()
	return (&stripRun{p: &stripPlan{w: p[0].w, full: p}}).score(out[0], 1)
}

// TestEmulatedAllScales runs ssim2.cu on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1): the score as Score queues it (one launch
// per pass for every scale, the pyramids in one buffer each, the next
// tile's loads in flight while the current one is filtered) against the
// per-scale launches of the same kernels (queueWhole) and cpu/ssim2.
// Tolerance: none against the per-scale launches (each scale is the same
// arithmetic in the same order, only launched together), 1e-12 against
// the CPU (the per-column summation order, ~1e-13). The sizes give
// horizontal passes several tiles wide (HT = 64 columns), vertical passes
// several tiles tall, odd sizes, fewer than six scales, and widths that
// are multiples of 4 (the vertical pass's float4 loads) and not.
func TestEmulatedAllScales(t *testing.T) {
	emu := cudaemu.Build(t, source())
	for i, c := range []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{150, 130, zenmetrics.RGB8}, // six scales, the last 5×5
		{160, 130, zenmetrics.RGB8}, // rows of 16 bytes at scales 0–3 (float4 loads in the vertical pass), not at 4–5
		{70, 41, zenmetrics.Gray16}, // four scales
	} {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(70+i), c.f)
		want := emulateWhole(t, emu, ref, dist)
		cpu, err := cpussim2.Score(ref, dist, cpussim2.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, banded := range []bool{false, true} {
			got := emulateAll(t, emu, ref, dist, banded)
			name := fmt.Sprintf("%dx%d_%v_bands%v", c.w, c.h, c.f, banded)
			t.Logf("%s: %d scales: %.17g, per-scale launches %.17g, cpu %.17g", name, len(plan(c.w, c.h)), got, want, cpu)
			if got != want || math.IsNaN(got) || math.Abs(got-cpu) > 1e-12 {
				t.Errorf("%s: %.17g, per-scale launches %.17g (cpu %.17g)", name, got, want, cpu)
			}
		}
	}
}
