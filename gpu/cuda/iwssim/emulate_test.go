package iwssim

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// emuTolScore is the emulation's tolerance against cpu/iwssim, relative
// on the score. On amd64 it is 0, bit for bit: the kernels do the
// reference's float64 operations in its order, unfused (g++
// -ffp-contract=off here, NVRTC --fmad=false on a device), Go does not
// fuse on amd64 either, the logarithm is Go's own algorithm, and every
// sum runs in the reference's order (measured: every case identical).
// Where Go fuses multiply-adds itself (arm64, ppc64, s390x) the reference
// rounds some expressions once instead of twice: a few ulps per term,
// well under 1e-12 of a score.
func emuTolScore() float64 {
	if runtime.GOARCH == "amd64" {
		return 0
	}
	return 1e-12
}

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

// TestEmulated runs iwssim.cu on the CPU (cudaemu.Emulator: g++ and a
// shim; device memory starts as NaN, unbalanced __syncthreads are
// reported), replaying the launches the host code records (the unpack
// in chunks as an overlapped upload queues it, then queueScore) over the
// reference planes uploaded as Prepare uploads them, and checks the score
// against cpu/iwssim's. Fresh synthetic pairs of odd sizes (the minimum
// 161, sizes whose pyramid halvings round up at every level, sizes that
// leave a partial block and a partial terms round), every pixel format,
// padded strides and mixed formats; and pairs of testdata/tiny. Opt-in
// (ZENMETRICS_CUDA_EMULATE=1): it needs g++ and takes minutes (the
// emulator runs one OS thread per CUDA thread); -short leaves out the
// 512×512 pair.
func TestEmulated(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		pad    bool
	}{
		{161, 161, zenmetrics.RGB8, zenmetrics.RGB8, false},
		{177, 163, zenmetrics.RGBA8, zenmetrics.RGBA8, true},
		{161, 200, zenmetrics.Gray8, zenmetrics.Gray8, false},
		{193, 171, zenmetrics.RGB16, zenmetrics.RGB16, false},
		{170, 165, zenmetrics.GrayA16, zenmetrics.GrayA16, true},
		{289, 162, zenmetrics.RGBA16, zenmetrics.RGB8, false},
		{165, 181, zenmetrics.GrayA8, zenmetrics.Gray16, false},
	}
	tol := emuTolScore()
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(70+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(70+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		checkEmulated(t, emu, fmt.Sprintf("%dx%d_%v_%v", c.w, c.h, c.rf, c.df), ref, dist, tol)
	}
	dir := shared.Testdata(t, "tiny")
	pairs := [][2]string{{"astronaut_crop256__ref.png", "astronaut_crop256__jpeg_q20.png"},
		{"coffee_crop256__ref.png", "coffee_crop256__webp_q75.png"}}
	if !testing.Short() {
		pairs = append(pairs, [2]string{"camera__ref.png", "camera__jxl_d1.png"})
	}
	for _, p := range pairs {
		ref, err := imageio.DecodeFile(filepath.Join(dir, p[0]))
		if err != nil {
			t.Fatal(err)
		}
		dist, err := imageio.DecodeFile(filepath.Join(dir, p[1]))
		if err != nil {
			t.Fatal(err)
		}
		checkEmulated(t, emu, p[1], ref, dist, tol)
	}
}

// checkEmulated compares one emulated score with cpu/iwssim's, and the
// distorted pyramid the kernels built (unpack and the four steps) with the
// CPU's pyramid of the distorted image (its Prepare's bands), bit for bit:
// those are single float64 operations in the reference's order on any
// architecture without fused multiply-adds in Go's code there, so the
// bands must match exactly where the score's tolerance is 0.
func checkEmulated(t *testing.T, emu *cudaemu.Emulator, name string, ref, dist *zenmetrics.Image, tol float64) {
	t.Helper()
	got, bands, err := emulate(t, emu, ref, dist)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dref, err := cpuiw.Prepare(dist, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	differ, worst := 0, 0.0
	for k, sd := range dref.Scales() {
		for i, v := range sd.Y {
			if math.Float64bits(v) != math.Float64bits(bands[k][i]) {
				differ++
				worst = math.Max(worst, math.Abs(v-bands[k][i]))
			}
		}
	}
	dref.Release()
	if differ > 0 {
		t.Logf("%s: %d pyramid values differ from the CPU's (max |Δ| %.3g)", name, differ, worst)
		if tol == 0 {
			t.Errorf("%s: the distorted pyramid is not the CPU's bit for bit", name)
		}
	}
	want, err := cpuiw.Score(ref, dist, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d := math.Abs(got - want)
	t.Logf("%s: iwssim %.17g (cpu %.17g, Δ %.3g, %d ulp)", name, got, want, got-want,
		int64(math.Float64bits(got))-int64(math.Float64bits(want)))
	if !(d <= tol*math.Abs(want)) {
		t.Errorf("%s: emulated kernels differ from the CPU reference by %.3g (tolerance %g relative)", name, d, tol)
	}
}

// emulate prepares ref with cpu/iwssim, uploads its planes as Prepare
// does, records one score of dist, replays it with the emulator and pools
// the row sums as Score does; it also returns the distorted pyramid (band
// k, the low-pass at the last scale).
func emulate(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image) (float64, [nScales][]float64, error) {
	t.Helper()
	w, h := ref.Width, ref.Height
	gm := newGeometry(w, h)
	cref, err := cpuiw.Prepare(ref, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cref.Release()
	fa := newFake()
	var rp refPlanes
	fillRef(&rp, w, h, fa.Alloc)
	data := cref.Scales()
	if err := rp.check(gm, data); err != nil {
		t.Fatal(err)
	}
	total := cuda.RawBytes(dist)
	s := &slot{}
	fillSlot(s, w, h, total, fa.Alloc)
	run := emu.Session(t, fa.Bufs)
	if err := uploadRef(func(b *cuda.Buffer, p []byte) error { run.Upload(b, p); return nil }, &rp, data); err != nil {
		t.Fatal(err)
	}
	run.Upload(s.raw, dist.Pix[:total])
	var r cudaemu.Recorder
	k := newKernels()
	ready := unpacker(&r, k, w, h, total, layoutOf(dist), s)
	// As an overlapped upload in chunks of 37 rows and a bit.
	for _, end := range chunkEnds(total, 37*int64(dist.Stride)+3) {
		if err := ready(end); err != nil {
			t.Fatal(err)
		}
	}
	if err := queueScore(&r, k, gm, s, &rp); err != nil {
		t.Fatal(err)
	}
	run.Replay(r.L)
	run.Dump(s.sums, sumsBytes(gm))
	for k, sg := range gm.s {
		run.Dump(s.x[k], 8*int64(sg.w)*int64(sg.h))
	}
	out := run.Run()
	f64s := func(b []byte) []float64 {
		v := make([]float64, len(b)/8)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return v
	}
	var bands [nScales][]float64
	for k := range bands {
		bands[k] = f64s(out[1+k])
	}
	v, err := pool(gm, f64s(out[0]))
	return v, bands, err
}
