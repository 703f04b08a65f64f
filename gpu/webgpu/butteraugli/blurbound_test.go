package butteraugli

import (
	"fmt"
	"math"
	"testing"
)

// Rounding bounds of the blurs' planes (TestButteraugliLFVariants,
// TestButteraugliBlurVariants). Their row planes are held to the exact
// FIR within firbound_test.go's bounds. Their column kernels end in
// pointwise steps that may branch (remove_range, amplify_range,
// maximum_clamp) and divide, so the exact column blur b ± E (the FIR of
// the run's own row planes and its bound: each pass is held to its own
// rounding) is carried through each step in interval arithmetic: every
// function the steps apply is monotone, so the image of an interval is
// the interval of its ends' images, and each operation that rounds widens
// its interval by k·u of its largest magnitude (k = 1 for add, sub and
// mul, 5 for a division: 2.5 ulp; 4 for maximum_clamp's three roundings).
// A fused a*b+c lies inside the interval of the unfused one (it drops the
// product's rounding), so the intervals hold whatever a driver contracts.
// The endpoints are float64, exact to ~1e-16 relative, far inside the
// widening.

// bfIv is a closed interval of reals.
type bfIv struct{ lo, hi float64 }

func bfPt(v float64) bfIv { return bfIv{v, v} }

func (a bfIv) add(b bfIv) bfIv { return bfIv{a.lo + b.lo, a.hi + b.hi} }
func (a bfIv) sub(b bfIv) bfIv { return bfIv{a.lo - b.hi, a.hi - b.lo} }

func (a bfIv) mul(b bfIv) bfIv {
	p := [4]float64{a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}
	return bfIv{min(p[0], p[1], p[2], p[3]), max(p[0], p[1], p[2], p[3])}
}

// sqr is a·a for one value of a (not two values of the interval).
func (a bfIv) sqr() bfIv {
	l, h := a.lo*a.lo, a.hi*a.hi
	if a.lo <= 0 && a.hi >= 0 {
		return bfIv{0, max(l, h)}
	}
	return bfIv{min(l, h), max(l, h)}
}

// div is a/b for b > 0.
func (a bfIv) div(b bfIv) bfIv { return a.mul(bfIv{1 / b.hi, 1 / b.lo}) }

// mono is f(w, ·) of the interval for f nondecreasing in its second
// argument.
func (a bfIv) mono(f func(w, x float64) float64, w float64) bfIv { return bfIv{f(w, a.lo), f(w, a.hi)} }

// round widens a by k roundings of its largest magnitude.
func (a bfIv) round(k float64) bfIv {
	m := k * bfU * max(math.Abs(a.lo), math.Abs(a.hi))
	return bfIv{a.lo - m, a.hi + m}
}

// has reports whether v lies in a (NaN does not).
func (a bfIv) has(v float32) bool { return float64(v) >= a.lo && float64(v) <= a.hi }

// The pointwise steps' functions (butteraugli_common.wgsl), each
// nondecreasing in its second argument: remove_range and amplify_range,
// exact in either precision (float64 on the intervals' ends, float32 in
// the emulation); maximum_clamp on reals, and in f32 with its product and
// sum evaluated by mad.
func bfRemoveRange[F float32 | float64](w, x F) F {
	switch {
	case x > w:
		return x - w
	case x < -w:
		return x + w
	}
	return 0
}

func bfAmplifyRange[F float32 | float64](w, x F) F {
	switch {
	case x > w:
		return x + w
	case x < -w:
		return x - w
	}
	return x + x
}

func bfMaximumClamp(m, v float64) float64 {
	c := float64(bfTables.MaxclampMul)
	switch {
	case v >= m:
		return (v-m)*c + m
	case v < -m:
		return (v+m)*c - m
	}
	return v
}

func bfMaximumClamp32(m, v float32, mad func(a, b, c float32) float32) float32 {
	switch {
	case v >= m:
		return mad(float32(v-m), bfTables.MaxclampMul, m)
	case v < -m:
		return mad(float32(v+m), bfTables.MaxclampMul, -m)
	}
	return v
}

// f32 is the f32 value of a WGSL literal, as a float64.
func f32(v float64) float64 { return float64(float32(v)) }

// bfTestStage is a blur stage as the tests run it: the row kernel on the
// first src input planes, then the column kernel, which blurs the row
// planes, rewrites the first rw input planes and writes outs planes more
// (encodeDecompose's bindings, bfStage's planes).
type bfTestStage struct {
	name   string
	stage  bfStage
	planes []string // the checked planes: rows, then rw, then outs
	// point is the pointwise step of one pixel in intervals: x the rw
	// planes' values before it, b the column blurs; rw planes, then outs.
	point func(x []float64, b []bfIv) []bfIv
	// emul is the same in f32, each contractible a*b+c evaluated by mad.
	emul func(x, b []float32, mad func(a, b, c float32) float32) []float32
}

func (st bfTestStage) src() int  { return st.stage.planes() }
func (st bfTestStage) rw() int   { return st.stage.rd }
func (st bfTestStage) outs() int { return len(st.stage.rw) - st.stage.rd }

// The test stages: the LF, HF, UHF and masking blurs (butteraugli_col_lf,
// _mf, _uhf and _plain.wgsl and their vec4 versions).
var (
	bfTestLF = bfTestStage{
		name: "LF", stage: bfStageLF,
		planes: []string{"rows X", "rows Y", "rows B", "X-LF", "Y-LF", "B-LF", "LF X", "LF Y", "LF B"},
		point: func(x []float64, b []bfIv) []bfIv {
			return []bfIv{bfPt(x[0]).sub(b[0]).round(1), bfPt(x[1]).sub(b[1]).round(1), bfPt(x[2]).sub(b[2]).round(1),
				b[0].mul(bfPt(f32(33.832837186260))).round(1), b[1].mul(bfPt(f32(14.458268100570))).round(1),
				bfPt(f32(-0.362267051518)).mul(b[1]).round(1).add(b[2]).round(1).mul(bfPt(f32(49.87984651440))).round(1)}
		},
		emul: func(x, b []float32, mad func(a, b, c float32) float32) []float32 {
			return []float32{float32(x[0] - b[0]), float32(x[1] - b[1]), float32(x[2] - b[2]),
				float32(b[0] * 33.832837186260), float32(b[1] * 14.458268100570),
				float32(mad(-0.362267051518, b[1], b[2]) * 49.87984651440)}
		},
	}
	bfTestHF = bfTestStage{
		name: "HF/MF", stage: bfStageHF,
		planes: []string{"rows X", "rows Y", "rows B", "HF X", "HF Y", "MF X", "MF Y", "MF B"},
		point: func(x []float64, b []bfIv) []bfIv {
			hx := bfPt(x[0]).sub(b[0]).round(1)
			hy := bfPt(x[1]).sub(b[1]).round(1)
			d := hy.sqr().round(1).add(bfPt(46)).round(1)
			s := bfPt(46).div(d).round(5).mul(bfPt(float64(bfTables.SuppressOMS))).round(1).
				add(bfPt(f32(0.653020556257))).round(1)
			return []bfIv{s.mul(hx).round(1), hy, b[0].mono(bfRemoveRange, f32(0.29)).round(1),
				b[1].mono(bfAmplifyRange, f32(0.1)).round(1), b[2]}
		},
		emul: func(x, b []float32, mad func(a, b, c float32) float32) []float32 {
			hx, hy := float32(x[0]-b[0]), float32(x[1]-b[1])
			q := float32(46 / mad(hy, hy, 46))
			s := mad(q, bfTables.SuppressOMS, float32(0.653020556257))
			return []float32{float32(s * hx), hy, bfRemoveRange(0.29, b[0]), bfAmplifyRange(0.1, b[1]), b[2]}
		},
	}
	bfTestUHF = bfTestStage{
		name: "UHF", stage: bfStageUHF,
		planes: []string{"rows X", "rows Y", "UHF X", "UHF Y", "HF X", "HF Y"},
		point: func(x []float64, b []bfIv) []bfIv {
			ux := bfPt(x[0]).sub(b[0]).round(1)
			hv := b[1].mono(bfMaximumClamp, f32(28.4691806922)).round(4)
			uv := bfPt(x[1]).sub(hv).round(1).mono(bfMaximumClamp, f32(5.19175294647)).round(4)
			return []bfIv{ux.mono(bfRemoveRange, f32(0.04)).round(1), uv.mul(bfPt(f32(2.69313763794))).round(1),
				b[0].mono(bfRemoveRange, f32(1.5)).round(1),
				hv.mul(bfPt(f32(2.155))).round(1).mono(bfAmplifyRange, f32(0.132)).round(1)}
		},
		emul: func(x, b []float32, mad func(a, b, c float32) float32) []float32 {
			hv := bfMaximumClamp32(28.4691806922, b[1], mad)
			uv := bfMaximumClamp32(5.19175294647, float32(x[1]-hv), mad)
			return []float32{bfRemoveRange(0.04, float32(x[0]-b[0])), float32(uv * 2.69313763794),
				bfRemoveRange(1.5, b[0]), bfAmplifyRange(0.132, float32(hv*2.155))}
		},
	}
	bfTestMask = bfTestStage{
		name: "mask", stage: bfStageMask,
		planes: []string{"rows", "mask"},
		point:  func(x []float64, b []bfIv) []bfIv { return []bfIv{b[0]} },
		emul:   func(x, b []float32, mad func(a, b, c float32) float32) []float32 { return []float32{b[0]} },
	}
	bfTestStages = []bfTestStage{bfTestLF, bfTestHF, bfTestUHF, bfTestMask}
)

// bfStageCheck compares the planes of one run of stage st with kernel k
// on the planes in (w×h, st.src() of them) with the exact values: the row
// planes with the FIR of in, the rest with st.point around the column FIR
// of the run's own row planes. It returns a line for each plane with
// values outside their bound (NaN included) and the largest ratio of a
// difference from the middle of its interval to the interval's half
// width.
func bfStageCheck(st bfTestStage, k bfKernel, w, h int, in, out [][]float32) (bad []string, worst float64) {
	n := w * h
	ivs := make([][]bfIv, len(out))
	for p := range ivs {
		ivs[p] = make([]bfIv, n)
	}
	cols := make([][2][]float64, st.src())
	for c := 0; c < st.src(); c++ {
		v, e := bfFIRExact(k, in[c], w, h, true)
		for i := range v {
			ivs[c][i] = bfIv{v[i] - e[i], v[i] + e[i]}
		}
		cols[c][0], cols[c][1] = bfFIRExact(k, out[c], w, h, false)
	}
	x := make([]float64, st.rw())
	b := make([]bfIv, st.src())
	for i := 0; i < n; i++ {
		for c := range x {
			x[c] = float64(in[c][i])
		}
		for c := range b {
			b[c] = bfIv{cols[c][0][i] - cols[c][1][i], cols[c][0][i] + cols[c][1][i]}
		}
		for p, iv := range st.point(x, b) {
			ivs[st.src()+p][i] = iv
		}
	}
	for p := range out {
		cnt, first := 0, -1
		for i, v := range out[p] {
			iv := ivs[p][i]
			if !iv.has(v) {
				if first < 0 {
					first = i
				}
				cnt++
				continue
			}
			if r := (iv.hi - iv.lo) / 2; r > 0 {
				worst = max(worst, math.Abs(float64(v)-(iv.lo+iv.hi)/2)/r)
			}
		}
		if cnt > 0 {
			i := first
			bad = append(bad, fmt.Sprintf("%s %s: %d of %d values outside the bound, first at x %d y %d: %g, not in [%g, %g]",
				st.name, st.planes[p], cnt, n, i%w, i/w, out[p][i], ivs[p][i].lo, ivs[p][i].hi))
		}
	}
	return bad, worst
}

// bfStageEmulate evaluates stage st with kernel k in f32 on the CPU on the
// planes in (w×h), in butteraugli_fir.wgsl's order, with every product
// fused into the sum it feeds (fused) or none (bfMad): the planes
// bfStageCheck reads.
func bfStageEmulate(st bfTestStage, k bfKernel, in [][]float32, w, h int, fused bool) [][]float32 {
	mad := bfMad(fused)
	n := w * h
	out := make([][]float32, st.src()+st.rw()+st.outs())
	for p := range out {
		out[p] = make([]float32, n)
	}
	for c := 0; c < st.src(); c++ {
		src := in[c]
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				out[c][y*w+x] = bfFIREmulate(k, func(j int) float32 { return src[y*w+j] }, x, w, mad)
			}
		}
	}
	xs, b := make([]float32, st.rw()), make([]float32, st.src())
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			for c := range b {
				t := out[c]
				b[c] = bfFIREmulate(k, func(j int) float32 { return t[j*w+x] }, y, h, mad)
			}
			for c := range xs {
				xs[c] = in[c][i]
			}
			for p, v := range st.emul(xs, b, mad) {
				out[st.src()+p][i] = v
			}
		}
	}
	return out
}

// TestButteraugliBlurBound holds the CPU emulation of each stage, with no
// product fused and with every one fused, to bfStageCheck's bounds, so
// the bounds admit whatever a driver contracts; and checks that they
// still catch a pair of taps swapped.
func TestButteraugliBlurBound(t *testing.T) {
	for _, st := range bfTestStages {
		k := st.stage.kern
		for i, sz := range [][2]int{{5, 7}, {9, 13}, {67, 41}, {40, 70}} {
			w, h := sz[0], sz[1]
			in := bfTestPlanes(w, h, int64(300+i))
			plain := bfStageEmulate(st, k, in[:], w, h, false)
			fused := bfStageEmulate(st, k, in[:], w, h, true)
			moved := 0
			for p := range plain {
				for j := range plain[p] {
					if plain[p][j] != fused[p][j] {
						moved++
					}
				}
			}
			for _, c := range []struct {
				name string
				out  [][]float32
			}{{"unfused", plain}, {"fused", fused}} {
				bad, worst := bfStageCheck(st, k, w, h, in[:], c.out)
				for _, b := range bad {
					t.Errorf("%dx%d %s: %s", w, h, c.name, b)
				}
				t.Logf("%s %dx%d %s: largest difference %.3f of its bound (%d values move when fused)", st.name, w, h, c.name, worst, moved)
			}
			if w < 2*k.off+1 || h < 2*k.off+1 {
				continue
			}
			swapped := k
			swapped.half = append([]float32(nil), k.half...)
			swapped.half[1], swapped.half[2] = swapped.half[2], swapped.half[1]
			if bad, _ := bfStageCheck(st, k, w, h, in[:], bfStageEmulate(st, swapped, in[:], w, h, false)); len(bad) == 0 {
				t.Errorf("%s %dx%d: two taps swapped, but every value is within its bound", st.name, w, h)
			}
		}
	}
}
