package zensim

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// Emulation tolerances against cpu/zensim: none. The kernels do its
// float32 operations in its order and its float64 sums in its order, so
// the 228 features and the score are bit-identical (measured: all of
// them, on every case below), and anything less is a slip: making the
// one fused multiply-add of the SSIM numerator's 1 − m² a plain product
// and subtraction moves 14 of the 3078 features by up to 1.3e-9 relative
// and a score by 2.5e-8, which a tolerance as small as 1e-9 would let
// through. The one legitimate difference would be a halfway tie where
// cpu/zensim's fused multiply-add, computed in float64 and rounded again,
// differs from fmaf's single rounding (about once in 2^29 operations):
// the inputs are fixed seeds, none of them hits one, and a new case that
// does would show as a last-bit difference of one pixel's values (score
// |Δ| ~1e-7), for a reader to recognise.
const (
	emuTolFeature = 0.0
	emuTolScore   = 0.0
)

// padded is im with 7 spare bytes of garbage (0xA5) per row: a stride
// the kernels must honour, and bytes they must not read.
func padded(im *zenmetrics.Image) *zenmetrics.Image {
	row := im.Width * im.Format.BytesPerPixel()
	out := &zenmetrics.Image{Width: im.Width, Height: im.Height, Format: im.Format, Stride: row + 7}
	out.Pix = make([]byte, out.Stride*im.Height)
	for i := range out.Pix {
		out.Pix[i] = 0xA5
	}
	for y := 0; y < im.Height; y++ {
		copy(out.Pix[y*out.Stride:], im.Pix[y*im.Stride:y*im.Stride+row])
	}
	return out
}

// emulate records one prepare and score as Prepare and ScoreDetail queue
// them (the conversion in chunks, as an overlapped upload queues it),
// replays them with the emulator and pools the read-back.
func emulate(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image) *cpuz.Result {
	t.Helper()
	w, h := ref.Width, ref.Height
	g := newGeom(w, h, nil)
	dims := g.img
	fa := cudatest.NewFake()
	tab, rp := fakeRef(fa, dims)
	s := &slot{}
	fillSlot(s, g, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	run := emu.Session(t, fa.Bufs)
	k := newKernels()
	side := func(im *zenmetrics.Image, cmp, out, flag *cuda.Buffer, tail func(r *cudaemu.Recorder) error) {
		total := cuda.RawBytes(im)
		run.Upload(s.raw, im.Pix[:total])
		var r cudaemu.Recorder
		ready := converter(&r, k, w, h, &g.bands[0], total, layoutOf(im), s.raw, tab, cmp, out, flag)
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
	run.Upload(tab, tabBytes())
	side(ref, nil, rp[0], nil, func(r *cudaemu.Recorder) error { return queuePyramid(r, k, dims, rp) })
	run.Upload(s.flag, make([]byte, 4)) // Stream.Zero
	side(dist, rp[0], s.dist[0], s.flag, func(r *cudaemu.Recorder) error {
		if err := queuePyramid(r, k, dims, s.dist); err != nil {
			return err
		}
		return queueStats(r, k, g, s, rp)
	})
	run.Dump(s.res, resBytes)
	run.Dump(s.flag, 4)
	out := run.Run()
	return pool(w, h, len(dims), append(out[0], out[1]...))
}

// cpuDetail is cpu/zensim's result for the pair.
func cpuDetail(t *testing.T, ref, dist *zenmetrics.Image) *cpuz.Result {
	t.Helper()
	r, err := cpuz.Prepare(ref, cpuz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	want, err := r.ScoreDetail(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// diffResults compares a result with the CPU's: the features that are
// not bit-identical, the largest relative difference of a feature, and
// |Δ| of the score; an error when beyond the given tolerances.
func diffResults(name string, got, want *cpuz.Result, tolFeature, tolScore float64) (differ int, worst, ds float64, err error) {
	if len(got.Features) != len(want.Features) {
		return 0, 0, 0, fmt.Errorf("%s: %d features, the CPU %d", name, len(got.Features), len(want.Features))
	}
	for i, v := range want.Features {
		g := got.Features[i]
		if math.Float64bits(g) == math.Float64bits(v) {
			continue
		}
		differ++
		e := math.Abs(g-v) / math.Max(math.Abs(v), 1e-3)
		if math.IsNaN(g) {
			e = math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	ds = math.Abs(got.Score - want.Score)
	if worst > tolFeature || !(ds <= tolScore) {
		err = fmt.Errorf("%s: score %.15g, cpu %.15g (|Δ| %.3g); %d features differ, worst relative %.3g",
			name, got.Score, want.Score, ds, differ, worst)
	}
	return differ, worst, ds, err
}

// TestEmulated runs zensim.cu on the CPU (cudaemu.Emulator: g++ and a
// shim; device memory starts as NaN, unbalanced __syncthreads are
// reported), replaying the launch sequences the host code records, and
// checks the 228 features and the score against cpu/zensim on fresh
// seeded pairs: every pixel format, mixed formats, padded strides, the
// 8×8 minimum, odd sizes whose scales leave scalar tails (pw mod 8 ≠ 0 at
// scales 2 and 3), strips and XYB chunks with remainders, a width past
// 512 (zensim's extra 16 padded columns), more strips than merge's batch
// (MB = 32), and identical images. Opt-in
// (ZENMETRICS_CUDA_EMULATE=1): it needs g++ and takes about 3 minutes (one
// OS thread per emulated CUDA thread).
func TestEmulated(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		pad    bool
	}{
		{8, 8, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{9, 13, zenmetrics.RGBA8, zenmetrics.RGBA8, true},
		{40, 40, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{37, 29, zenmetrics.RGB16, zenmetrics.RGB16, true},
		{97, 70, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{97, 70, zenmetrics.RGBA8, zenmetrics.RGBA8, false},
		{66, 67, zenmetrics.Gray8, zenmetrics.Gray8, false},
		{70, 66, zenmetrics.GrayA8, zenmetrics.GrayA8, true},
		{64, 65, zenmetrics.Gray16, zenmetrics.Gray16, false},
		{75, 64, zenmetrics.GrayA16, zenmetrics.GrayA16, false},
		{72, 80, zenmetrics.RGBA16, zenmetrics.RGBA16, false},
		{33, 40, zenmetrics.RGB8, zenmetrics.RGBA16, true},
		{30, 26, zenmetrics.GrayA8, zenmetrics.Gray16, false},
		{500, 20, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{131, 138, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{260, 70, zenmetrics.RGB16, zenmetrics.RGB16, true}, // 2-column last blur tile at scale 3
		{40, 530, zenmetrics.RGB8, zenmetrics.RGB8, false},  // 34 strips at scale 0: merge's second batch of MB
	}
	differ, n, worst, worstScore := 0, 0, 0.0, 0.0
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		name := fmt.Sprintf("%dx%d_%v_%v", c.w, c.h, c.rf, c.df)
		got := emulate(t, emu, ref, dist)
		want := cpuDetail(t, ref, dist)
		d, wf, ds, err := diffResults(name, got, want, emuTolFeature, emuTolScore)
		t.Logf("%s: zensim %.12f (cpu %.12f, |Δ| %.2g); %d of %d features not bit-identical (worst rel %.2g)",
			name, got.Score, want.Score, ds, d, len(want.Features), wf)
		if err != nil {
			t.Error(err)
		}
		if got.Score == 100 {
			t.Errorf("%s: different images score 100", name)
		}
		differ, n = differ+d, n+len(want.Features)
		worst, worstScore = math.Max(worst, wf), math.Max(worstScore, ds)
	}
	// testdata/tiny: a 256×256 photo crop under JPEG q20 and JPEG XL d1.
	dir := filepath.Join("..", "..", "..", "testdata", "tiny")
	src, err := imageio.DecodeFile(filepath.Join(dir, "astronaut_crop256__ref.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"astronaut_crop256__jpeg_q20.png", "astronaut_crop256__jxl_d1.png"} {
		dist, err := imageio.DecodeFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, want := emulate(t, emu, src, dist), cpuDetail(t, src, dist)
		d, wf, ds, err := diffResults(f, got, want, emuTolFeature, emuTolScore)
		t.Logf("%s: zensim %.12f (cpu %.12f, |Δ| %.2g); %d features not bit-identical", f, got.Score, want.Score, ds, d)
		if err != nil {
			t.Error(err)
		}
		differ, n = differ+d, n+len(want.Features)
		worst, worstScore = math.Max(worst, wf), math.Max(worstScore, ds)
	}
	// Identical images: the flag stays clear, exactly 100.
	ref, _ := metrictest.Synthetic(45, 38, 9, zenmetrics.RGBA8)
	if got := emulate(t, emu, ref, padded(ref)); got.Score != 100 {
		t.Errorf("identical images: %v, want 100", got.Score)
	}
	t.Logf("%d features in all: %d not bit-identical (worst relative %.3g); worst score |Δ| %.3g", n, differ, worst, worstScore)
}
