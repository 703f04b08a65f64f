package ssim2

import (
	"context"
	"fmt"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIM2BandPlanWork checks the band plan of the band work without a
// GPU: cuts at multiples of the pyramid tile, counts as the environment
// asks (numbers up to ssim2MaxBands, "on" and the default at most
// ssim2DefaultBands), and every scale's band spans tiling the scale's rows
// exactly, each band non-empty at every scale (a tile row of scale 0 is
// at least one row at scale 5).
func TestSSIM2BandPlanWork(t *testing.T) {
	defer func(env string, bytes int64) { ssim2BandsEnv, ssim2BandBytes = env, bytes }(ssim2BandsEnv, ssim2BandBytes)
	for _, c := range []struct {
		env          string
		h            int
		need         int64
		want, legacy int // bands with the band work, and legacy
	}{
		{"", 4096, 48 << 20, 4, 4},
		{"", 4096, 128 << 20, 4, 4},
		{"", 1024, 3 << 20, 1, 1},
		{"on", 1024, 3 << 20, 2, 2},
		{"on", 4096, 128 << 20, 4, 4},
		{"5", 171, 1 << 10, 5, 1},
		{"8", 4096, 1 << 10, 8, 8},
		{"9", 4096, 1 << 10, 8, 8},
		{"2", 63, 1 << 10, 1, 1},
		{"2", 64, 1 << 10, 2, 1},
		{"1", 4096, 48 << 20, 1, 1},
		{"off", 4096, 48 << 20, 1, 1},
	} {
		ssim2BandsEnv = c.env
		if got := ssim2BandCount(c.h, c.need, true); got != c.want {
			t.Errorf("env %q, %d rows, %d bytes: %d bands, want %d", c.env, c.h, c.need, got, c.want)
		}
		if got := ssim2BandCount(c.h, c.need, false); got != c.legacy {
			t.Errorf("env %q, %d rows, %d bytes, legacy: %d bands, want %d", c.env, c.h, c.need, got, c.legacy)
		}
	}
	ssim2BandsEnv, ssim2BandBytes = "", 1<<20
	if got := ssim2BandCount(1024, 3<<20, true); got != 3 {
		t.Errorf("1 MiB per band, 3 MiB: %d bands, want 3", got)
	}
	for h := 32; h <= 700; h += 7 {
		plan := ssim2Plan(64, h)
		for n := 1; n <= ssim2MaxBands && n*ssim2PyrTile <= h; n++ {
			bs := &ssim2BandSet{work: true, rows: ssim2BandRows(h, n, true)}
			for b := 1; b < n; b++ {
				if y := bs.rows[b]; y%ssim2PyrTile != 0 || y <= bs.rows[b-1] {
					t.Fatalf("h %d, %d bands: cuts %v", h, n, bs.rows)
				}
			}
			for s, sc := range plan {
				next := 0
				for b := 0; b < n; b++ {
					lo, hi := bs.span(plan, b, s)
					if lo != next || hi <= lo {
						t.Fatalf("h %d, %d bands %v, scale %d (%d rows): band %d spans [%d, %d), want from %d", h, n, bs.rows, s, sc.H, b, lo, hi, next)
					}
					next = hi
				}
				if next != sc.H {
					t.Fatalf("h %d, %d bands %v, scale %d: spans end at %d, want %d", h, n, bs.rows, s, next, sc.H)
				}
			}
		}
	}
}

// scorePlanes is one score and what it left in the scratch: the
// distorted image's XYB pyramid and the five horizontal-blur pyramids,
// every (scale, channel) plane.
type scorePlanes struct {
	score  float64
	planes [][]float32 // xyb, then hb[0..4]: each per scale and channel
}

// readPlanes reads back r's distorted XYB and horizontal-blur pyramids.
func readPlanes(t *testing.T, r *ssim2Ref) [][]float32 {
	t.Helper()
	var out [][]float32
	err := r.dev.Do(context.Background(), func(g *webgpu.GPU) error {
		pyrs := [][]*webgpu.Buffer{r.xyb}
		for q := range r.hb {
			pyrs = append(pyrs, r.hb[q])
		}
		for _, bufs := range pyrs {
			p, err := pyrPlanes(g, r, bufs)
			if err != nil {
				return err
			}
			out = append(out, p...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scoreAndPlanes prepares ref, scores warm (an image that leaves other
// values in every plane, so that a row the score under test skipped
// cannot keep a right value from before) and then dist, and returns
// dist's score and planes; check sees the reference before the scores.
func scoreAndPlanes(t *testing.T, b *webgpu.Backend, ref, warm, dist *zenmetrics.Image, check func(*ssim2Ref)) scorePlanes {
	t.Helper()
	ctx := context.Background()
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	sr := r.(*ssim2Ref)
	if check != nil {
		check(sr)
	}
	if _, err := r.Score(ctx, warm); err != nil {
		t.Fatal(err)
	}
	s, err := r.Score(ctx, dist)
	if err != nil {
		t.Fatal(err)
	}
	return scorePlanes{score: s.Value, planes: readPlanes(t, sr)}
}

// withKernels runs f on the device's compiled kernels (device thread):
// tests swap a pipeline or a tuning value there for the references
// prepared after it.
func withKernels(t *testing.T, b *webgpu.Backend, f func(k *ssim2Kernels)) {
	t.Helper()
	err := b.Device().Do(context.Background(), func(g *webgpu.GPU) error {
		k, err := kernels(g)
		if err != nil {
			return err
		}
		f(k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setHBlur4t swaps the device's hblur4t pipeline (nil: hblur4 takes the
// widths % 4 == 0) and returns the one it replaced.
func setHBlur4t(t *testing.T, b *webgpu.Backend, pl *webgpu.Pipeline) (old *webgpu.Pipeline) {
	t.Helper()
	withKernels(t, b, func(k *ssim2Kernels) { old, k.hblur4t = k.hblur4t, pl })
	return old
}

// setVBand sets the device's vmaps row-band height (0: one band; a
// reference prepared after it uses it) and returns the one it replaced.
func setVBand(t *testing.T, b *webgpu.Backend, rows int) (old int) {
	t.Helper()
	withKernels(t, b, func(k *ssim2Kernels) { old, k.band = k.band, rows })
	return old
}

// TestSSIM2BandWorkPlanes checks the band work (bandwork.go): a banded
// score whose bands each build their tiles of the pyramid and blur their
// rows of every scale leaves every plane of the distorted XYB pyramid and
// of the five horizontal blurs, and the score, bit for bit as the serial
// path (one command buffer, the whole-image pyramid and blurs) does.
// Small images (the pipelined path's threshold lowered) in 2 to 5 bands:
// heights that are and are not multiples of the 32-row tile (the last
// band short or long, odd heights at every scale), odd and even widths
// (scales for hblur4t or hblur4 and for the row kernel, mixed), 8- and
// 16-bit, gray, a distorted image with alpha on an opaque reference, a
// padded stride, both pyramid layouts, hblur4 in place of hblur4t, and
// vmaps' row bands (vstate after the band work).
func TestSSIM2BandWorkPlanes(t *testing.T) {
	b := ssim2Backend(t)
	defer func(env string, pyr int, min int64, work bool) {
		ssim2BandsEnv, forcePyrBuffers, ssim2PipeMin, ssim2BandWork = env, pyr, min, work
	}(ssim2BandsEnv, forcePyrBuffers, ssim2PipeMin, ssim2BandWork)
	ssim2PipeMin, ssim2BandWork = 1, true
	type tc struct {
		w, h  int
		f, df zenmetrics.PixelFormat // reference and distorted formats
		bands int
		pad   int
		pyr   int  // forcePyrBuffers
		h4    bool // hblur4 instead of hblur4t
		vband int  // vmaps' row bands (kernels' band; 0: one)
	}
	cases := []tc{
		{200, 171, zenmetrics.RGB8, zenmetrics.RGB8, 5, 0, 0, false, 0},
		{201, 97, zenmetrics.RGB16, zenmetrics.RGB16, 3, 0, 3, false, 0},
		{256, 100, zenmetrics.RGB8, zenmetrics.RGB8, 2, 7, 0, true, 0},
		{123, 161, zenmetrics.RGB8, zenmetrics.RGB8, 4, 5, 0, false, 40},
		{333, 64, zenmetrics.Gray8, zenmetrics.Gray8, 2, 0, 3, false, 0},
		{96, 333, zenmetrics.RGB8, zenmetrics.RGBA8, 5, 0, 0, false, 0},
		{136, 250, zenmetrics.Gray16, zenmetrics.Gray16, 4, 2, 0, true, 0},
		{180, 96, zenmetrics.RGB16, zenmetrics.RGBA16, 3, 0, 0, false, 0},
	}
	for i, c := range cases {
		name := fmt.Sprintf("%dx%d_%v_%v_b%d_pad%d_pyr%d_h4%v_vband%d", c.w, c.h, c.f, c.df, c.bands, c.pad, c.pyr, c.h4, c.vband)
		t.Run(name, func(t *testing.T) {
			forcePyrBuffers = c.pyr
			if c.h4 {
				defer setHBlur4t(t, b, setHBlur4t(t, b, nil))
			}
			if c.vband > 0 {
				defer setVBand(t, b, setVBand(t, b, c.vband))
			}
			ref, _ := metrictest.Synthetic(c.w, c.h, int64(300+i), c.f)
			_, d0 := metrictest.Synthetic(c.w, c.h, int64(300+i), c.df)
			_, warm := metrictest.Synthetic(c.w, c.h, int64(400+i), c.df)
			if c.pad > 0 {
				d0, warm = metrictest.PadStride(d0, c.pad), metrictest.PadStride(warm, c.pad)
			}
			ssim2BandsEnv = "off"
			want := scoreAndPlanes(t, b, ref, warm, d0, func(r *ssim2Ref) {
				if r.banded(d0) {
					t.Fatal("banded with bands off")
				}
			})
			ssim2BandsEnv = fmt.Sprint(c.bands)
			got := scoreAndPlanes(t, b, ref, warm, d0, func(r *ssim2Ref) {
				if !r.pipelined(d0) || !r.banded(d0) || !r.bandWork() || r.bandCount(d0) != c.bands {
					t.Fatalf("pipelined %v banded %v work %v, %d bands; want %d with the band work",
						r.pipelined(d0), r.banded(d0), r.bandWork(), r.bandCount(d0), c.bands)
				}
				if (r.lay.bands[0] > 1) != (c.vband > 0) {
					t.Fatalf("%d vmaps row bands at scale 0, band height %d", r.lay.bands[0], c.vband)
				}
			})
			if math.Float64bits(got.score) != math.Float64bits(want.score) {
				t.Errorf("banded %.17g, serial %.17g", got.score, want.score)
			}
			comparePlanes(t, got.planes, want.planes, len(ssim2Plan(c.w, c.h)))
		})
	}
}

// comparePlanes reports the planes of got that differ from want (xyb,
// then the five blurs, each per scale and channel) bit for bit.
func comparePlanes(t *testing.T, got, want [][]float32, scales int) {
	t.Helper()
	names := []string{"xyb", "hb0", "hb1", "hb2", "hb3", "hb4"}
	bad := 0
	for p := range want {
		for x := range want[p] {
			if math.Float32bits(got[p][x]) != math.Float32bits(want[p][x]) {
				if bad < 5 {
					k := p / (3 * scales)
					t.Errorf("%s scale %d channel %d pixel %d: banded %g, serial %g",
						names[k], p%(3*scales)/3, p%3, x, got[p][x], want[p][x])
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d values differ", bad)
	}
}
