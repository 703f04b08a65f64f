package cvvdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// Emulation tolerances against cpu/cvvdp. The kernels do its float32
// operations in its order, evaluate its powers, logarithms and
// exponentials from its own tables and polynomials in double (so they
// round to the same float32), and add its float64 sums in its order: the
// band sums and so the JOD are expected bit-identical (measured: all of
// them are), and are compared as such. The distortion map is the one
// exception, by design: its last step is written as jod_loss(v)/10 (the
// formulation the WebGPU kernels need), where the CPU computes
// 1 − (10 − loss)/10; the two differ by the rounding of 10 − loss
// (≤ ulp(10)/2 = 4.8e-7, divided by 10) and of the two divisions and the
// subtraction (≤ 3 × ulp(1)/2 near 1): below 2.5e-7 absolute.
const emuTolMap = 2.5e-7

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

// emuCase is one pair the emulation scores.
type emuCase struct {
	w, h    int
	rf, df  zenmetrics.PixelFormat
	pad     bool
	display string
}

// TestEmulated runs cvvdp.cu on the CPU (cudaemu.Emulator: g++ and a
// shim; device memory starts as NaN, unbalanced __syncthreads are
// reported), replaying the launch sequences the host code records (the
// unpack in chunks as an overlapped upload queues it, queueReference,
// queueDistorted with the map), and checks every band's sums (bit for
// bit), the JOD (bit for bit) and the map (emuTolMap) against cpu/cvvdp
// on fresh random pairs: odd and tiny sizes, sizes whose levels halve
// with remainders, every kind of pixel format, padded strides, displays
// with few bands (a large base band, unblurred bands) and HLG's per-pixel
// OOTF. Opt-in (ZENMETRICS_CUDA_EMULATE=1): it needs g++ and takes
// seconds.
func TestEmulated(t *testing.T) {
	emu := cudaemu.Build(t, source())
	cases := []emuCase{
		{64, 48, zenmetrics.RGB8, zenmetrics.RGB8, false, ""},
		{131, 77, zenmetrics.RGBA8, zenmetrics.RGBA8, false, ""},
		{37, 29, zenmetrics.RGB16, zenmetrics.RGB16, true, ""},
		{15, 17, zenmetrics.Gray8, zenmetrics.Gray8, false, ""},
		{40, 33, zenmetrics.RGBA16, zenmetrics.RGBA16, false, ""},
		{33, 40, zenmetrics.RGB8, zenmetrics.RGBA16, true, ""},
		{30, 26, zenmetrics.GrayA8, zenmetrics.Gray16, false, ""},
		{70, 90, zenmetrics.GrayA16, zenmetrics.RGB8, false, ""},
		{2, 2, zenmetrics.RGB8, zenmetrics.RGB8, false, ""},
		{3, 2, zenmetrics.RGB8, zenmetrics.RGB8, false, ""},
		{100, 2, zenmetrics.RGBA8, zenmetrics.RGBA8, false, ""},
		{5, 41, zenmetrics.RGB8, zenmetrics.RGB8, true, ""},
		{7, 7, zenmetrics.RGB8, zenmetrics.RGB8, false, ""},
		{97, 33, zenmetrics.RGB8, zenmetrics.RGB8, false, "standard_phone"},
		{90, 70, zenmetrics.RGB16, zenmetrics.RGB16, false, "standard_hdr_hlg"},
		{61, 47, zenmetrics.Gray8, zenmetrics.Gray8, false, "standard_hdr_hlg"},
		{80, 64, zenmetrics.RGBA16, zenmetrics.RGBA16, false, "standard_hdr_pq"},
		{150, 110, zenmetrics.RGB8, zenmetrics.RGB8, false, "standard_hmd"},
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.df)
		if c.pad {
			ref, dist = padded(ref), padded(dist)
		}
		checkEmulated(t, emu, fmt.Sprintf("%dx%d_%v_%v_%q", c.w, c.h, c.rf, c.df, c.display), ref, dist, c.display)
	}
	// An image against itself: every difference 0, JOD exactly 10, the
	// map exactly 0.
	ref, _ := metrictest.Synthetic(45, 39, 9, zenmetrics.RGB8)
	jod, dm := checkEmulated(t, emu, "identical", ref, ref, "")
	if jod != 10 {
		t.Errorf("identical: JOD %v, want 10", jod)
	}
	for i, v := range dm {
		if v != 0 {
			t.Fatalf("identical: map[%d] = %v, want 0", i, v)
		}
	}
}

// checkEmulated scores one pair with the emulator and compares it with
// cpu/cvvdp; it returns the emulated JOD and map.
func checkEmulated(t *testing.T, emu *cudaemu.Emulator, name string, ref, dist *zenmetrics.Image, display string) (float64, []float32) {
	t.Helper()
	p, err := cpucv.NewPlan(ref.Width, ref.Height, display)
	if err != nil {
		t.Fatal(err)
	}
	sums, dm := emulate(t, emu, p, ref, dist)
	got := p.JOD(sums)
	r, err := cpucv.Prepare(ref, cpucv.Config{Display: display, DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	want, err := r.ScoreContext(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	wsums, err := r.BandSums(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for b := range sums {
		for c := 0; c < nCh; c++ {
			if math.Float64bits(sums[b][c]) != math.Float64bits(wsums[b][c]) {
				differ++
				t.Errorf("%s: band %d channel %d: sum %v, cpu %v", name, b, c, sums[b][c], wsums[b][c])
			}
		}
	}
	worst, mdiff := 0.0, 0
	for j, v := range dm {
		if d := math.Abs(float64(v) - float64(want.DistMap.Pix[j])); d > 0 || math.IsNaN(d) {
			mdiff++
			worst = math.Max(worst, d)
			if math.IsNaN(d) {
				worst = math.Inf(1)
			}
		}
	}
	t.Logf("%s: %d bands, JOD %.9f (cpu %.9f, Δ %.2g); %d sums differ; map: %d of %d values differ (max |Δ| %.2g)",
		name, p.Levels, got, want.JOD, got-want.JOD, differ, mdiff, len(dm), worst)
	if math.Float64bits(got) != math.Float64bits(want.JOD) || !(worst <= emuTolMap) {
		t.Errorf("%s: emulated kernels differ from the CPU reference", name)
	}
	return got, dm
}

// emulate records one prepare and one score (with the map), replays them
// with the emulator and returns the band sums and the map.
func emulate(t *testing.T, emu *cudaemu.Emulator, p *cpucv.Plan, ref, dist *zenmetrics.Image) ([][nCh]float64, []float32) {
	t.Helper()
	w, h := p.W[0], p.H[0]
	fa := cudatest.NewFake()
	rb := fakeRef(fa, p)
	s := &slot{}
	fillSlot(s, p, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), true, fa.Alloc)
	run := emu.Session(t, fa.Bufs)
	k := newKernels()
	side := func(im *zenmetrics.Image, tail func(r *cudaemu.Recorder) error) {
		total := cuda.RawBytes(im)
		run.Upload(s.raw, im.Pix[:total])
		var r cudaemu.Recorder
		ready := unpacker(&r, k, p, 0, h, total, layoutOf(im), rb, s)
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
	run.Upload(rb.lut, f32Bytes(lutFloats(p)))
	run.Upload(rb.kb, f32Bytes(kbFloats(p)))
	side(ref, func(r *cudaemu.Recorder) error { return queueReference(r, k, p, s, rb) })
	side(dist, func(r *cudaemu.Recorder) error { return queueDistorted(r, k, p, s, rb) })
	run.Dump(s.res, resBytes(p))
	run.Dump(s.mm, 4*int64(w*h))
	out := run.Run()
	dm := make([]float32, w*h)
	for i := range dm {
		dm[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[1][4*i:]))
	}
	return readSums(p, out[0]), dm
}

// TestEmulatedTiny runs the emulation on testdata/tiny: for each of its
// references (two 256×256 RGB crops, a 512×512 grey image) the first
// distorted image of scores_cvvdp_iwssim.tsv, held to cpu/cvvdp as in
// TestEmulated (band sums and JOD bit for bit, the map within emuTolMap)
// and to pycvvdp 0.5.4's cvvdp_jod within tolGolden. One pair per
// reference: the emulator runs a thread per CUDA thread, minutes for all
// nine pairs (with -short only the first reference). Opt-in like
// TestEmulated.
func TestEmulatedTiny(t *testing.T) {
	emu := cudaemu.Build(t, source())
	dir := shared.Testdata(t, "tiny")
	tab, err := shared.ReadTSV(filepath.Join(dir, "scores_cvvdp_iwssim.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range tab.Rows {
		rp, dp := tab.Get(i, "ref"), tab.Get(i, "dist")
		if seen[rp] || (testing.Short() && len(seen) > 0) {
			continue
		}
		seen[rp] = true
		want, err := strconv.ParseFloat(tab.Get(i, "cvvdp_jod"), 64)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := imageio.DecodeFile(filepath.Join(dir, rp))
		if err != nil {
			t.Fatal(err)
		}
		dist, err := imageio.DecodeFile(filepath.Join(dir, dp))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := checkEmulated(t, emu, dp, ref, dist, "")
		d := math.Abs(got - want)
		t.Logf("%s: %.7f, pycvvdp %.7f, |Δ| %.2g", dp, got, want, d)
		if !(d <= tolGolden) {
			t.Errorf("%s: |Δ| %.3g from pycvvdp > %g", dp, d, tolGolden)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no pairs in testdata/tiny")
	}
}
