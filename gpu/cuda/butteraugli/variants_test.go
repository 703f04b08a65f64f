package butteraugli

import (
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuba "github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEmulatedVariants runs the original kernels and the faster ones
// (butteraugli_fast.cu) on the CPU (cudaemu, opt-in with
// ZENMETRICS_CUDA_EMULATE=1) over images of several of the new kernels'
// tiles each way, with odd sizes and partial tiles at the right and
// bottom (rows_*_v2: 256 columns, cols_*_v2 and malta_*_v2: 32 rows of
// 32 columns): the maps must be bit-identical (the new kernels only
// regroup the work) and the scores equal; both are checked against
// cpu/butteraugli as TestEmulated does.
func TestEmulatedVariants(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		opt    zenmetrics.Options
	}{
		{301, 99, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 2}},
		{263, 70, zenmetrics.RGBA8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 3}},
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(70+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(70+i), c.df)
		want, err := cpuba.Compare(ref, dist, cpuba.Config{IntensityTarget: c.opt.IntensityTarget, PNorm: c.opt.PNorm, DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		var base []float32
		var baseRes [3]float64
		for _, v := range []variant{{}, {malta: true, blur: true}} {
			name := fmt.Sprintf("%dx%d_%v_%v_%v", c.w, c.h, c.rf, c.df, v)
			got, dm := emulateK(t, emu, newKernelsV(v), ref, dist, c.opt)
			worst, differ := 0.0, 0
			for j, x := range dm {
				worst = math.Max(worst, math.Abs(float64(x)-float64(want.DistMap[j])))
				if base != nil && math.Float32bits(x) != math.Float32bits(base[j]) {
					differ++
				}
			}
			e := [3]float64{relDiff(got[0], want.Max), relDiff(got[1], want.PNorm3), relDiff(got[2], want.PNorm)}
			t.Logf("%s: max %.9f 3-norm %.9f p-norm %.9f; vs cpu rel %.2g %.2g %.2g, map |Δ| %.2g; %d map values differ from the original kernels'",
				name, got[0], got[1], got[2], e[0], e[1], e[2], worst, differ)
			if e[0] > 1e-5 || e[1] > 1e-5 || e[2] > 1e-5 || worst > 1e-5*want.Max || math.IsNaN(got[0]+got[1]+got[2]) {
				t.Errorf("%s: emulated kernels differ from the CPU reference", name)
			}
			if base == nil {
				base, baseRes = dm, got
			} else if differ > 0 || got != baseRes {
				t.Errorf("%s: the faster kernels differ from the original ones", name)
			}
		}
	}
}
