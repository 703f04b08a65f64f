package ssim2

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestSSIM2HBlurVariantsExact checks the horizontal blurs of both 16-byte
// kernels, hblur4 (a thread per row and quantity) and hblur4t (a workgroup
// per 32 rows, inputs staged in 64-column tiles; with staged outputs, in
// 32-column tiles), against libjxl's
// arithmetic (emuHBlur) bit for bit: every scale, channel, row and
// quantity of a score's pyramids. TestSSIM2BlurExact looks at one plane of
// one size; the tiled kernel has edges of its own, so the sizes here put
// them everywhere: widths with no interior (8, 12), one interior step
// (16), exactly one tile (64), a tile plus one block (68, 132), partial
// last tiles at every scale (200, 260, 1000), and heights that leave a
// partial last workgroup (33, 37, 65, 70) or are below one (9, 12, 31).
// Scales whose width is not a multiple of 4 take the row kernel and are
// checked too. The quantity maps of kept reference blurs (0x20, 0x431)
// are covered by TestSSIM2KeptBlursBitIdentical under either kernel.
func TestSSIM2HBlurVariantsExact(t *testing.T) {
	b := ssim2Backend(t)
	ctx := context.Background()
	sizes := [][2]int{{8, 8}, {12, 9}, {16, 33}, {64, 40}, {68, 37}, {132, 70}, {200, 65}, {260, 31}, {1000, 12}}
	if testing.Short() {
		sizes = [][2]int{{12, 9}, {16, 33}, {68, 37}, {200, 65}}
	}
	var k *ssim2Kernels
	var keep, tiled, tiledOut *webgpu.Pipeline
	err := b.Device().Do(ctx, func(g *webgpu.GPU) error {
		var err error
		if k, err = kernels(g); err != nil || k.hblur4 == nil {
			return err
		}
		keep = k.hblur4t
		if tiled, err = k.compileHBlur4t(g, false); err != nil {
			return err
		}
		tiledOut, err = k.compileHBlur4t(g, true)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if k.hblur4 == nil {
		t.Skip("hblur4 disabled (ZENMETRICS_SSIM2_HBLUR4=0)")
	}
	defer func() {
		_ = b.Device().Do(ctx, func(*webgpu.GPU) error { k.hblur4t = keep; return nil })
	}()
	variants := []struct {
		name string
		pl   *webgpu.Pipeline
	}{{"hblur4", nil}, {"hblur4t", tiled}, {"hblur4t out", tiledOut}}
	for i := 1; i < len(variants); i++ {
		if variants[i].pl == nil {
			t.Logf("%s not available on this device (workgroup memory limit)", variants[i].name)
			variants = append(variants[:i], variants[i+1:]...)
			i--
		}
	}
	c := ssim2IIRCoef()
	for _, v := range variants {
		if err := b.Device().Do(ctx, func(*webgpu.GPU) error { k.hblur4t = v.pl; return nil }); err != nil {
			t.Fatal(err)
		}
		for i, sz := range sizes {
			ref, dist := metrictest.SyntheticPair(sz[0], sz[1], int64(40+i))
			checked, bad := checkHBlurExact(t, b, ref, dist, c)
			t.Logf("%s %dx%d: %d planes (scale, channel, quantity) checked, %d differ", v.name, sz[0], sz[1], checked, bad)
		}
	}
}

// checkHBlurExact scores dist against ref once (the chain of one pass),
// reads the XYB and horizontal-blur pyramids back and compares every
// blurred row with emuHBlur; it reports the planes checked and how many
// differ (each difference is also a test error).
func checkHBlurExact(t *testing.T, b *webgpu.Backend, ref, dist *zenmetrics.Image, c ssim2Coef) (checked, bad int) {
	t.Helper()
	ctx := context.Background()
	zr, err := b.Prepare(ctx, zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Release()
	r := zr.(*ssim2Ref)
	if r.keep {
		t.Fatal("kept reference blurs on: the distorted image's planes hold three quantities")
	}
	read := func(g *webgpu.GPU, buf *webgpu.Buffer) ([]float32, error) {
		raw := make([]byte, 4*r.pyr.size)
		if err := g.Read(buf, 0, raw); err != nil {
			return nil, err
		}
		out := make([]float32, r.pyr.size)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, nil
	}
	groups := len(r.pyr.groups())
	img := make([][]float32, groups)
	xyb := make([][]float32, groups)
	hb := make([][5][]float32, groups)
	err = b.Device().Do(ctx, func(g *webgpu.GPU) error {
		k, err := kernels(g)
		if err != nil {
			return err
		}
		if err := r.up.Put(g, nil, &r.held, dist); err != nil {
			return err
		}
		p := r.passes[0]
		g.Write(p.unpackDist, 0, r.unpackParams(ssim2Layout{format: dist.Format, stride: dist.Stride}, p.bg).bytes())
		r.distKey = ssim2Layout{}
		// Poison the blur planes first (NaN bits everywhere): a value the
		// kernel leaves unwritten must not pass for a stale right one
		// (the scratch may hold an earlier run's blurs of the same pair).
		junk := make([]byte, 4*r.pyr.size)
		for i := range junk {
			junk[i] = 0xff
		}
		for gi := 0; gi < groups; gi++ {
			for q := range r.hb {
				g.Write(r.hb[q][gi], 0, junk)
			}
		}
		e := g.Encoder()
		r.encodeChain(e, k, p, false, false)
		if err := e.Submit(); err != nil {
			return err
		}
		for gi := 0; gi < groups; gi++ {
			if img[gi], err = read(g, p.img[gi]); err != nil {
				return err
			}
			if xyb[gi], err = read(g, r.xyb[gi]); err != nil {
				return err
			}
			for q := range hb[gi] {
				if hb[gi][q], err = read(g, r.hb[q][gi]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for s, sc := range r.plan {
		for ch := 0; ch < 3; ch++ {
			gi, off := r.pyr.buf(ch), int(r.pyr.off[s][ch])
			for q := 0; q < 5; q++ {
				checked++
				mism, first := 0, -1
				row := make([]float32, sc.W)
				for y := 0; y < sc.H; y++ {
					at := off + y*sc.W
					for x := range row {
						a, d := img[gi][at+x], xyb[gi][at+x]
						switch q {
						case 0:
							row[x] = a
						case 1:
							row[x] = d
						case 2:
							row[x] = a * a
						case 3:
							row[x] = d * d
						default:
							row[x] = a * d
						}
					}
					want := emuHBlur(c, row)
					for x, wv := range want {
						if got := hb[gi][q][at+x]; math.Float32bits(got) != math.Float32bits(wv) {
							if first < 0 {
								first = y*sc.W + x
							}
							mism++
						}
					}
				}
				if mism > 0 {
					bad++
					t.Errorf("%dx%d scale %d (%dx%d) channel %d quantity %d: %d of %d values differ from libjxl's arithmetic, first at x %d y %d",
						r.w, r.h, s, sc.W, sc.H, ch, q, mism, sc.W*sc.H, first%sc.W, first/sc.W)
				}
			}
		}
	}
	return checked, bad
}
