package cvvdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

func cpuBackend() zenmetrics.Backend { return cpu.New(cpu.Config{}) }

func backend(t testing.TB) *webgpu.Backend {
	t.Helper()
	return webgpu.NewBackendOn(gputest.Device(t))
}

// tol is the aim, 1e-4 JOD, against cpu/cvvdp and against
// pycvvdp 0.5.4 (the issue requires 0.01). Why the GPU stays well inside
// it: every kernel does cpu/cvvdp's float32 operations in its order, and
// the pooling below the per-row sums is cpu/cvvdp's own code (Plan.JOD)
// on sums added in float64 as the CPU adds them; what differs is the
// device's pow/log2/exp2 (a few ulp, not correctly rounded), fused
// multiply-adds where the shader compiler contracts, and float32 row sums
// in a tree rather than float64 left to right: relative errors of ~1e-6
// per pixel that average out over a band. The JOD itself is a float32
// (met2jod), whose ulp near 10 is 9.5e-7, so differences below that read
// as 0. cpu/cvvdp is within 1e-6 of pycvvdp on the corpus and reference
// vectors, so the same bound serves both comparisons.
const tol = 1e-4

// TestSuite runs the shared backend suite on WebGPU: pycvvdp 0.5.4's
// scores (tiny corpus, shared corpus without -short, reference vectors)
// and the CPU reference on fresh images, within tol; determinism
// (identical bits), concurrency and the error contract.
func TestSuite(t *testing.T) {
	metrictest.Run(t, backend(t), zenmetrics.CVVDP, metrictest.Config{
		Tol:       metrictest.Tolerances{Golden: tol, Reference: tol},
		Reference: cpu.New(cpu.Config{}),
		Tiny:      1, // pycvvdp scores 2×2; a side of 1 has no pyramid
	})
}

// TestFormats: every pixel format gives the CPU reference's score within
// tol (the unpack kernel's byte reads, the 8- and 16-bit tables, the grey
// path).
func TestFormats(t *testing.T) {
	b := backend(t)
	c := cpu.New(cpu.Config{})
	for i, f := range []zenmetrics.PixelFormat{zenmetrics.Gray8, zenmetrics.GrayA8, zenmetrics.RGB8, zenmetrics.RGBA8,
		zenmetrics.Gray16, zenmetrics.GrayA16, zenmetrics.RGB16, zenmetrics.RGBA16} {
		ref, dist := metrictest.Synthetic(71+i, 65, int64(i), f)
		compare(t, b, c, f.String(), ref, dist, zenmetrics.Options{})
	}
}

// compare scores ref/dist on the GPU and the CPU backend with opt and
// demands tol.
func compare(t *testing.T, b, c zenmetrics.Backend, name string, ref, dist *zenmetrics.Image, opt zenmetrics.Options) {
	t.Helper()
	got, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.CVVDP, ref, dist, opt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want, err := zenmetrics.ScoreOnce(context.Background(), c, zenmetrics.CVVDP, ref, dist, opt)
	if err != nil {
		t.Fatalf("%s on the CPU: %v", name, err)
	}
	d := math.Abs(got.Value - want.Value)
	t.Logf("%s: webgpu %.9f, cpu %.9f, |Δ| %.3g", name, got.Value, want.Value, d)
	if !(d <= tol) {
		t.Errorf("%s: |Δ| %.3g > %g", name, d, tol)
	}
}

// TestDisplays: display models other than the default, against the CPU:
// HDR PQ, HLG (the per-pixel OOTF, colour and grey) and linear on 16-bit
// input, and displays with few pixels per degree (few bands, so a large
// base band and a band small enough to skip the blur).
func TestDisplays(t *testing.T) {
	b := backend(t)
	c := cpu.New(cpu.Config{})
	for i, tc := range []struct {
		disp string
		f    zenmetrics.PixelFormat
		w, h int
	}{
		{"standard_hdr_pq", zenmetrics.RGB16, 90, 70},
		{"standard_hdr_hlg", zenmetrics.RGB16, 90, 70},
		{"standard_hdr_hlg", zenmetrics.Gray8, 61, 47},
		{"standard_hdr_linear", zenmetrics.RGBA16, 80, 64},
		{"standard_hmd", zenmetrics.RGB8, 150, 110},
		{"standard_phone", zenmetrics.RGB8, 97, 33},
		{"iphone_14_pro_hdr", zenmetrics.RGB8, 64, 64},
	} {
		ref, dist := metrictest.Synthetic(tc.w, tc.h, int64(30+i), tc.f)
		compare(t, b, c, tc.disp+" "+tc.f.String(), ref, dist, zenmetrics.Options{Display: tc.disp})
	}
	ref8, _ := metrictest.SyntheticPair(8, 8, 1)
	if _, err := b.Prepare(context.Background(), zenmetrics.CVVDP, ref8, zenmetrics.Options{Display: "nope"}); !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("unknown display: err = %v, want ErrBadInput", err)
	}
}

// TestIdentical: an image against itself scores exactly 10, as in
// pycvvdp (every difference is 0; what the device's powers leave of
// safe_pow(0) is far below the float32 JOD's resolution).
func TestIdentical(t *testing.T) {
	b := backend(t)
	for _, f := range []zenmetrics.PixelFormat{zenmetrics.RGB8, zenmetrics.Gray16} {
		for _, disp := range []string{"", "standard_hdr_hlg"} {
			ref, _ := metrictest.Synthetic(77, 51, 3, f)
			s, err := zenmetrics.ScoreOnce(context.Background(), b, zenmetrics.CVVDP, ref, ref, zenmetrics.Options{Display: disp})
			if err != nil {
				t.Fatal(err)
			}
			if s.Value != 10 {
				t.Errorf("%v %q: identical images score %.9f, want 10", f, disp, s.Value)
			}
		}
	}
}

// TestModes: a mode the package does not know is refused as unsupported
// (the ladder then moves on), not mis-scored; the Backend refuses it
// before it reaches the package, and the package on its own does too.
func TestModes(t *testing.T) {
	b := backend(t)
	ref, _ := metrictest.SyntheticPair(32, 32, 1)
	opt := zenmetrics.Options{Mode: zenmetrics.Mode(9)}
	if r, err := b.Prepare(context.Background(), zenmetrics.CVVDP, ref, opt); !errors.Is(err, zenmetrics.ErrUnsupported) {
		if err == nil {
			r.Release()
		}
		t.Errorf("Backend.Prepare %v: err = %v, want ErrUnsupported", opt.Mode, err)
	}
	if r, err := (impl{}).Prepare(context.Background(), b, ref, opt); !errors.Is(err, zenmetrics.ErrUnsupported) {
		if err == nil {
			r.Release()
		}
		t.Errorf("Prepare %v: err = %v, want ErrUnsupported", opt.Mode, err)
	}
}

// mapTol bounds the distortion map's per-pixel difference from the CPU's
// (values 1 − JOD/10 in [0, 1]): the same float32 operations in the same
// order, with the device's powers (a few ulp) in the masking and in the
// 4-norm; measured up to 1.7e-6 on lavapipe (see the log).
const mapTol = 1e-5

// TestDistMap: with Options.DistMap the GPU returns pycvvdp's raw heatmap
// as cpu/cvvdp computes it, pixel by pixel within mapTol, with the same
// JOD within tol, whole and in strips and strip pairs (whose bands' map
// values are the whole image's bits, rebuilt on the host); a one-level
// pyramid (2×2) and a few-band display included; identical images give
// an all-zero map.
func TestDistMap(t *testing.T) {
	b := backend(t)
	c := cpuBackend()
	ctx := context.Background()
	for i, tc := range []struct {
		w, h int
		disp string
		f    zenmetrics.PixelFormat
	}{{2, 2, "", zenmetrics.RGB8}, {9, 13, "", zenmetrics.Gray8}, {97, 61, "", zenmetrics.RGB8}, {150, 110, "standard_hmd", zenmetrics.RGB16}, {64, 64, "standard_hdr_pq", zenmetrics.RGBA16}} {
		ref, dist := metrictest.Synthetic(tc.w, tc.h, int64(50+i), tc.f)
		opt := zenmetrics.Options{Display: tc.disp, DistMap: true}
		got, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.CVVDP, ref, dist, opt)
		if err != nil {
			t.Fatal(err)
		}
		want, err := zenmetrics.ScoreOnce(ctx, c, zenmetrics.CVVDP, ref, dist, opt)
		if err != nil {
			t.Fatal(err)
		}
		if got.DistMap == nil || got.DistMap.Width != tc.w || got.DistMap.Height != tc.h || len(got.DistMap.Pix) != tc.w*tc.h {
			t.Fatalf("%dx%d: map %+v", tc.w, tc.h, got.DistMap)
		}
		var maxd float64
		for k, v := range got.DistMap.Pix {
			maxd = max(maxd, math.Abs(float64(v)-float64(want.DistMap.Pix[k])))
		}
		d := math.Abs(got.Value - want.Value)
		t.Logf("%dx%d %q %v: map max |Δ| %.3g, JOD %.9f vs %.9f", tc.w, tc.h, tc.disp, tc.f, maxd, got.Value, want.Value)
		if !(maxd <= mapTol) || !(d <= tol) {
			t.Errorf("%dx%d %q: map max |Δ| %.3g (> %g?), JOD |Δ| %.3g", tc.w, tc.h, tc.disp, maxd, mapTol, d)
		}
		for _, m := range []zenmetrics.Mode{zenmetrics.ModeStrip, zenmetrics.ModeStripPair} {
			so := opt
			so.Mode, so.StripHeight = m, 5
			st, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.CVVDP, ref, dist, so)
			if err != nil {
				t.Fatal(err)
			}
			var sd float64
			for k, v := range st.DistMap.Pix {
				sd = max(sd, math.Abs(float64(v)-float64(want.DistMap.Pix[k])))
			}
			t.Logf("%dx%d %v: map max |Δ| %.3g vs cpu, JOD %.9f", tc.w, tc.h, m, sd, st.Value)
			if !(sd <= mapTol) || math.Float64bits(st.Value) != math.Float64bits(got.Value) {
				t.Errorf("%dx%d %v: map max |Δ| %.3g, JOD %.9f (whole %.9f)", tc.w, tc.h, m, sd, st.Value, got.Value)
			}
		}
		same, err := zenmetrics.ScoreOnce(ctx, b, zenmetrics.CVVDP, ref, ref, opt)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range same.DistMap.Pix {
			if v != 0 {
				t.Errorf("%dx%d: identical images, map[%d] = %v", tc.w, tc.h, k, v)
				break
			}
		}
	}
}

// TestTinySizes: the smallest images pycvvdp scores (one or two pyramid
// levels, sides of 2 and 3, a single column of windows) against the CPU
// in every mode, strips and strip pairs with one owned row a window.
func TestTinySizes(t *testing.T) {
	b := backend(t)
	c := cpuBackend()
	for _, s := range [][2]int{{2, 2}, {3, 2}, {2, 7}, {5, 5}, {4, 9}, {17, 3}} {
		ref, dist := metrictest.SyntheticPair(s[0], s[1], int64(s[0]*100+s[1]))
		for _, opt := range []zenmetrics.Options{{}, {Mode: zenmetrics.ModeStrip, StripHeight: 1}, {Mode: zenmetrics.ModeStripPair, StripHeight: 1}} {
			compare(t, b, c, fmt.Sprintf("%dx%d %v", s[0], s[1], opt.Mode), ref, dist, opt)
		}
	}
}

// TestPipelined: images of at least webgpu.StagingMin bytes score through
// the staging ring (pipe.go); scores from four goroutines at once on one
// reference, with and without the distortion map, give the sequential
// scores' bits, and the reference never holds more than Estimate.
func TestPipelined(t *testing.T) {
	b := backend(t)
	ctx := context.Background()
	const w, h = 640, 600 // 1.15 MB of RGB8
	ref, _ := metrictest.SyntheticPair(w, h, 21)
	var dists []*zenmetrics.Image
	for i := 0; i < 4; i++ {
		_, d := metrictest.SyntheticPair(w, h, int64(22+i))
		dists = append(dists, d)
	}
	if webgpu.RawBytes(dists[0]) < webgpu.StagingMin {
		t.Fatalf("%d bytes: below the staging path", webgpu.RawBytes(dists[0]))
	}
	est, _ := b.Estimate(zenmetrics.CVVDP, w, h, zenmetrics.ModeFull)
	for _, opt := range []zenmetrics.Options{{}, {DistMap: true}} {
		r, err := b.Prepare(ctx, zenmetrics.CVVDP, ref, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]zenmetrics.Score, len(dists))
		for i, d := range dists {
			if want[i], err = r.Score(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]zenmetrics.Score, 2*len(dists))
		errs := make([]error, len(got))
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = r.Score(ctx, dists[i%len(dists)])
			}()
		}
		wg.Wait()
		held := webgpu.ReferenceBytes(r)
		r.Release()
		for i := range got {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			wnt := want[i%len(dists)]
			if math.Float64bits(got[i].Value) != math.Float64bits(wnt.Value) {
				t.Errorf("map %v, score %d: concurrent %v, sequential %v", opt.DistMap, i, got[i].Value, wnt.Value)
			}
			if opt.DistMap {
				for k, v := range got[i].DistMap.Pix {
					if math.Float32bits(v) != math.Float32bits(wnt.DistMap.Pix[k]) {
						t.Errorf("map, score %d: pixel %d %v, sequential %v", i, k, v, wnt.DistMap.Pix[k])
						break
					}
				}
			}
		}
		limit := est
		if opt.DistMap {
			plan, err := cpucv.NewPlan(w, h, "")
			if err != nil {
				t.Fatal(err)
			}
			limit += mapBytes(plan.W, plan.H)
		}
		t.Logf("map %v: %d concurrent scores, held %d, limit %d", opt.DistMap, len(got), held, limit)
		if held > limit {
			t.Errorf("map %v: held %d > %d", opt.DistMap, held, limit)
		}
	}
}
