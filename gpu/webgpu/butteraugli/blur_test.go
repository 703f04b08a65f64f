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

// bfBlurVersions are the ZENMETRICS_BA_BLUR versions, old first.
var bfBlurVersions = []string{bfVersionOld, bfVersionNew}

// TestButteraugliBlurVariants is TestButteraugliLFVariants for the HF,
// UHF and masking blurs (ZENMETRICS_BA_BLUR, blur.go): every version of
// each runs on the same random planes, and what it writes (the row pass's
// planes, the planes its column kernel rewrites and those it writes) is
// held to the exact values within bfStageCheck's bounds on every device,
// and to old's bits where the driver does not contract a*b+c
// (bfLFFuseProbe). The outputs are poisoned (NaN) before each run, so a
// value a version leaves unwritten fails too. The sizes put the tile
// edges everywhere for every radius (3, 6 and 7): below one kernel width
// (5×7, 6×9, 13×9: no interior along x for some or all), around it (7×8,
// 14×15, 15×16), widths not a multiple of 4 or of any tile (67, 261, 301:
// the f32 accesses), heights that leave partial column blocks (41, 71,
// 263), a level's size next to its half-resolution one (130×71 and
// 65×36), and widths that are a multiple of 4 (8, 12, 36, 128, 260: the
// 16-byte accesses). It then scores with each version and compares the
// scores and distance maps (both levels, the real dispatch path) with
// old's: the same bits, or within the package's GPU-vs-CPU contract where
// the driver contracts.
func TestButteraugliBlurVariants(t *testing.T) {
	dev := gputest.Device(t)
	ctx := context.Background()
	sizes := [][2]int{{5, 7}, {6, 9}, {7, 8}, {13, 9}, {14, 15}, {15, 16}, {8, 8}, {33, 34}, {36, 40}, {67, 41}, {65, 36},
		{130, 71}, {261, 37}, {35, 263}, {301, 70}, {260, 37}, {128, 67}, {12, 20}}
	if testing.Short() {
		sizes = [][2]int{{6, 9}, {15, 16}, {67, 41}, {260, 37}}
	}
	var ks []*bfKernels
	var fused bool
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		scalar, vec, err := webgpu.ProbeFMA(g, "butteraugli_lf_fuseprobe", bfLFFuseProbe)
		if err != nil {
			return err
		}
		fused = scalar || vec
		t.Logf("the driver contracts acc + x·tap: f32 %v, vec4 %v", scalar, vec)
		for _, v := range bfBlurVersions {
			k, err := compileBlursOnly(g, v)
			if err != nil {
				return err
			}
			ks = append(ks, k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, sz := range sizes {
		w, h := sz[0], sz[1]
		in := bfLFPlanes(w, h, int64(400+i))
		for _, st := range bfTestStages {
			var old [][]float32
			for _, k := range ks {
				out := runStage(t, dev, st, st.blur(k), w, h, in[:])
				bad, worst := bfStageCheck(st, st.stage.kern, w, h, in[:], out)
				for _, b := range bad {
					t.Errorf("%s %dx%d %s", k.blur, w, h, b)
				}
				if k.blur == bfVersionOld {
					old = out
				}
				if k.blur == bfVersionOld || fused {
					t.Logf("%s %s %dx%d: %d planes within the bounds (largest difference %.3f of its bound)",
						st.name, k.blur, w, h, len(out), worst)
					continue
				}
				diff := 0
				for p := range out {
					n, first := 0, -1
					for j, v := range out[p] {
						if math.Float32bits(v) != math.Float32bits(old[p][j]) {
							if first < 0 {
								first = j
							}
							n++
						}
					}
					if n > 0 {
						diff++
						t.Errorf("%s %s %dx%d %s: %d of %d values differ from old, first at x %d y %d (%g, old %g)",
							st.name, k.blur, w, h, st.planes[p], n, len(out[p]), first%w, first/w, out[p][first], old[p][first])
					}
				}
				t.Logf("%s %s %dx%d: %d planes within the bounds (largest difference %.3f of its bound), %d differ from old",
					st.name, k.blur, w, h, len(out), worst, diff)
			}
		}
	}

	// The whole score, through the dispatch path the package uses.
	defer func() { bfBlurKnob.force = "" }()
	cases := [][2]int{{67, 41}, {132, 68}, {261, 37}}
	if testing.Short() {
		cases = cases[:1]
	}
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c[0], c[1], int64(80+i), zenmetrics.RGB8)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
		var old zenmetrics.Score
		for _, v := range bfBlurVersions {
			bfBlurKnob.force = v
			s := bfScoreBlur(t, dev, ref, dist, opt, v)
			name := fmt.Sprintf("%dx%d blurs %s vs old", c[0], c[1], v)
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

// bfScoreBlur scores with the blurs of version v and checks that they
// were the ones used.
func bfScoreBlur(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options, v string) zenmetrics.Score {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer r.Release()
	if r.k.blur != v {
		t.Fatalf("blur version %q compiled, want %q", r.k.blur, v)
	}
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return s
}

// compileBlursOnly compiles version v of the HF, UHF and masking blurs
// alone (device thread).
func compileBlursOnly(g *webgpu.GPU, v string) (*bfKernels, error) {
	src, err := webgpu.Sources("butteraugli_common", "butteraugli_fir")
	if err != nil {
		return nil, err
	}
	k := &bfKernels{blur: v}
	ks, err := compileBlurs(k, bfPrelude+src[0], src[1])
	if err != nil {
		return nil, err
	}
	return k, webgpu.Compile(g, ks)
}

// runStage runs blur b of stage st on the w×h planes in (the first st.src
// feed the rows, the first st.rw are rewritten) and returns the row
// planes, the rewritten planes and the planes written besides.
func runStage(t *testing.T, dev *webgpu.Device, st bfTestStage, b *bfBlur, w, h int, in [][]float32) [][]float32 {
	t.Helper()
	n := w * h
	poison := make([]byte, 4*n)
	for i := range poison {
		poison[i] = 0xff
	}
	out := make([][]float32, st.src+st.rw+st.outs)
	var own webgpu.Buffers
	defer func() { dev.Free(own.Take()) }()
	err := dev.Do(context.Background(), func(g *webgpu.GPU) error {
		p := bfParams{Width: uint32(w), Height: uint32(h)}
		lv := &bfLevel{w: w, h: h, params: webgpu.UniformOf(g, &own, &p)}
		r := &butteraugliRef{}
		kern := own.Uniform(g, bfKernelBytes)
		var x, tmp, outs []*webgpu.Buffer
		for c := 0; c < st.src; c++ {
			x, tmp = append(x, own.Storage(g, 4*int64(n))), append(tmp, own.Storage(g, 4*int64(n)))
		}
		for c := 0; c < st.outs; c++ {
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
		r.encodeBlur(e, b, lv, kern, x, tmp, append(append([]*webgpu.Buffer(nil), x[:st.rw]...), outs...)...)
		if err := e.SubmitAndWait(); err != nil {
			return err
		}
		read := append(append(append([]*webgpu.Buffer(nil), tmp...), x[:st.rw]...), outs...)
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
