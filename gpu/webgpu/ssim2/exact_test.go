package ssim2

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

// These tests check the kernels stage by stage against a Go model of
// libjxl's float32 arithmetic (fused multiply-adds where libjxl's SIMD code
// has them): the XYB pyramid and the horizontal blur must agree bit for
// bit, the vertical blur + maps to float32 summation accuracy.

// f32fma is a*b+c rounded once to float32 (up to rare double-rounding ties).
func f32fma(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// emuHBlur is libjxl's FastGaussian1D in Go (4 lanes).
func emuHBlur(c ssim2Coef, in []float32) []float32 {
	w := len(in)
	out := make([]float32, w)
	at := func(x int) float32 {
		if x < 0 || x >= w {
			return 0
		}
		return in[x]
	}
	var prev, prev2 [3]float32
	n := -4
	for ; n < min(8, w); n++ {
		s := at(n-6) + at(n+4)
		var o [3]float32
		for k := 0; k < 3; k++ {
			o[k] = s * c.MulIn[k][0]
			o[k] = f32fma(c.MulPrev2[k][0], prev2[k], o[k])
			prev2[k] = prev[k]
			o[k] = f32fma(c.MulPrev[k][0], prev[k], o[k])
			prev[k] = o[k]
		}
		if n >= 0 {
			out[n] = o[0] + (o[1] + o[2])
		}
	}
	for ; n < w-7; n += 4 {
		var s [4]float32
		for j := 0; j < 4; j++ {
			s[j] = in[n-6+j] + in[n+4+j]
		}
		var o [3][4]float32
		for k := 0; k < 3; k++ {
			for j := 0; j < 4; j++ {
				v := s[0] * c.MulIn[k][j]
				for i := 1; i <= j; i++ {
					v = f32fma(c.MulIn[k][j-i], s[i], v)
				}
				v = f32fma(c.MulPrev2[k][j], prev2[k], v)
				v = f32fma(c.MulPrev[k][j], prev[k], v)
				o[k][j] = v
			}
			prev2[k], prev[k] = o[k][2], o[k][3]
		}
		for j := 0; j < 4; j++ {
			out[n+j] = o[0][j] + (o[1][j] + o[2][j])
		}
	}
	for ; n < w; n++ {
		s := at(n-6) + at(n+4)
		var o [3]float32
		for k := 0; k < 3; k++ {
			o[k] = s * c.MulIn[k][0]
			o[k] = f32fma(c.MulPrev2[k][0], prev2[k], o[k])
			prev2[k] = prev[k]
			o[k] = f32fma(c.MulPrev[k][0], prev[k], o[k])
			prev[k] = o[k]
		}
		out[n] = o[0] + (o[1] + o[2])
	}
	return out
}

func TestSSIM2BlurExact(t *testing.T) {
	b := ssim2Backend(t)
	ref, dist := metrictest.SyntheticPair(64, 48, 7)
	zr, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Release()
	r := zr.(*ssim2Ref)
	n := r.w * r.h
	img := make([]float32, n)
	xyb := make([]float32, n)
	hb := make([][]float32, 5)
	var part []float32
	var rdAt func(b *webgpu.Buffer, off int64, dst []float32) error
	err = b.Device().Do(context.Background(), func(g *webgpu.GPU) error {
		k, _ := kernels(g)
		if err := r.up.Put(g, nil, &r.held, dist); err != nil {
			return err
		}
		p := r.passes[0]
		g.Write(p.unpackDist, 0, r.unpackParams(ssim2Layout{format: dist.Format, stride: dist.Stride}, p.bg).bytes())
		r.distKey = ssim2Layout{}
		e := g.Encoder()
		// Every scale and channel (one dispatch each of hblur, vmaps);
		// scale 0, channel 1 is checked below.
		r.encodeChain(e, k, p, false, false)
		if err := e.Submit(); err != nil {
			return err
		}

		gi, off := r.pyr.buf(1), int64(r.pyr.off[0][1])
		rd := func(b *webgpu.Buffer, dst []float32) error {
			return rdAt(b, off, dst)
		}
		rdAt = func(b *webgpu.Buffer, off int64, dst []float32) error {
			buf := make([]byte, 4*len(dst))
			if err := g.Read(b, 4*off, buf); err != nil {
				return err
			}
			for i := range dst {
				dst[i] = math.Float32frombits(uint32(buf[4*i]) | uint32(buf[4*i+1])<<8 | uint32(buf[4*i+2])<<16 | uint32(buf[4*i+3])<<24)
			}
			return nil
		}
		if err := rd(p.img[gi], img); err != nil {
			return err
		}
		if err := rd(r.xyb[gi], xyb); err != nil {
			return err
		}
		for q := range hb {
			hb[q] = make([]float32, n)
			if err := rd(r.hb[q][gi], hb[q]); err != nil {
				return err
			}
		}
		part = make([]float32, int(r.partials.Size()/4))
		return rdAt(r.partials, 0, part)
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ssim2IIRCoef()
	t.Logf("fma mode %s", FMAMode(b))
	// Vertical pass + maps, libjxl's way, in float64 sums.
	var sums [6]float64
	for x := 0; x < r.w; x++ {
		var y1, y2 [5][3]float32
		for nn := -4; nn < r.h; nn++ {
			var m [5]float32
			for q := 0; q < 5; q++ {
				val := func(y int) float32 {
					if y < 0 || y >= r.h {
						return 0
					}
					return hb[q][y*r.w+x]
				}
				sv := val(nn-6) + val(nn+4)
				var o [3]float32
				for k := 0; k < 3; k++ {
					o[k] = f32fma(c.N2[k], sv, f32fma(-c.D1[k], y1[q][k], -y2[q][k]))
				}
				y2[q] = y1[q]
				y1[q] = o
				m[q] = o[0] + (o[1] + o[2])
			}
			if nn < 0 {
				continue
			}
			mu1, mu2 := m[0], m[1]
			mu11, mu22, mu12 := mu1*mu1, mu2*mu2, mu1*mu2
			numM := float32(1.0 - float64(float32((mu1-mu2)*(mu1-mu2))))
			numS := 2*float32(m[4]-mu12) + 0.0009
			denS := float32(float32(m[2]-mu11)+float32(m[3]-mu22)) + 0.0009
			d := 1.0 - float64(float32(float32(numM*numS)/denS))
			d = math.Max(d, 0)
			i := nn*r.w + x
			d1 := (1.0+math.Abs(float64(xyb[i]-mu2)))/(1.0+math.Abs(float64(img[i]-mu1))) - 1.0
			art, det := math.Max(d1, 0), math.Max(-d1, 0)
			sums[0] += d
			sums[1] += d * d * d * d
			sums[2] += art
			sums[3] += art * art * art * art
			sums[4] += det
			sums[5] += det * det * det * det
		}
	}
	slots := int(r.lay.count[0]) // partial sums per term
	cb := int(r.lay.base(0, 0, 1))
	for q := 0; q < 6; q++ {
		g := 0.0
		for x := 0; x < slots; x++ {
			g += float64(part[cb+q*slots+x])
		}
		rel := math.Abs(g-sums[q]) / sums[q]
		t.Logf("term %d: gpu %.9g model %.9g rel %.2e", q, g, sums[q], rel)
		if rel > 1e-6 {
			t.Errorf("vertical blur + maps, term %d: relative difference %.2e > 1e-6", q, rel)
		}
	}
	for q := 0; q < 5; q++ {
		mism, maxd := 0, 0.0
		for y := 0; y < r.h; y++ {
			row := make([]float32, r.w)
			for x := range row {
				a, bb := img[y*r.w+x], xyb[y*r.w+x]
				switch q {
				case 0:
					row[x] = a
				case 1:
					row[x] = bb
				case 2:
					row[x] = a * a
				case 3:
					row[x] = bb * bb
				default:
					row[x] = a * bb
				}
			}
			want := emuHBlur(c, row)
			for x := range want {
				got := hb[q][y*r.w+x]
				if got != want[x] {
					mism++
					maxd = math.Max(maxd, math.Abs(float64(got-want[x])))
				}
			}
		}
		if mism > 0 {
			t.Errorf("horizontal blur, quantity %d: %d of %d values differ from libjxl's arithmetic, max %g", q, mism, n, maxd)
		}
	}
}

func TestSSIM2FMAEmulationExact(t *testing.T) {
	b := ssim2Backend(t)
	color, _ := wgsl.Source("ssim2_color")
	src := color + `
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> bb: array<f32>;
@group(0) @binding(2) var<storage, read> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  fma_zero = bitcast<u32>(c[4096]); // 0, unknown to the compiler
  o[g.x] = fma_emulated(a[g.x], bb[g.x], c[g.x]);
}`
	const n = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	A, B, C := make([]float32, n), make([]float32, n), make([]float32, n+1)
	for i := range A {
		A[i] = float32(rng.Float64()*4 - 2)
		B[i] = float32(rng.Float64()*4 - 2)
		C[i] = float32(rng.Float64()*4 - 2)
	}
	C[n] = 0
	out := make([]float32, n)
	err := b.Device().Do(context.Background(), func(g *webgpu.GPU) error {
		m, err := g.Module("fmaemu", src)
		if err != nil {
			return err
		}
		p, err := g.Pipeline(m, "main", nil)
		if err != nil {
			return err
		}
		bufs := make([]*webgpu.Buffer, 4)
		for i := range bufs {
			var err error
			if bufs[i], err = g.Storage(4*n + 4); err != nil {
				return err
			}
			defer bufs[i].Release()
		}
		webgpu.WriteSlice(g, bufs[0], 0, A)
		webgpu.WriteSlice(g, bufs[1], 0, B)
		webgpu.WriteSlice(g, bufs[2], 0, C)
		e := g.Encoder()
		e.Dispatch(p, n/64, 1, 1, bufs...)
		rb, _ := e.ReadBack(bufs[3], 0, 4*n)
		if err := e.Submit(); err != nil {
			return err
		}
		return webgpu.ReadSlice(rb, out)
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range out {
		want := float32(math.FMA(float64(A[i]), float64(B[i]), float64(C[i])))
		if out[i] != want {
			if bad < 5 {
				t.Logf("%g*%g+%g: got %g want %g unfused %g", A[i], B[i], C[i], out[i], want, float32(A[i]*B[i])+C[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("emulated fma: %d of %d results differ from the fused result", bad, n)
	}
}

func emuLinear(x float32) float32 {
	if !(x > 0.04045) {
		return x * 0.0773993805
	}
	p := float32(0.821015277)
	p = f32fma(p, x, 0.796156496)
	p = f32fma(p, x, 0.162482032)
	p = f32fma(p, x, 0.0104363759)
	p = f32fma(p, x, 0.000220024833)
	q := float32(0.00652120901)
	q = f32fma(q, x, -0.0551249850)
	q = f32fma(q, x, 0.498752835)
	q = f32fma(q, x, 1.07697649)
	q = f32fma(q, x, 0.263184697)
	return p / q
}

func emuCbrt(x, add float32) float32 {
	bits := int32(math.Float32bits(x))
	var gsv int32
	if bits != 0 {
		gsv = 0x54800000 - (bits>>23)*0x002AAAAA
	}
	r := math.Float32frombits(uint32(gsv))
	x3 := x * 0.333333343
	for i := 0; i < 3; i++ {
		r2 := r * r
		r = f32fma(-x3, r2*r2, 1.33333337*r)
	}
	r2 := r * r
	r = f32fma(0.333333343, f32fma(-x, r2*r2, r), r)
	r2 = r * r
	return f32fma(r2, x, add)
}

func emuXYB(r, g, b float32) [3]float32 {
	m0 := max(f32fma(0.300000012, r, f32fma(0.621999979, g, f32fma(0.0780000016, b, 0.00379307335))), 0)
	m1 := max(f32fma(0.230000004, r, f32fma(0.691999972, g, f32fma(0.0780000016, b, 0.00379307335))), 0)
	m2 := max(f32fma(0.243422687, r, f32fma(0.204767451, g, f32fma(0.551809847, b, 0.00379307335))), 0)
	c0, c1, c2 := emuCbrt(m0, -0.155954197), emuCbrt(m1, -0.155954197), emuCbrt(m2, -0.155954197)
	x := 0.5 * (c0 - c1)
	y := 0.5 * (c0 + c1)
	return [3]float32{float32(x*14) + 0.42, y + 0.01, (c2 - y) + 0.55}
}

func TestSSIM2XYBExact(t *testing.T) {
	b := ssim2Backend(t)
	ref, _ := metrictest.SyntheticPair(37, 29, 3)
	zr, err := b.Prepare(context.Background(), zenmetrics.SSIMULACRA2, ref, zenmetrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Release()
	r := zr.(*ssim2Ref)
	var got [][3][]float32
	err = b.Device().Do(context.Background(), func(g *webgpu.GPU) error {
		for s, sc := range r.plan {
			var pl [3][]float32
			for c := 0; c < 3; c++ {
				n := sc.W * sc.H
				buf := make([]byte, 4*n)
				if err := g.Read(r.passes[0].img[r.pyr.buf(c)], 4*int64(r.pyr.off[s][c]), buf); err != nil {
					return err
				}
				pl[c] = make([]float32, n)
				for i := range pl[c] {
					pl[c][i] = math.Float32frombits(uint32(buf[4*i]) | uint32(buf[4*i+1])<<8 | uint32(buf[4*i+2])<<16 | uint32(buf[4*i+3])<<24)
				}
			}
			got = append(got, pl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Go emulation.
	w, h := ref.Width, ref.Height
	lin := [3][]float32{make([]float32, w*h), make([]float32, w*h), make([]float32, w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				lin[c][y*w+x] = emuLinear(float32(ref.Sample(x, y, c)) * (float32(1) / float32(255)))
			}
		}
	}
	for s, sc := range r.plan {
		if s > 0 {
			pw, ph := w, h
			w, h = sc.W, sc.H
			var nl [3][]float32
			for c := 0; c < 3; c++ {
				nl[c] = make([]float32, w*h)
				for y := 0; y < h; y++ {
					for x := 0; x < w; x++ {
						var sum float32
						for iy := 0; iy < 2; iy++ {
							for ix := 0; ix < 2; ix++ {
								sum += lin[c][min(2*y+iy, ph-1)*pw+min(2*x+ix, pw-1)]
							}
						}
						nl[c][y*w+x] = sum * 0.25
					}
				}
			}
			lin = nl
		}
		bad := 0
		for i := 0; i < w*h; i++ {
			v := emuXYB(lin[0][i], lin[1][i], lin[2][i])
			for c := 0; c < 3; c++ {
				if v[c] != got[s][c][i] {
					if bad < 3 {
						t.Logf("scale %d px %d c %d: gpu %g emu %g", s, i, c, got[s][c][i], v[c])
					}
					bad++
				}
			}
		}
		if bad > 0 {
			t.Errorf("scale %d (%dx%d): %d of %d XYB values differ from libjxl's arithmetic", s, w, h, bad, 3*w*h)
		}
	}
}
