package ssim2

import (
	"github.com/zenmetrics-go/zenmetrics/cpusimd"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
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
	tmp := sc.tmpPlane(w * h)
	r.hblurSIMD(tmp, a, b, w, h, sc)
	bw := colBlock
	for bw > 16 && (w+bw-1)/bw < 2*r.threads {
		bw /= 2
	}
	blocks := (w + bw - 1) / bw
	parallel.For(r.threads, blocks, max(1, 16384/(bw*max(h, 1))), func(_, lo, hi int) {
		for bk := lo; bk < hi; bk++ {
			x0 := bk * bw
			simdBlur.Cols(tmp, dst, w, h, x0, min(x0+bw, w))
		}
	})
}

// hblurSIMD is blurSIMD's horizontal pass, eight rows at a time.
func (r *Reference) hblurSIMD(tmp, a, b []float32, w, h int, sc *scratch) {
	groups := (h + 7) / 8
	parallel.For(r.threads, groups, max(1, parallel.RowGrain(w)/8), func(worker, lo, hi int) {
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
}

// fuseSIMD selects fusedTerms where it applies (tests switch it off to
// compare with the plane-by-plane path, which gives the same bits).
var fuseSIMD = true

// ringRows is the number of horizontal-pass rows fusedTerms keeps per blur:
// three groups of eight, enough for the vertical pass's window of rows
// y−N−1 … y+N−1 (2N+1 = 11) behind the group being produced.
const ringRows = 24

// fusedLen is the length of scratch.fused for planes of width w: per blur
// a ring of ringRows horizontal-pass rows (plus the padding VRow reads past
// the last one), the vertical states and two output rows.
func fusedLen(w int) int {
	w8 := (w + 7) &^ 7
	return 3 * (ringRows*w + w8 + cpusimd.VRowStateLen(w8) + 2*w8)
}

// fusedTerms is the distorted image's half of one channel at one scale,
// streamed on one goroutine with worker's buffers (streamBlurs): the three
// blurs (img2, img2², img1·img2) row by row, and each output row's error
// terms right away. The blurred planes mu2, s22 and s12 never exist whole,
// which saves most of the memory traffic of the plane-by-plane path; the
// arithmetic is the same, so are the bits. Channels are independent, so
// several goroutines run one channel each.
func (r *Reference) fusedTerms(rows []float64, img1, mu1, vr1, img2 []float32, w, h int, sc *scratch, worker int) {
	inputs := [][2][]float32{{img2, nil}, {img2, img2}, {img1, img2}}
	streamBlurs(inputs, w, h, sc, worker, func(y int, out *[3][]float32) {
		o := y * w
		simdTerms.Row(rows[6*y:6*y+6], img1[o:o+w], mu1[o:o+w], vr1[o:o+w],
			img2[o:o+w], out[0][:w], out[1][:w], out[2][:w])
	})
}

// fusedStats is the reference's half of one channel at one scale, streamed
// like fusedTerms: mu = blur(img) and vr = blur(img²) − mu², each row
// written once. blurSIMD would write both blurs through a whole
// horizontal-pass plane and then make one more pass for vr; here neither
// that plane nor the extra pass exists. Same kernels, same order: same
// bits.
func (r *Reference) fusedStats(img, mu, vr []float32, w, h int, sc *scratch, worker int) {
	inputs := [][2][]float32{{img, nil}, {img, img}}
	streamBlurs(inputs, w, h, sc, worker, func(y int, out *[3][]float32) {
		o := y * w
		m, s, v := mu[o:o+w:o+w], vr[o:o+w:o+w], out[1][:w:w]
		copy(m, out[0][:w])
		for x := range m {
			s[x] = v[x] - float32(m[x]*m[x])
		}
	})
}

// streamBlurs blurs up to three products of planes (in[1] nil: in[0]
// itself) side by side on one goroutine with worker's buffers
// (scratch.fused and simdbuf): eight rows at a time through the
// horizontal pass into small rings of rows, each output row of the
// vertical pass as soon as its inputs exist. emit gets the output rows of
// row y (w8 floats each, the first w meaningful), in row order, before
// they are overwritten.
func streamBlurs(in [][2][]float32, w, h int, sc *scratch, worker int, emit func(y int, out *[3][]float32)) {
	N := simdBlur.Radius()
	w8 := (w + 7) &^ 7
	buf := sc.fused[worker]
	take := func(n int) []float32 {
		p := buf[:n:n]
		buf = buf[n:]
		return p
	}
	nb := len(in)
	var ring, st, out, out2 [3][]float32
	for b := 0; b < nb; b++ {
		ring[b] = take(ringRows*w + w8)
		st[b] = take(cpusimd.VRowStateLen(w8))
		out[b] = take(w8)
		out2[b] = take(w8)
		clear(st[b])
		// VRow reads w8 columns from a row start: the padding after the
		// last ring row must hold finite values (its outputs are dropped).
		clear(ring[b][ringRows*w:])
	}
	wbuf := sc.simdbuf[worker]
	work := wbuf[:simdBlur.RowsWorkLen(w)]
	pad := wbuf[len(work):]
	in8, mul8, out8 := pad[:8*w], pad[8*w:16*w], pad[16*w:24*w]
	ringRow := func(b, y int) []float32 {
		o := (y % ringRows) * w
		return ring[b][o : o+w8]
	}
	inputs := func(b, y int) (top, bot []float32) {
		if t := y - N - 1; t >= 0 {
			top = ringRow(b, t)
		}
		if t := y + N - 1; t < h {
			bot = ringRow(b, t)
		}
		return top, bot
	}
	set := 0
	next := 1 - N // the next row of the vertical pass
	for y0 := 0; y0 < h; y0 += 8 {
		slot := (y0 % ringRows) * w
		for b, p := range in {
			dst := ring[b][slot : slot+8*w]
			if y0+8 <= h {
				var m []float32
				if p[1] != nil {
					m = p[1][y0*w : (y0+8)*w]
				}
				simdBlur.Rows8(p[0][y0*w:(y0+8)*w], m, dst, w, work)
				continue
			}
			n := (h - y0) * w
			copy(in8, p[0][y0*w:y0*w+n])
			clear(in8[n:])
			var m []float32
			if p[1] != nil {
				copy(mul8, p[1][y0*w:y0*w+n])
				clear(mul8[n:])
				m = mul8
			}
			simdBlur.Rows8(in8, m, out8, w, work)
			copy(dst[:n], out8[:n])
		}
		avail := min(y0+8, h)
		limit := avail - N + 1
		if avail == h {
			limit = h
		}
		// Two rows per pass over the states where possible; rows before 0
		// only warm the states up.
		for ; next+1 < limit; next += 2 {
			for b := 0; b < nb; b++ {
				top0, bot0 := inputs(b, next)
				top1, bot1 := inputs(b, next+1)
				simdBlur.VRow2(top0, bot0, top1, bot1, out[b], out2[b], st[b], w8, set)
			}
			if next >= 0 {
				emit(next, &out)
			}
			if next+1 >= 0 {
				emit(next+1, &out2)
			}
		}
		for ; next < limit; next++ {
			for b := 0; b < nb; b++ {
				top, bot := inputs(b, next)
				simdBlur.VRow(top, bot, out[b], st[b], w8, set)
			}
			set ^= 1
			if next >= 0 {
				emit(next, &out)
			}
		}
	}
}
