package butteraugli

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuba "github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEmulated runs butteraugli.cu on the CPU (cudaemu.Emulator: g++
// and a shim; device memory starts as NaN, unbalanced __syncthreads are
// reported), replaying the launch sequences queuePrepare and queueScore
// record (the host code Prepare and Score run), and checks the scores
// against cpu/butteraugli (1e-5 relative) and the maps bit for bit. Opt-in
// (ZENMETRICS_CUDA_EMULATE=1): it needs g++ and takes seconds per pair.
// The sizes include images of several tiles each way with partial tiles
// at the right and bottom of the kernels that compute several outputs per
// thread (rows_hf, rows_uhf, rows_mask: 256 columns by 8 rows; cols_mf,
// cols_uhf, cols_mask and malta_*: 32 rows of 32 columns; opsin: 16 rows
// of 32 columns), odd sizes, alpha, and p-norms 2 and 3.
func TestEmulated(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		opt    zenmetrics.Options
	}{
		{64, 48, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 2}},
		{37, 29, zenmetrics.RGB16, zenmetrics.RGB16, zenmetrics.Options{IntensityTarget: 250, PNorm: 3}},
		{15, 17, zenmetrics.Gray8, zenmetrics.Gray8, zenmetrics.Options{}},
		{8, 8, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{}},
		{40, 33, zenmetrics.RGBA8, zenmetrics.RGBA8, zenmetrics.Options{PNorm: 1.5}},
		{33, 40, zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.Options{}},
		{30, 26, zenmetrics.GrayA8, zenmetrics.Gray16, zenmetrics.Options{}},
		{131, 70, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 6}},
		// Several tiles each way, partial at the right and bottom.
		{301, 99, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 2}},
		{263, 70, zenmetrics.RGBA8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 3}},
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.df)
		name := fmt.Sprintf("%dx%d_%v_%v", c.w, c.h, c.rf, c.df)
		got, dm := emulate(t, emu, ref, dist, c.opt)
		want, err := cpuba.Compare(ref, dist, cpuba.Config{IntensityTarget: c.opt.IntensityTarget, PNorm: c.opt.PNorm, DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		worst, differ := 0.0, 0
		for j, v := range dm {
			worst = math.Max(worst, math.Abs(float64(v)-float64(want.DistMap[j])))
			if math.Float32bits(v) != math.Float32bits(want.DistMap[j]) {
				differ++
			}
		}
		e := [3]float64{relDiff(got[0], want.Max), relDiff(got[1], want.PNorm3), relDiff(got[2], want.PNorm)}
		t.Logf("%s: max %.9f (cpu %.9f) 3-norm %.9f (cpu %.9f) p-norm %.9f (cpu %.9f); rel %.2g %.2g %.2g, map |Δ| %.2g, %d of %d map values differ",
			name, got[0], want.Max, got[1], want.PNorm3, got[2], want.PNorm, e[0], e[1], e[2], worst, differ, len(dm))
		if e[0] > 1e-5 || e[1] > 1e-5 || e[2] > 1e-5 || worst > 1e-5*want.Max || math.IsNaN(got[0]+got[1]+got[2]) {
			t.Errorf("%s: emulated kernels differ from the CPU reference", name)
		}
		if len(dm) != len(want.DistMap) || differ > 0 {
			t.Errorf("%s: the emulated map is not bit-identical to the CPU reference's", name)
		}
	}
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// emulate records one prepare and score, replays them with the emulator
// and returns (max, 3-norm, p-norm) and the map.
func emulate(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image, opt zenmetrics.Options) ([3]float64, []float32) {
	t.Helper()
	k := newKernels()
	it, err := checkOptions(opt)
	if err != nil {
		t.Fatal(err)
	}
	w, h := ref.Width, ref.Height
	lv := levels(w, h)
	fa := cudatest.NewFake()
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	var sets [][]planeSet
	for v := 0; v < variants; v++ {
		var s []planeSet
		for _, l := range lv {
			n := 4 * int64(l.w) * int64(l.h)
			s = append(s, newSet(func() *cuda.Buffer { return fa.Alloc(n) }, true))
		}
		sets = append(sets, s)
	}
	luts := [3]*cuda.Buffer{nil, fa.Alloc(4 * 256), fa.Alloc(4 * 65536)}
	s := &slot{}
	fillSlot(s, lv, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	run := emu.Session(t, fa.Bufs)
	run.Upload(luts[1], lutTable(1))
	run.Upload(luts[2], lutTable(2))
	run.Upload(s.raw, ref.Pix[:cuda.RawBytes(ref)])
	var r cudaemu.Recorder
	rl := layoutOf(ref)
	if err := queuePrepare(&r, k, lv, float32(it), s, luts[rl.bps], rl, sets); err != nil {
		t.Fatal(err)
	}
	run.Replay(r.L)
	run.Upload(s.raw, dist.Pix[:cuda.RawBytes(dist)])
	r.L = nil
	dl := layoutOf(dist)
	if err := queueScore(&r, k, lv, float32(it), s, luts[dl.bps], dl, sets, opt.PNorm); err != nil {
		t.Fatal(err)
	}
	run.Replay(r.L)
	run.Dump(s.tot, 64)
	run.Dump(s.ws[0].dm, 4*int64(w*h))
	out := run.Run()
	tot, raw := out[0], out[1]
	var sums [8]float64
	for i := range sums {
		sums[i] = math.Float64frombits(binary.LittleEndian.Uint64(tot[8*i:]))
	}
	dm := make([]float32, w*h)
	for i := range dm {
		dm[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	n := float64(w * h)
	res := [3]float64{sums[0], norm(sums[1:4], n, 3), 0}
	if opt.PNorm > 0 {
		res[2] = norm(sums[4:7], n, opt.PNorm)
	}
	return res, dm
}
