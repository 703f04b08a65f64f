package butteraugli

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestButteraugliLFVariants runs every version of the LF blur pair
// (ZENMETRICS_BA_LF, lf.go) on the same random planes and compares what
// each writes with the old kernels bit for bit: the row pass's
// intermediate planes, LF and the XYB planes with LF taken off. The
// outputs are poisoned (NaN) before each run, so a value a version leaves
// unwritten fails too. The inputs span magnitudes from 1e-3 to 1e3 with
// both signs, so a product fused into a sum (or operations reordered)
// would show in the last bits. The sizes put the tile edges everywhere:
// below one kernel width (8×8, 9×13, 13×9: no interior), around it
// (33×34, 36×40), widths not a multiple of 4 or of any tile (67, 261,
// 301), heights that leave partial column blocks (41, 71, 263), a
// level's size next to its half-resolution one (130×71 and 65×36), and
// widths that are a multiple of 4 (8, 12, 36, 128, 260: the 16-byte
// kernels run there). It then scores three pairs with each version and
// compares the scores and distance maps (both levels, the real dispatch
// path) with the old ones.
func TestButteraugliLFVariants(t *testing.T) {
	dev := gputest.Device(t)
	ctx := context.Background()
	sizes := [][2]int{{8, 8}, {9, 13}, {13, 9}, {33, 34}, {36, 40}, {67, 41}, {65, 36}, {130, 71}, {261, 37}, {35, 263}, {301, 70},
		{260, 37}, {128, 67}, {12, 20}}
	if testing.Short() {
		sizes = [][2]int{{9, 13}, {67, 41}, {260, 37}}
	}
	var lfs []*bfLF
	err := dev.Do(ctx, func(g *webgpu.GPU) error {
		for _, v := range []string{bfLFOld, bfLFDefault, bfLFR16G4} {
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
	if lfs[0].variant != "old" {
		t.Fatalf("first version %q, want old", lfs[0].variant)
	}
	for i, sz := range sizes {
		outs := make([][9][]float32, len(lfs))
		for j, lf := range lfs {
			outs[j] = runLF(t, dev, lf, sz[0], sz[1], int64(100+i))
			if j == 0 {
				continue
			}
			diff := 0
			for p := range outs[j] {
				name := [...]string{"rows X", "rows Y", "rows B", "X-LF", "Y-LF", "B-LF", "LF X", "LF Y", "LF B"}[p]
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
						lf.variant, sz[0], sz[1], name, n, len(outs[0][p]), first%sz[0], first/sz[0],
						outs[j][p][first], outs[0][p][first])
				}
			}
			t.Logf("%s %dx%d: 9 planes compared with old, %d differ", lf.variant, sz[0], sz[1], diff)
		}
	}

	// The whole score, through the dispatch path the package uses.
	defer func() { bfLFForce = "" }()
	cases := [][2]int{{67, 41}, {132, 68}, {261, 37}}
	if testing.Short() {
		cases = cases[:1]
	}
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c[0], c[1], int64(70+i), zenmetrics.RGB8)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
		var old zenmetrics.Score
		for _, lf := range lfs {
			bfLFForce = lf.variant
			s := bfScoreLF(t, dev, ref, dist, opt, lf.variant)
			if lf.variant == "old" {
				old = s
				continue
			}
			bfSame(t, fmt.Sprintf("%dx%d LF %s vs old", c[0], c[1], lf.variant), old, s)
		}
	}
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

// runLF runs the LF pair lf on three random w×h planes (seed) and returns
// the row pass's planes, the XYB planes after it and the LF planes.
func runLF(t *testing.T, dev *webgpu.Device, lf *bfLF, w, h int, seed int64) (out [9][]float32) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	n := w * h
	in := make([][]float32, 3)
	for c := range in {
		in[c] = make([]float32, n)
		for i := range in[c] {
			v := float32(math.Pow(10, rng.Float64()*6-3))
			if rng.Intn(2) == 0 {
				v = -v
			}
			in[c][i] = v
		}
	}
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
		r.encodeLF(e, lf, lv, x, tmp, lfo)
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

// TestButteraugliLFKnob checks how ZENMETRICS_BA_LF values are read, and
// that the vec4 kernels' tiles fit the 16,384 bytes of workgroup memory
// every WebGPU device offers (so that no device needs a fallback).
func TestButteraugliLFKnob(t *testing.T) {
	for _, c := range [][2]string{{"", bfLFDefault}, {"old", bfLFOld}, {"r16g4", bfLFR16G4}, {"new", bfLFDefault},
		{"new16", bfLFDefault}, {"new16,new4", bfLFDefault}, {"bogus", bfLFDefault}} {
		if got := bfLFName(c[0]); got != c[1] {
			t.Errorf("bfLFName(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	if r, c := bfLFRowBytes(bfKernLF.off), bfLFColBytes(bfKernLF.off); max(r, c) > 16384 {
		t.Errorf("LF tiles of %d and %d bytes, above WebGPU's default limit of 16384", r, c)
	}
}
