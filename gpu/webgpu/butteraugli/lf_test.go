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

// bfLFFuseProbe asks ProbeFMA whether the driver's compiler contracts a
// product into the sum it feeds, written as the FIR's accumulations are
// (acc + x·tap): io[3] in f32 (the row kernels' arithmetic), io[4] in
// vec4 (the column kernels'). With ProbeFMA's inputs each is 2^-24 where
// the two are fused, 0 where the product is rounded first.
const bfLFFuseProbe = `@group(0) @binding(0) var<storage, read_write> io: array<f32>;

@compute @workgroup_size(1, 1, 1)
fn probe() {
  io[3] = io[2] + io[0] * io[1];
  let v = vec4<f32>(io[2]) + vec4<f32>(io[0]) * vec4<f32>(io[1]);
  io[4] = v.x;
}
`

// TestButteraugliLFVariants runs every version of the LF blur pair
// (ZENMETRICS_BA_LF, lf.go) on the same random planes (bfLFPlanes) and
// holds what each writes (the row pass's intermediate planes, LF, and the
// XYB planes with LF taken off) to the exact values within bfLFCheck's
// rounding bounds, on every device. Where the driver keeps products and
// sums apart (bfLFFuseProbe) the versions perform the same roundings, so
// each must also equal old bit for bit; where it contracts them it does
// so differently in old's loop than in the written-out sums (NVIDIA: a
// few ulps), and the bounds are the test. The outputs are poisoned (NaN)
// before each run, so a value a version leaves unwritten fails too. The
// sizes put the tile edges everywhere: below one kernel width (8×8, 9×13,
// 13×9: no interior), around it (33×34, 36×40), widths not a multiple of
// 4 or of any tile (67, 261, 301), heights that leave partial column
// blocks (41, 71, 263), a level's size next to its half-resolution one
// (130×71 and 65×36), and widths that are a multiple of 4 (8, 12, 36,
// 128, 260: the 16-byte kernels run there). It then scores three pairs
// with each version and compares the scores and distance maps (both
// levels, the real dispatch path) with old's: the same bits, or within
// the package's GPU-vs-CPU contract where the driver contracts.
func TestButteraugliLFVariants(t *testing.T) {
	dev := gputest.Device(t)
	ctx := context.Background()
	sizes := [][2]int{{8, 8}, {9, 13}, {13, 9}, {33, 34}, {36, 40}, {67, 41}, {65, 36}, {130, 71}, {261, 37}, {35, 263}, {301, 70},
		{260, 37}, {128, 67}, {12, 20}}
	if testing.Short() {
		sizes = [][2]int{{9, 13}, {67, 41}, {260, 37}}
	}
	var lfs []*bfLF
	var fused bool
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		scalar, vec, err := webgpu.ProbeFMA(g, "butteraugli_lf_fuseprobe", bfLFFuseProbe)
		if err != nil {
			return err
		}
		fused = scalar || vec
		t.Logf("the driver contracts acc + x·tap: f32 %v, vec4 %v", scalar, vec)
		for _, v := range []string{bfVersionOld, bfVersionNew} {
			lf, err := compileLF(g, v)
			if err != nil {
				return err
			}
			lfs = append(lfs, lf)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, sz := range sizes {
		w, h := sz[0], sz[1]
		in := bfLFPlanes(w, h, int64(100+i))
		outs := make([][9][]float32, len(lfs))
		for j, lf := range lfs {
			outs[j] = runLF(t, dev, lf, w, h, in)
			bad, worst := bfLFCheck(w, h, in, outs[j])
			for _, b := range bad {
				t.Errorf("%s %dx%d %s", lf.variant, w, h, b)
			}
			if j == 0 || fused {
				t.Logf("%s %dx%d: 9 planes within the bounds (largest difference %.3f of its bound)", lf.variant, w, h, worst)
				continue
			}
			diff := 0
			for p := range outs[j] {
				n, first := 0, -1
				for k, v := range outs[j][p] {
					if math.Float32bits(v) != math.Float32bits(outs[0][p][k]) {
						if first < 0 {
							first = k
						}
						n++
					}
				}
				if n > 0 {
					diff++
					t.Errorf("%s %dx%d %s: %d of %d values differ from old, first at x %d y %d (%g, old %g)",
						lf.variant, w, h, bfLFPlaneNames[p], n, len(outs[0][p]), first%w, first/w,
						outs[j][p][first], outs[0][p][first])
				}
			}
			t.Logf("%s %dx%d: 9 planes within the bounds (largest difference %.3f of its bound), %d differ from old",
				lf.variant, w, h, worst, diff)
		}
	}

	// The whole score, through the dispatch path the package uses.
	defer func() { bfLFKnob.force = "" }()
	cases := [][2]int{{67, 41}, {132, 68}, {261, 37}}
	if testing.Short() {
		cases = cases[:1]
	}
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c[0], c[1], int64(70+i), zenmetrics.RGB8)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
		var old zenmetrics.Score
		for _, lf := range lfs {
			bfLFKnob.force = lf.variant
			s := bfScoreLF(t, dev, ref, dist, opt, lf.variant)
			name := fmt.Sprintf("%dx%d LF %s vs old", c[0], c[1], lf.variant)
			switch {
			case lf.variant == bfVersionOld:
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

// bfScoreLF scores with the kernels of LF version v and checks that they
// were the ones used.
func bfScoreLF(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options, v string) zenmetrics.Score {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer r.Release()
	if r.k.lf.variant != v {
		t.Fatalf("LF version %q compiled, want %q", r.k.lf.variant, v)
	}
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return s
}

// compileLF compiles version v of the LF pair alone (device thread).
func compileLF(g *webgpu.GPU, v string) (*bfLF, error) {
	src, err := webgpu.Sources("butteraugli_common", "butteraugli_fir")
	if err != nil {
		return nil, err
	}
	lf, ks, err := lfKernels(v, bfPrelude+src[0], src[1])
	if err != nil {
		return nil, err
	}
	return lf, webgpu.Compile(g, ks)
}

// runLF runs the LF pair lf on the three w×h planes in and returns the
// row pass's planes, the XYB planes after it and the LF planes.
func runLF(t *testing.T, dev *webgpu.Device, lf *bfLF, w, h int, in [3][]float32) (out [9][]float32) {
	t.Helper()
	n := w * h
	poison := make([]byte, 4*n)
	for i := range poison {
		poison[i] = 0xff
	}
	var own webgpu.Buffers
	defer func() { dev.Free(own.Take()) }()
	err := dev.Do(context.Background(), func(g *webgpu.GPU) error {
		p := bfParams{Width: uint32(w), Height: uint32(h)}
		lv := &bfLevel{w: w, h: h, params: webgpu.UniformOf(g, &own, &p)}
		r := &butteraugliRef{}
		r.kern[1] = own.Uniform(g, bfKernelBytes)
		var x, tmp, lfo [3]*webgpu.Buffer
		for c := 0; c < 3; c++ {
			x[c], tmp[c], lfo[c] = own.Storage(g, 4*int64(n)), own.Storage(g, 4*int64(n)), own.Storage(g, 4*int64(n))
		}
		if own.Err != nil {
			return own.Err
		}
		g.Write(r.kern[1], 0, bfKernLF.block())
		for c := 0; c < 3; c++ {
			webgpu.WriteSlice(g, x[c], 0, in[c])
			g.Write(tmp[c], 0, poison)
			g.Write(lfo[c], 0, poison)
		}
		e := g.Encoder()
		r.encodeBlur(e, &lf.bfBlur, lv, r.kern[1], x[:], tmp[:], x[0], x[1], x[2], lfo[0], lfo[1], lfo[2])
		if err := e.SubmitAndWait(); err != nil {
			return err
		}
		for c := 0; c < 3; c++ {
			for k, b := range []*webgpu.Buffer{tmp[c], x[c], lfo[c]} {
				out[3*k+c] = make([]float32, n)
				if err := g.ReadFloats(b, 0, out[3*k+c]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
