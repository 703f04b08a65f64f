package ssim2

import (
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
	"github.com/zenmetrics-go/zenmetrics/internal/recgauss"
)

// The fast path: where cpusimd's assembly kernels run (amd64 with AVX2 and
// FMA3, not built with -tags noasm, ZENMETRICS_NOSIMD unset), the blurs use
// them. They do libjxl's float32 operations in libjxl's order like the
// reference code in blur.go, with one difference: their fused
// multiply-adds round once, as libjxl's FMA instructions do, where the
// reference code emulates them in float64 (exact product, then two
// roundings), which differs in the last bit when the float64 sum falls
// exactly halfway between two float32 values. So the fast path is, if
// anything, closer to libjxl; scores differ from the reference path's by
// the amount recorded in simd_test.go.

// useSIMD selects the fast path for References prepared from now on (tests
// switch it to compare both paths).
var useSIMD = cpusimd.Enabled()

var (
	simdBlur = cpusimd.NewBlur(recgauss.New(1.5))
	simdXYB  = cpusimd.NewXYB(cpusimd.XYBParams{
		M: [3][3]float32{
			{opsinM00, opsinM01, opsinM02},
			{opsinM10, opsinM11, opsinM12},
			{opsinM20, opsinM21, opsinM22},
		},
		Bias: opsinBias, NegBiasCbrt: negBiasCbrt, Third: third, FourThird: fourThird,
		PosXMul: posXMul, PosXAdd: posXAdd, PosYAdd: posYAdd, PosBAdd: posBAdd,
	})
	simdTerms = cpusimd.NewTerms(ssimC2)
)

// simdWorkLen is the per-worker scratch of the fast blur for planes of
// width w: the kernels' work buffer and eight padded rows in and out for
// the last rows of a plane whose height is not a multiple of eight.
func simdWorkLen(w int) int {
	return simdBlur.RowsWorkLen(w) + 3*8*w
}

// blurSIMD is blur with the cpusimd kernels: the horizontal pass eight rows
// at a time, the vertical pass over the same column blocks as blur.
func (r *Reference) blurSIMD(dst, a, b []float32, w, h int, sc *scratch) {
	tmp := sc.tmp[:w*h]
	groups := (h + 7) / 8
	parallelFor(r.threads, groups, max(1, rowGrain(w)/8), func(worker, lo, hi int) {
		buf := sc.simdbuf[worker]
		work := buf[:simdBlur.RowsWorkLen(w)]
		for gi := lo; gi < hi; gi++ {
			y0 := 8 * gi
			if y0+8 <= h {
				var bb []float32
				if b != nil {
					bb = b[y0*w : (y0+8)*w]
				}
				simdBlur.Rows8(a[y0*w:(y0+8)*w], bb, tmp[y0*w:(y0+8)*w], w, work)
				continue
			}
			// The last rows: copied into eight rows padded with zeros (the
			// padding rows' outputs are dropped; rows are independent).
			n := (h - y0) * w
			pad := buf[len(work):]
			in8, mul8, out8 := pad[:8*w], pad[8*w:16*w], pad[16*w:24*w]
			copy(in8, a[y0*w:y0*w+n])
			clear(in8[n:])
			var bb []float32
			if b != nil {
				copy(mul8, b[y0*w:y0*w+n])
				clear(mul8[n:])
				bb = mul8
			}
			simdBlur.Rows8(in8, bb, out8, w, work)
			copy(tmp[y0*w:y0*w+n], out8[:n])
		}
	})
	bw := colBlock
	for bw > 16 && (w+bw-1)/bw < 2*r.threads {
		bw /= 2
	}
	blocks := (w + bw - 1) / bw
	parallelFor(r.threads, blocks, max(1, 16384/(bw*max(h, 1))), func(_, lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			x0 := bk * bw
			simdBlur.Cols(tmp, dst, w, h, x0, min(x0+bw, w))
		}
	})
}
