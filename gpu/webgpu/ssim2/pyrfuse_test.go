package ssim2

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// noiseImage is an image of uniformly random samples (every byte value,
// no smoothness), so the pyramid's edge handling and every sample path
// of the unpack see arbitrary data.
func noiseImage(w, h int, f zenmetrics.PixelFormat, seed uint64) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range im.Pix {
		im.Pix[i] = byte(rng.Uint32())
	}
	return im
}

// pyrPlanes reads back every (scale, channel) plane of the XYB pyramid
// bufs of r (device thread).
func pyrPlanes(g *webgpu.GPU, r *ssim2Ref, bufs []*webgpu.Buffer) ([][]float32, error) {
	var out [][]float32
	for s, sc := range r.plan {
		for c := 0; c < 3; c++ {
			pl := make([]float32, sc.W*sc.H)
			if err := webgpu.SubmitRead(g.Encoder(), bufs[r.pyr.buf(c)], 4*int64(r.pyr.off[s][c]), pl); err != nil {
				return nil, err
			}
			out = append(out, pl)
		}
	}
	return out, nil
}

// pyrRun prepares ref with the fused pyramid on or off and returns the
// scores of dists and, after each score, the distorted image's XYB
// pyramid, and the reference's (pass 0).
func pyrRun(t *testing.T, b *webgpu.Backend, fused bool, ref *zenmetrics.Image, dists []*zenmetrics.Image) ([]float64, [][][]float32) {
	t.Helper()
	ctx := context.Background()
	defer func(m int64) { ssim2PyrMax = m }(ssim2PyrMax)
	ssim2PyrMax = 0
	if fused {
		ssim2PyrMax = 1 << 62
	}
	r, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	sr := r.(*ssim2Ref)
	var planes [][][]float32
	err = b.Device().Do(ctx, func(g *webgpu.GPU) error {
		k, err := kernels(g)
		if err != nil {
			return err
		}
		if k.pyramid == nil {
			return fmt.Errorf("the pyramid kernel is not compiled (%s set?)", ssim2PyrEnv)
		}
		if got := sr.fusedPyramid(k); got != fused {
			return fmt.Errorf("fusedPyramid = %v, want %v", got, fused)
		}
		p, err := pyrPlanes(g, sr, sr.passes[0].img)
		planes = append(planes, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var scores []float64
	for _, d := range dists {
		s, err := r.Score(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		scores = append(scores, s.Value)
		err = b.Device().Do(ctx, func(g *webgpu.GPU) error {
			p, err := pyrPlanes(g, sr, sr.xyb)
			planes = append(planes, p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return scores, planes
}

// TestSSIM2PyramidFusedExact checks the fused pyramid kernel
// (ssim2_pyramid.wgsl) against unpack + downsample: every XYB plane of
// every scale, of the reference and of each distorted image, and the
// scores, bit for bit. Sizes: tiny (one scale, two), odd and even in
// each direction, widths and heights that are and are not multiples of
// the 32-pixel tile, and images large enough for all six scales; 8- and
// 16-bit, gray, alpha (two passes, blend), padded strides; photo-like
// and uniformly random pixels; both pyramid layouts (one buffer or three).
func TestSSIM2PyramidFusedExact(t *testing.T) {
	b := ssim2Backend(t)
	defer func() { forcePyrBuffers = 0 }()
	type tc struct {
		w, h int
		f    zenmetrics.PixelFormat
		pad  int
	}
	cases := []tc{
		{8, 8, zenmetrics.RGB8, 0}, {15, 9, zenmetrics.RGB8, 0}, {16, 17, zenmetrics.RGBA8, 3},
		{33, 31, zenmetrics.RGB8, 0}, {64, 64, zenmetrics.Gray8, 0}, {97, 45, zenmetrics.RGB16, 2},
		{257, 129, zenmetrics.RGB8, 0}, {300, 301, zenmetrics.RGBA16, 0}, {511, 263, zenmetrics.RGB8, 1},
	}
	if !testing.Short() {
		cases = append(cases, tc{1000, 999, zenmetrics.RGB8, 0}, tc{1023, 517, zenmetrics.GrayA8, 0})
	}
	for i, c := range cases {
		for _, noise := range []bool{false, true} {
			var ref, d0 *zenmetrics.Image
			if noise {
				ref, d0 = noiseImage(c.w, c.h, c.f, uint64(10*i)), noiseImage(c.w, c.h, c.f, uint64(10*i+1))
			} else {
				ref, d0 = metrictest.Synthetic(c.w, c.h, int64(900+i), c.f)
			}
			if c.pad > 0 {
				ref, d0 = metrictest.PadStride(ref, c.pad), metrictest.PadStride(d0, c.pad)
			}
			dists := []*zenmetrics.Image{d0, ref}
			nbs := []int{1}
			if i%3 == 0 {
				nbs = append(nbs, 3)
			}
			for _, nb := range nbs {
				forcePyrBuffers = nb
				name := fmt.Sprintf("%dx%d %v pad %d noise %v buffers %d", c.w, c.h, c.f, c.pad, noise, nb)
				ws, wp := pyrRun(t, b, false, ref, dists)
				gs, gp := pyrRun(t, b, true, ref, dists)
				for j := range ws {
					if math.Float64bits(ws[j]) != math.Float64bits(gs[j]) {
						t.Errorf("%s: dist %d: fused %.17g, separate %.17g", name, j, gs[j], ws[j])
					}
				}
				if ws[len(ws)-1] != 100 {
					t.Errorf("%s: identical images score %.17g", name, ws[len(ws)-1])
				}
				bad := 0
				for k := range wp {
					for p := range wp[k] {
						for x := range wp[k][p] {
							if math.Float32bits(wp[k][p][x]) != math.Float32bits(gp[k][p][x]) {
								if bad < 5 {
									t.Errorf("%s: image %d plane %d (scale %d, channel %d) pixel %d: fused %g, separate %g",
										name, k, p, p/3, p%3, x, gp[k][p][x], wp[k][p][x])
								}
								bad++
							}
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d values differ", name, bad)
				}
			}
		}
	}
}
