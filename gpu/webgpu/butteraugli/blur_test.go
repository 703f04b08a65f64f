package butteraugli

import (
	"context"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// bfFuseProbe asks ProbeFMA whether the driver's compiler contracts a
// product into the sum it feeds, written as the FIR's accumulations are
// (acc + x·tap): io[3] in f32 (the row kernels' arithmetic), io[4] in
// vec4 (the column kernels'). With ProbeFMA's inputs each is 2^-24 where
// the two are fused, 0 where the product is rounded first.
const bfFuseProbe = `@group(0) @binding(0) var<storage, read_write> io: array<f32>;

@compute @workgroup_size(1, 1, 1)
fn probe() {
  io[3] = io[2] + io[0] * io[1];
  let v = vec4<f32>(io[2]) + vec4<f32>(io[0]) * vec4<f32>(io[1]);
  io[4] = v.x;
}
`

// bfVersions are the versions each knob selects, old first.
var bfVersions = []string{bfVersionOld, bfVersionNew}

// bfTestKnob is a knob as testBlurVariants drives it: the stages whose
// version it selects, which version compiled kernels hold, and the seeds
// of the test planes and of the scored images.
type bfTestKnob struct {
	name                 string
	knob                 *bfKnob
	stages               []bfTestStage
	compiled             func(k *bfKernels) string
	planeSeed, scoreSeed int64
}

var (
	bfTestKnobLF = bfTestKnob{"LF", bfLFKnob, []bfTestStage{bfTestLF},
		func(k *bfKernels) string { return k.lf.variant }, 100, 70}
	bfTestKnobBlur = bfTestKnob{"blurs", bfBlurKnob, []bfTestStage{bfTestHF, bfTestUHF, bfTestMask},
		func(k *bfKernels) string { return k.blur }, 400, 80}
)

// TestButteraugliLFVariants is testBlurVariants for the LF pair
// (ZENMETRICS_BA_LF, lf.go).
func TestButteraugliLFVariants(t *testing.T) { testBlurVariants(t, bfTestKnobLF) }

// TestButteraugliBlurVariants is testBlurVariants for the HF, UHF and
// masking blurs (ZENMETRICS_BA_BLUR, blur.go).
func TestButteraugliBlurVariants(t *testing.T) { testBlurVariants(t, bfTestKnobBlur) }

// testBlurVariants runs every version of the blurs of knob kn on the same
// random planes (bfTestPlanes) and holds what each writes (the row pass's
// planes, the planes its column kernel rewrites and those it writes) to
// the exact values within bfStageCheck's rounding bounds, on every
// device. Where the driver keeps products and sums apart (bfFuseProbe)
// the versions perform the same roundings, so each must also equal old
// bit for bit; where it contracts them it may do so differently in old's
// loop than in the written-out sums (NVIDIA: a few ulps), and the bounds
// are the test. The outputs are poisoned (NaN) before each run, so a
// value a version leaves unwritten fails too. The sizes put the tile
// edges everywhere for every radius (3, 6, 7 and 16): below one kernel
// width (5×7, 6×9, 8×8, 9×13, 13×9: no interior along x for some or
// all), around it (7×8, 14×15, 15×16, 33×34, 36×40), widths not a
// multiple of 4 or of any tile (67, 261, 301: the f32 accesses), heights
// that leave partial column blocks (41, 71, 263), a level's size next to
// its half-resolution one (130×71 and 65×36), and widths that are a
// multiple of 4 (8, 12, 36, 128, 260: the 16-byte accesses). It then
// scores with each version and compares the scores and distance maps
// (both levels, the real dispatch path) with old's: the same bits, or
// within the package's GPU-vs-CPU contract where the driver contracts.
func testBlurVariants(t *testing.T, kn bfTestKnob) {
	dev := gputest.Device(t)
	ctx := context.Background()
	sizes := [][2]int{{5, 7}, {6, 9}, {7, 8}, {9, 13}, {13, 9}, {14, 15}, {15, 16}, {8, 8}, {33, 34}, {36, 40}, {67, 41},
		{65, 36}, {130, 71}, {261, 37}, {35, 263}, {301, 70}, {260, 37}, {128, 67}, {12, 20}}
	if testing.Short() {
		sizes = [][2]int{{6, 9}, {9, 13}, {15, 16}, {67, 41}, {260, 37}}
	}
	blurs := make([][]bfBlur, len(bfVersions))
	var fused bool
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		scalar, vec, err := webgpu.ProbeFMA(g, "butteraugli_fuseprobe", bfFuseProbe)
		if err != nil {
			return err
		}
		fused = scalar || vec
		t.Logf("the driver contracts acc + x·tap: f32 %v, vec4 %v", scalar, vec)
		for i, v := range bfVersions {
			if blurs[i], err = compileStages(g, kn.stages, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, sz := range sizes {
		w, h := sz[0], sz[1]
		in := bfTestPlanes(w, h, kn.planeSeed+int64(i))
		for s, st := range kn.stages {
			var old [][]float32
			for vi, v := range bfVersions {
				out := runStage(t, dev, st, &blurs[vi][s], w, h, in[:])
				bad, worst := bfStageCheck(st, st.stage.kern, w, h, in[:], out)
				for _, b := range bad {
					t.Errorf("%s %dx%d %s", v, w, h, b)
				}
				if v == bfVersionOld {
					old = out
				}
				if v == bfVersionOld || fused {
					t.Logf("%s %s %dx%d: %d planes within the bounds (largest difference %.3f of its bound)",
						st.name, v, w, h, len(out), worst)
					continue
				}
				diff := 0
				for p := range out {
					n, first := 0, -1
					for j, x := range out[p] {
						if math.Float32bits(x) != math.Float32bits(old[p][j]) {
							if first < 0 {
								first = j
							}
							n++
						}
					}
					if n > 0 {
						diff++
						t.Errorf("%s %s %dx%d %s: %d of %d values differ from old, first at x %d y %d (%g, old %g)",
							st.name, v, w, h, st.planes[p], n, len(out[p]), first%w, first/w, out[p][first], old[p][first])
					}
				}
				t.Logf("%s %s %dx%d: %d planes within the bounds (largest difference %.3f of its bound), %d differ from old",
					st.name, v, w, h, len(out), worst, diff)
			}
		}
	}

	// The whole score, through the dispatch path the package uses.
	defer func() { kn.knob.force = "" }()
	cases := [][2]int{{67, 41}, {132, 68}, {261, 37}}
	if testing.Short() {
		cases = cases[:1]
	}
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c[0], c[1], kn.scoreSeed+int64(i), zenmetrics.RGB8)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
		var old zenmetrics.Score
		for _, v := range bfVersions {
			kn.knob.force = v
			s := bfScoreVersion(t, dev, ref, dist, opt, kn, v)
			name := fmt.Sprintf("%dx%d %s %s vs old", c[0], c[1], kn.name, v)
			switch {
			case v == bfVersionOld:
				old = s
			case fused:
				bfNear(t, name, old, s)
			default:
				bfSame(t, name, old, s)
			}
		}
	}
}

// bfNear checks score b against a within the package's GPU-vs-CPU
// contract: bfTolCPU relative for the maximum and the norms, bfTolMap of
// the maximum for each distance map value.
func bfNear(t *testing.T, name string, a, b zenmetrics.Score) {
	t.Helper()
	for _, k := range []string{"pnorm3", "pnorm"} {
		if e := rel(a.Extras[k], b.Extras[k]); e > bfTolCPU {
			t.Errorf("%s: %s %v vs %v (rel %.2g)", name, k, a.Extras[k], b.Extras[k], e)
		}
	}
	if e := rel(a.Value, b.Value); e > bfTolCPU {
		t.Errorf("%s: max %v vs %v (rel %.2g)", name, a.Value, b.Value, e)
	}
	if a.DistMap == nil || b.DistMap == nil || len(a.DistMap.Pix) != len(b.DistMap.Pix) {
		t.Fatalf("%s: distance maps missing or of different sizes", name)
	}
	worst := 0.0
	for i := range a.DistMap.Pix {
		worst = max(worst, math.Abs(float64(a.DistMap.Pix[i])-float64(b.DistMap.Pix[i])))
	}
	if worst > bfTolMap*a.Value {
		t.Errorf("%s: distance maps differ by %.3g (max %.4g)", name, worst, a.Value)
	}
	t.Logf("%s: max rel %.2g, 3-norm rel %.2g, map %.3g", name, rel(a.Value, b.Value),
		rel(a.Extras["pnorm3"], b.Extras["pnorm3"]), worst)
}

// bfScoreVersion scores with the blurs of knob kn's version v (set in
// kn.knob.force) and checks that they were the ones used.
func bfScoreVersion(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options, kn bfTestKnob, v string) zenmetrics.Score {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer r.Release()
	if got := kn.compiled(r.k); got != v {
		t.Fatalf("%s version %q compiled, want %q", kn.name, got, v)
	}
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return s
}

// compileStages compiles version v of the blurs of stages alone (device
// thread), one bfBlur per stage.
func compileStages(g *webgpu.GPU, stages []bfTestStage, v string) ([]bfBlur, error) {
	src, err := webgpu.Sources("butteraugli_common", "butteraugli_fir")
	if err != nil {
		return nil, err
	}
	bs := make([]bfBlur, len(stages))
	var ks []webgpu.Kernel
	for i, st := range stages {
		k, err := blurKernels(&bs[i], st.stage, v == bfVersionOld, bfPrelude+src[0], src[1])
		if err != nil {
			return nil, err
		}
		ks = append(ks, k...)
	}
	return bs, webgpu.Compile(g, ks)
}

// runStage runs blur b of stage st on the w×h planes in (the first
// st.src() feed the rows, the first st.rw() are rewritten) and returns the
// row planes, the rewritten planes and the planes written besides.
func runStage(t *testing.T, dev *webgpu.Device, st bfTestStage, b *bfBlur, w, h int, in [][]float32) [][]float32 {
	t.Helper()
	n := w * h
	poison := make([]byte, 4*n)
	for i := range poison {
		poison[i] = 0xff
	}
	out := make([][]float32, st.src()+st.rw()+st.outs())
	var own webgpu.Buffers
	defer func() { dev.Free(own.Take()) }()
	err := dev.Do(context.Background(), func(g *webgpu.GPU) error {
		p := bfParams{Width: uint32(w), Height: uint32(h)}
		lv := &bfLevel{w: w, h: h, params: webgpu.UniformOf(g, &own, &p)}
		r := &butteraugliRef{}
		kern := own.Uniform(g, bfKernelBytes)
		var x, tmp, outs []*webgpu.Buffer
		for c := 0; c < st.src(); c++ {
			x, tmp = append(x, own.Storage(g, 4*int64(n))), append(tmp, own.Storage(g, 4*int64(n)))
		}
		for c := 0; c < st.outs(); c++ {
			outs = append(outs, own.Storage(g, 4*int64(n)))
		}
		if own.Err != nil {
			return own.Err
		}
		g.Write(kern, 0, st.stage.kern.block())
		for c := range x {
			webgpu.WriteSlice(g, x[c], 0, in[c])
			g.Write(tmp[c], 0, poison)
		}
		for _, o := range outs {
			g.Write(o, 0, poison)
		}
		e := g.Encoder()
		r.encodeBlur(e, b, lv, kern, x, tmp, append(append([]*webgpu.Buffer(nil), x[:st.rw()]...), outs...)...)
		if err := e.SubmitAndWait(); err != nil {
			return err
		}
		read := append(append(append([]*webgpu.Buffer(nil), tmp...), x[:st.rw()]...), outs...)
		for j, buf := range read {
			out[j] = make([]float32, n)
			if err := g.ReadFloats(buf, 0, out[j]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestButteraugliBlurKnob checks how the values of ZENMETRICS_BA_BLUR and
// ZENMETRICS_BA_LF are read (bfVersionName), and that the vec4 kernels'
// tiles fit the 16,384 bytes of workgroup memory every WebGPU device
// offers for every radius (so that no device needs a fallback).
func TestButteraugliBlurKnob(t *testing.T) {
	for _, c := range [][2]string{{"", bfVersionNew}, {"old", bfVersionOld}, {"g16", bfVersionNew}, {"new", bfVersionNew},
		{"r16g4", bfVersionNew}, {"bogus", bfVersionNew}} {
		if got := bfVersionName(c[0]); got != c[1] {
			t.Errorf("bfVersionName(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	for _, s := range []bfStage{bfStageLF, bfStageHF, bfStageUHF, bfStageMask} {
		off := s.kern.off
		r, c := bfRow4Bytes(off), bfCol4Bytes(off)
		if max(r, c) > 16384 {
			t.Errorf("%s: tiles of %d and %d bytes, above WebGPU's default limit of 16384", s.rowsL, r, c)
		}
		// The words a row thread reads hold every sample its outputs need.
		halo, nw := bfRow4Halo(off), bfRow4Words(off)
		if halo%4 != 0 || halo < off || halo-off >= 4 || 4*nw < halo+3+off+1 || 4*(nw-1) > halo+3+off {
			t.Errorf("%s: radius %d, halo %d, %d words", s.rowsL, off, halo, nw)
		}
		t.Logf("%s: radius %d, %d words a row thread, tiles of %d and %d bytes", s.rowsL, off, nw, r, c)
	}
}
