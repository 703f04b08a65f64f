package butteraugli

import "github.com/zenmetrics-go/zenmetrics/cpusimd"

// The fast path: the same pipeline with its hot loops in cpusimd's
// Butteraugli kernels (AVX2 on amd64). Those kernels do each sample's
// arithmetic exactly as the loops here do — float32 steps rounded one at a
// time in the same order, float64 where this package widens — so the fast
// path returns the reference's bits, and every test of this package checks
// both (see fast_test.go). It is on wherever cpusimd's assembly runs;
// ZENMETRICS_NOSIMD=1 or -tags noasm give the reference loops.
var useFast = cpusimd.ButteraugliEnabled()

// blurFast is blur for the FIR kernels: rows, then columns, the interior of
// both through cpusimd.BAFIR, the cut-off borders as firRow and firColumns
// compute them.
func blurFast(wk workers, k *kernel, in, out plane, sc *scratch) {
	w, h := in.w, in.h
	off := k.off
	a := sc.plane(0, w, h)
	wk.rows(h, func(y0, y1 int) {
		b1, b2 := min(w, off), max(0, w-off)
		for y := y0; y < y1; y++ {
			src, dst := in.row(y), a.row(y)
			if b1 < b2 {
				cpusimd.BAFIR(dst[b1:b2], src[b1-off:], 1, k.half)
			}
			for x := 0; x < w; x++ {
				if x < b1 || x >= b2 {
					dst[x] = borderTap(k, w, x, src)
				}
			}
		}
	})
	wk.rows(h, func(y0, y1 int) {
		var acc []float32
		for y := y0; y < y1; y++ {
			dst := out.row(y)
			if y >= off && y < h-off {
				cpusimd.BAFIR(dst, a.p[(y-off)*w:], w, k.half)
				continue
			}
			// Border row: cut-off kernel, renormalised (firColumns's
			// arithmetic, whole rows at a time).
			if acc == nil {
				acc = make([]float32, w)
			}
			lo, hi := max(0, y-off), min(h-1, y+off)
			var wsum float32
			for j := lo; j <= hi; j++ {
				wsum += k.full[j-y+off]
			}
			scale := 1 / wsum
			clear(acc)
			for j := lo; j <= hi; j++ {
				r := a.row(j)
				kw := k.full[j-y+off]
				for x := range acc {
					acc[x] += r[x] * kw
				}
			}
			for x := range acc {
				dst[x] = acc[x] * scale
			}
		}
	})
}

// The Malta difference constants of maltaUhf, maltaHfW and maltaMfW for
// cpusimd.
var (
	maltaUhfSIMD = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaUhf[0]), simdWeights(&maltaUhf[1])}
	maltaHfSIMD  = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaHfW[0]), simdWeights(&maltaHfW[1])}
	maltaMfSIMD  = [2]*cpusimd.BAMaltaWeights{simdWeights(&maltaMfW[0]), simdWeights(&maltaMfW[1])}
)

func simdWeights(m *maltaWeights) *cpusimd.BAMaltaWeights {
	return cpusimd.NewBAMaltaWeights(m.norm1, m.norm2gt, m.norm2lt)
}

// maltaFast is the Malta part of diffmapLevel for channel c: the three
// difference images, then per pixel maltaHF(UHF) + maltaLF(HF) +
// maltaLF(MF) into out.
func maltaFast(wk workers, c int, p0, p1 *psycho, dU, dH, dM padded, out plane) {
	h := out.h
	wk.rows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			cpusimd.BAMaltaDiff(maltaUhfSIMD[c], p0.uhf[c].row(y), p1.uhf[c].row(y), dU.inner(y))
			cpusimd.BAMaltaDiff(maltaHfSIMD[c], p0.hf[c].row(y), p1.hf[c].row(y), dH.inner(y))
			cpusimd.BAMaltaDiff(maltaMfSIMD[c], p0.mf[c].row(y), p1.mf[c].row(y), dM.inner(y))
		}
	})
	s := dU.stride
	wk.rows(h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			i0 := dU.origin(y) - maltaPad*s - maltaPad
			cpusimd.BAMalta(out.row(y), dU.p, dH.p, dM.p, i0, s)
		}
	})
}
