package dssim

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpudssim "github.com/zenmetrics-go/zenmetrics/cpu/dssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Emulation tolerances against cpu/dssim. The kernels do its float32
// operations in its order and its double sums in its order, so the SSIM
// maps and scores are expected bit-identical (measured: all of them
// are). Two things may still move a last bit, rarely: cpu/dssim's
// fused multiply-add goes through float64 (a double rounding that differs
// from fmaf only on an exact halfway tie: one ulp of a map value, ~6e-8
// near 1), and the device's pow (glibc's here, CUDA's on a GPU) may be an
// ulp from Go's (the host then moves the deviation sum, ~1e-16). So: map
// values within 1e-6, scores within 1e-12 absolute, and the counts of
// differing values logged.
const (
	emuTolMap   = 1e-6
	emuTolScore = 1e-12
)

// padded is im with 7 spare bytes per row (a stride the kernels must
// honour).
func padded(im *zenmetrics.Image) *zenmetrics.Image {
	row := im.Width * im.Format.BytesPerPixel()
	out := &zenmetrics.Image{Width: im.Width, Height: im.Height, Format: im.Format, Stride: row + 7}
	out.Pix = make([]byte, out.Stride*im.Height)
	for y := 0; y < im.Height; y++ {
		copy(out.Pix[y*out.Stride:], im.Pix[y*im.Stride:y*im.Stride+row])
	}
	return out
}

// TestEmulated runs dssim.cu on the CPU (cudaemu.Emulator: g++ and a
// shim; device memory starts as NaN, unbalanced __syncthreads are
// reported), replaying the launch sequences the host code records (the
// unpack in chunks as an overlapped upload queues it, queueReference,
// queueDistorted), and checks scale 0's SSIM map, every scale's mean and
// the score against cpu/dssim. Opt-in (ZENMETRICS_CUDA_EMULATE=1): it
// needs g++ and takes seconds.
func TestEmulated(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		pad    bool
	}{
		{64, 48, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{131, 77, zenmetrics.RGBA8, zenmetrics.RGBA8, false},
		{37, 29, zenmetrics.RGB16, zenmetrics.RGB16, true},
		{15, 17, zenmetrics.Gray8, zenmetrics.Gray8, false},
		{40, 33, zenmetrics.RGBA16, zenmetrics.RGBA16, false},
		{33, 40, zenmetrics.RGB8, zenmetrics.RGBA16, true},
		{30, 26, zenmetrics.GrayA8, zenmetrics.Gray16, false},
		{70, 90, zenmetrics.GrayA16, zenmetrics.RGB8, false},
		{1, 1, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{100, 1, zenmetrics.RGBA8, zenmetrics.RGBA8, false},
		{2, 3, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{7, 40, zenmetrics.RGBA8, zenmetrics.RGBA8, false},
		{17, 8, zenmetrics.RGB8, zenmetrics.RGB8, true},
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		name := fmt.Sprintf("%dx%d_%v_%v", c.w, c.h, c.rf, c.df)
		got, means, dm := emulate(t, emu, ref, dist)
		r, err := cpudssim.Prepare(ref, cpudssim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.ScoreDetail(context.Background(), dist)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		worst, differ := 0.0, 0
		for j, v := range dm {
			if v != want.Scales[0].Map[j] {
				differ++
				worst = math.Max(worst, math.Abs(float64(v)-float64(want.Scales[0].Map[j])))
			}
		}
		meanDiff := 0
		for sc, m := range means {
			if m != want.Scales[sc].Mean {
				meanDiff++
			}
		}
		t.Logf("%s: dssim %.12g (cpu %.12g, Δ %.2g); map: %d of %d values differ (max |Δ| %.2g); %d of %d scale means differ",
			name, got, want.Value, got-want.Value, differ, len(dm), worst, meanDiff, len(means))
		if math.Abs(got-want.Value) > emuTolScore || worst > emuTolMap || math.IsNaN(got) || len(means) != len(want.Scales) {
			t.Errorf("%s: emulated kernels differ from the CPU reference", name)
		}
	}
}

// emulate records one prepare and score, replays it with the emulator and
// returns the DSSIM, every scale's map mean and scale 0's map.
func emulate(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image) (float64, []float64, []float32) {
	t.Helper()
	w, h := ref.Width, ref.Height
	dims := scaleDims(w, h)
	fa := cudatest.NewFake()
	lut, planes := fakeRef(fa, w, h)
	s := &slot{}
	fillSlot(s, w, h, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	run := emu.Session(t, fa.Bufs)
	k := newKernels()
	side := func(im *zenmetrics.Image, tail func(r *cudaemu.Recorder) error) {
		total := cuda.RawBytes(im)
		run.Upload(s.raw, im.Pix[:total])
		var r cudaemu.Recorder
		ready := unpacker(&r, k, w, h, 0, total, layoutOf(im), lut, s)
		// As an overlapped upload in chunks of 5 rows and a bit.
		for _, end := range cudatest.ChunkEnds(total, 5*int64(im.Stride)+3) {
			if err := ready(end); err != nil {
				t.Fatal(err)
			}
		}
		if err := tail(&r); err != nil {
			t.Fatal(err)
		}
		run.Replay(r.L)
	}
	run.Upload(lut, lutBytes())
	side(ref, func(r *cudaemu.Recorder) error { return queueReference(r, k, dims, layoutOf(ref).alpha, 0, s, &planes) })
	side(dist, func(r *cudaemu.Recorder) error { return queueDistorted(r, k, dims, layoutOf(dist).alpha, s, &planes) })
	run.Dump(s.res, resBytes)
	run.Dump(s.maps[0], 4*int64(w*h))
	out := run.Run()
	res := make([]float64, 8*maxScales)
	for i := range res {
		res[i] = math.Float64frombits(binary.LittleEndian.Uint64(out[0][8*i:]))
	}
	dm := make([]float32, w*h)
	for i := range dm {
		dm[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*i:]))
	}
	means := make([]float64, len(dims))
	for sc := range dims {
		means[sc] = res[8*sc]
	}
	return pool(dims, res), means, dm
}
