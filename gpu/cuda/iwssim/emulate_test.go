package iwssim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudaemu"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda/internal/cudatest"
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
// reported), replaying the launches the host code records for a
// preparation (the unpack in chunks as an overlapped upload queues it,
// queueReference, the host's model from the covariance sums, queueMahal)
// and a score (unpack, queueScore), and checks every reference plane, the
// distorted pyramid and the score against cpu/iwssim's (checkEmulated).
// Fresh synthetic pairs of odd sizes (the minimum 161, sizes whose
// pyramid halvings round up at every level, sizes that leave a partial
// block and a partial terms round), every pixel format, padded strides
// and mixed formats; and pairs of testdata/tiny. Opt-in
// (ZENMETRICS_CUDA_EMULATE=1): it needs g++ and takes minutes (the
// emulator runs one OS thread per CUDA thread; give go test a -timeout
// of 30m); -short leaves out the 512×512 pair.
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

// checkEmulated compares one emulated preparation and score with
// cpu/iwssim's: every plane the reference keeps (bands, mu, vr, bm, bv,
// vᵀC⁻¹v/N) and λ/σ², bit for bit where tol is 0; the distorted pyramid
// against the CPU's pyramid of the distorted image (its Prepare's bands);
// and the score within tol relative.
func checkEmulated(t *testing.T, emu *cudaemu.Emulator, name string, ref, dist *zenmetrics.Image, tol float64) {
	t.Helper()
	e := emulate(t, emu, ref, dist)
	cref, err := cpuiw.Prepare(ref, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dref, err := cpuiw.Prepare(dist, cpuiw.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cref.Release()
	defer dref.Release()
	differ := func(what string, got, want []float64) {
		n, worst := 0, 0.0
		if len(got) != len(want) {
			t.Fatalf("%s: %s: %d values, want %d", name, what, len(got), len(want))
		}
		for i, v := range want {
			if math.Float64bits(v) != math.Float64bits(got[i]) {
				n++
				worst = math.Max(worst, math.Abs(v-got[i])/math.Max(math.Abs(v), 1e-300))
			}
		}
		if n > 0 {
			t.Logf("%s: %s: %d of %d values differ from the CPU's (max relative |Δ| %.3g)", name, what, n, len(want), worst)
			if tol == 0 {
				t.Errorf("%s: %s is not the CPU's bit for bit", name, what)
			}
		}
	}
	for k, sd := range cref.Scales() {
		differ(fmt.Sprintf("reference band %d", k), e.ref[k][0], sd.Y)
		for m, want := range [][]float64{sd.Mu, sd.Vr, sd.Bm, sd.Bv, sd.SS}[:mapsAt(k)] {
			differ(fmt.Sprintf("scale %d %s", k, []string{"mu", "vr", "bm", "bv", "ss"}[m]), e.ref[k][1+m], want)
		}
		if weighted(k) {
			differ(fmt.Sprintf("scale %d λ/σ²", k), e.lam[k], sd.LamScaled)
			if e.flat[k] != sd.Flat {
				t.Errorf("%s: scale %d: flat %v, the CPU's %v", name, k, e.flat[k], sd.Flat)
			}
		}
	}
	for k, sd := range dref.Scales() {
		differ(fmt.Sprintf("distorted band %d", k), e.bands[k], sd.Y)
	}
	want, err := cpuiw.Score(ref, dist, cpuiw.Config{})
	if err != nil || e.err != nil {
		// A refused pair (every weight zero at some scale): the same
		// refusal, word for word.
		t.Logf("%s: emulated %v; cpu %v", name, e.err, err)
		if err == nil || !errors.Is(e.err, zenmetrics.ErrBadInput) || e.err.Error() != err.Error() {
			t.Errorf("%s: emulated score %v, error %v; the CPU's error %v", name, e.score, e.err, err)
		}
		return
	}
	got := e.score
	d := math.Abs(got - want)
	t.Logf("%s: iwssim %.17g (cpu %.17g, Δ %.3g, %d ulp)", name, got, want, got-want,
		int64(math.Float64bits(got))-int64(math.Float64bits(want)))
	if !(d <= tol*math.Abs(want)) {
		t.Errorf("%s: emulated kernels differ from the CPU reference by %.3g (tolerance %g relative)", name, d, tol)
	}
}

// emulated is what one emulated preparation and score produced: the
// reference's planes per scale (y, mu, vr, bm, bv, ss), its λ/σ² and
// flatness, the distorted pyramid and the score or pool's error.
type emulated struct {
	ref   [nScales][][]float64
	lam   [nScales][]float64
	flat  [nScales]bool // the host's flatness decision per weighted scale
	bands [nScales][]float64
	score float64
	err   error // pool's refusal (every weight zero at some scale)
}

func f64s(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

// emulate replays what Prepare and Score queue: the reference's upload
// (its unpack in chunks as an overlapped upload queues it) and
// queueReference; the host's model from the dumped covariance sums; then,
// in a second session over the same buffers holding the first's results,
// the model's upload, queueMahal, the distorted image's upload and unpack
// and queueScore; and pools the row sums as Score does.
func emulate(t *testing.T, emu *cudaemu.Emulator, ref, dist *zenmetrics.Image) emulated {
	t.Helper()
	w, h := ref.Width, ref.Height
	gm := newGeometry(w, h)
	fa := cudatest.NewFake()
	var rp refPlanes
	fillRef(&rp, w, h, fa.Alloc)
	s := &slot{}
	fillSlot(s, w, h, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), fa.Alloc)
	k := newKernels()
	// upload records im's upload into s.raw and the unpack into dst as
	// the bytes arrive, in chunks of 37 rows and a bit.
	upload := func(run *cudaemu.Session, r *cudaemu.Recorder, im *zenmetrics.Image, dst *cuda.Buffer) {
		total := cuda.RawBytes(im)
		run.Upload(s.raw, im.Pix[:total])
		ready := unpacker(r, k, w, h, total, layoutOf(im), s.raw, dst)
		for _, end := range cudatest.ChunkEnds(total, 37*int64(im.Stride)+3) {
			if err := ready(end); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Phase 1: the reference up to the covariance sums.
	run := emu.Session(t, fa.Bufs)
	var r1 cudaemu.Recorder
	upload(run, &r1, ref, rp.y[0])
	if err := queueReference(&r1, k, gm, s, &rp, s.x[0]); err != nil {
		t.Fatal(err)
	}
	run.Replay(r1.L)
	_, ncov := covOffsets(gm)
	run.Dump(s.x[0], 8*int64(ncov))
	planes := rp.buffers()[1:] // y, mu, vr, bm, bv per scale (and ss, not written yet)
	for _, b := range planes {
		run.Dump(b, b.Size)
	}
	out := run.Run()
	m, err := model(gm, f64s(out[0]), &rp)
	if err != nil {
		t.Fatal(err)
	}
	// Phase 2: the model, vᵀC⁻¹v/N, then the score.
	run = emu.Session(t, fa.Bufs)
	for i, b := range planes {
		run.Upload(b, out[1+i])
	}
	var buf []byte
	run.Upload(rp.model, f64Bytes(&buf, m))
	var r2 cudaemu.Recorder
	if err := queueMahal(&r2, k, wholeWin(gm), &rp); err != nil {
		t.Fatal(err)
	}
	upload(run, &r2, dist, s.x[0])
	if err := queueScore(&r2, k, wholeWin(gm), s, &rp); err != nil {
		t.Fatal(err)
	}
	run.Replay(r2.L)
	run.Dump(s.sums, sumsBytes(gm))
	var e emulated
	for l, sg := range gm.s {
		run.Dump(s.x[l], 8*int64(sg.w)*int64(sg.h))
	}
	for l := range gm.s {
		for _, b := range append([]*cuda.Buffer{rp.y[l]}, rp.m[l][:mapsAt(l)]...) {
			run.Dump(b, b.Size)
		}
	}
	out = run.Run()
	e.score, e.err = pool(gm, f64s(out[0]))
	e.flat = rp.flat
	o := 1
	for l, sg := range gm.s {
		e.bands[l] = f64s(out[o])[:sg.w*sg.h]
		o++
	}
	for l, sg := range gm.s {
		e.ref[l] = append(e.ref[l], f64s(out[o])[:sg.w*sg.h])
		o++
		for j := 0; j < mapsAt(l); j++ {
			e.ref[l] = append(e.ref[l], f64s(out[o])[:sg.rw*sg.rh])
			o++
		}
		if weighted(l) {
			e.lam[l] = m[maxLam*l : maxLam*l+rp.nlam[l]]
		}
	}
	return e
}

// flatImage is a w×h image of format f whose every byte is v: flat at
// every scale (its bands are zero in exact arithmetic, rounding noise as
// computed).
func flatImage(w, h int, f zenmetrics.PixelFormat, v byte) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	for i := range im.Pix {
		im.Pix[i] = v
	}
	return im
}

// ramp is cpu/iwssim's rank-deficient case: a horizontal 8-bit gradient,
// whose 3×3 neighbourhoods have three equal rows, so that six of the ten
// eigenvalues of its covariance (seven of nine at scale 3) are zero in
// exact arithmetic and come out as rounding noise, which InverseModel's
// relative threshold must zero.
func ramp(w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.Gray8)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			im.Pix[y*im.Stride+x] = byte(x * 255 / (w - 1))
		}
	}
	return im
}

// TestEmulatedFlat runs the kernels on flat and rank-deficient
// references (cpu/iwssim's rules: a band within FlatBandLimit(k) of zero
// has a zero model; eigenvalues within 2⁻³⁶ of the largest are zero):
// the device's flatness decision must be the CPU's at every weighted
// scale, every plane and λ/σ² the CPU's bit for bit (tolerance as
// TestEmulated's, emuTolScore: 0 on amd64), a flat reference against a
// textured image and the reverse scored as the CPU scores them, and two
// flat images refused with the CPU's error (errors.Is ErrBadInput, the
// same message). Opt-in (ZENMETRICS_CUDA_EMULATE=1) and small: the
// emulator is slow.
func TestEmulatedFlat(t *testing.T) {
	emu := cudaemu.Build(t, source())
	tol := emuTolScore()
	_, tex161 := metrictest.Synthetic(161, 161, 5, zenmetrics.Gray8)
	_, tex200 := metrictest.Synthetic(200, 170, 6, zenmetrics.Gray8)
	grey161 := flatImage(161, 161, zenmetrics.Gray8, 128)
	cases := []struct {
		name      string
		ref, dist *zenmetrics.Image
		flat      bool // the reference's scale-0 band is flat (so the case is not vacuous)
		refused   bool // the CPU refuses the pair
	}{
		{"161x161_grey_vs_itself", grey161, grey161, true, true},
		{"161x161_grey_vs_textured", grey161, tex161, true, false},
		{"161x161_textured_vs_grey", tex161, grey161, false, false},
		{"200x170_ramp_vs_textured", ramp(200, 170), tex200, false, false},
		{"200x170_rgb_flat_vs_darker_flat", flatImage(200, 170, zenmetrics.RGB8, 128), flatImage(200, 170, zenmetrics.RGB8, 90), true, true},
	}
	for _, c := range cases {
		cref, err := cpuiw.Prepare(c.ref, cpuiw.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sd := cref.Scales()
		cref.Release()
		_, cerr := cpuiw.Score(c.ref, c.dist, cpuiw.Config{})
		if sd[0].Flat != c.flat || (cerr != nil) != c.refused {
			t.Fatalf("%s: the CPU says flat %v, error %v; the case expects flat %v, refused %v", c.name, sd[0].Flat, cerr, c.flat, c.refused)
		}
		checkEmulated(t, emu, c.name, c.ref, c.dist, tol)
	}
}
