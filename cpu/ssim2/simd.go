package ssim2

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
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
func fusedLen(w int) int { return 3 * streamLen(w) }

// streamLen is what one blur of a blurStream takes of its buffer for
// planes of width w.
func streamLen(w int) int {
	w8 := (w + 7) &^ 7
	return ringRows*w + w8 + cpusimd.VRowStateLen(w8) + 2*w8
}

// maxBlurs is the most blurs one blurStream runs side by side: the five of
// a pair scored in one pass (pair.go).
const maxBlurs = 5

// fusedTerms is the distorted image's half of one channel at one scale,
// streamed on one goroutine with worker's buffers (streamBlurs): the three
// blurs (img2, img2², img1·img2) row by row, and each output row's error
// terms right away. The blurred planes mu2, s22 and s12 never exist whole,
// which saves most of the memory traffic of the plane-by-plane path; the
// arithmetic is the same, so are the bits. Channels are independent, so
// several goroutines run one channel each.
func (r *Reference) fusedTerms(rows []float64, img1, mu1, vr1, img2 []float32, w, h int, sc *scratch, worker int) {
	inputs := [][2][]float32{{img2, nil}, {img2, img2}, {img1, img2}}
	streamBlurs(inputs, w, h, sc, worker, func(y int, out *[maxBlurs][]float32) {
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
	streamBlurs(inputs, w, h, sc, worker, func(y int, out *[maxBlurs][]float32) {
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
// (scratch.fused and simdbuf), a blurStream fed eight rows at a time. emit
// gets the output rows of row y (w8 floats each, the first w meaningful),
// in row order, before they are overwritten.
func streamBlurs(in [][2][]float32, w, h int, sc *scratch, worker int, emit func(y int, out *[maxBlurs][]float32)) {
	var bs blurStream
	bs.init(len(in), w, h, sc.fused[worker], sc.simdbuf[worker])
	var rows [maxBlurs][2][]float32
	for y0 := 0; y0 < h; y0 += 8 {
		y1 := min(y0+8, h)
		for b, p := range in {
			rows[b][0] = p[0][y0*w : y1*w]
			rows[b][1] = nil
			if p[1] != nil {
				rows[b][1] = p[1][y0*w : y1*w]
			}
		}
		bs.group(y0, rows[:len(in)], emit)
	}
}

// blurStream is up to three blurs of one plane streamed together: each
// group of eight rows goes through the horizontal pass into small rings of
// rows, and each output row of the vertical pass is produced as soon as
// its inputs exist (rows y−N−1 and y+N−1 of the horizontal pass).
type blurStream struct {
	nb, w, h, w8, N     int
	ring, st, out, out2 [maxBlurs][]float32
	work, in8, mul8, o8 []float32
	set, next           int
}

// init sets bs up for nb blurs of a w×h plane in fused (nb·streamLen(w)
// floats; nb ≤ maxBlurs) and simdbuf (simdWorkLen(w) floats, only used during
// group, so streams run one after the other may share it).
func (bs *blurStream) init(nb, w, h int, fused, simdbuf []float32) {
	*bs = blurStream{nb: nb, w: w, h: h, w8: (w + 7) &^ 7, N: simdBlur.Radius()}
	take := func(n int) []float32 {
		p := fused[:n:n]
		fused = fused[n:]
		return p
	}
	for b := 0; b < nb; b++ {
		bs.ring[b] = take(ringRows*w + bs.w8)
		bs.st[b] = take(cpusimd.VRowStateLen(bs.w8))
		bs.out[b] = take(bs.w8)
		bs.out2[b] = take(bs.w8)
		clear(bs.st[b])
		// VRow reads w8 columns from a row start: the padding after the
		// last ring row must hold finite values (its outputs are dropped).
		clear(bs.ring[b][ringRows*w:])
	}
	bs.work = simdbuf[:simdBlur.RowsWorkLen(w)]
	pad := simdbuf[len(bs.work):]
	bs.in8, bs.mul8, bs.o8 = pad[:8*w], pad[8*w:16*w], pad[16*w:24*w]
	bs.next = 1 - bs.N // the next row of the vertical pass
}

func (bs *blurStream) ringRow(b, y int) []float32 {
	o := (y % ringRows) * bs.w
	return bs.ring[b][o : o+bs.w8]
}

// vinputs are the horizontal-pass rows output row y reads (nil outside
// the plane).
func (bs *blurStream) vinputs(b, y int) (top, bot []float32) {
	if t := y - bs.N - 1; t >= 0 {
		top = bs.ringRow(b, t)
	}
	if t := y + bs.N - 1; t < bs.h {
		bot = bs.ringRow(b, t)
	}
	return top, bot
}

// group takes rows y0… (y0 a multiple of 8; eight rows, or the rest of the
// plane) of each blur's input and multiplier (rows[b][1], nil for none),
// runs their horizontal pass, then emits every output row that can now be
// computed: up to y0+8−N, or to the end after the last group.
func (bs *blurStream) group(y0 int, rows [][2][]float32, emit func(y int, out *[maxBlurs][]float32)) {
	w, h, N := bs.w, bs.h, bs.N
	slot := (y0 % ringRows) * w
	for b, p := range rows {
		dst := bs.ring[b][slot : slot+8*w]
		if y0+8 <= h {
			simdBlur.Rows8(p[0][:8*w], p[1], dst, w, bs.work)
			continue
		}
		n := (h - y0) * w
		copy(bs.in8, p[0][:n])
		clear(bs.in8[n:])
		var m []float32
		if p[1] != nil {
			copy(bs.mul8, p[1][:n])
			clear(bs.mul8[n:])
			m = bs.mul8
		}
		simdBlur.Rows8(bs.in8, m, bs.o8, w, bs.work)
		copy(dst[:n], bs.o8[:n])
	}
	avail := min(y0+8, h)
	limit := avail - N + 1
	if avail == h {
		limit = h
	}
	// Two rows per pass over the states where possible; rows before 0
	// only warm the states up.
	for ; bs.next+1 < limit; bs.next += 2 {
		y := bs.next
		for b := 0; b < bs.nb; b++ {
			top0, bot0 := bs.vinputs(b, y)
			top1, bot1 := bs.vinputs(b, y+1)
			simdBlur.VRow2(top0, bot0, top1, bot1, bs.out[b], bs.out2[b], bs.st[b], bs.w8, bs.set)
		}
		if y >= 0 {
			emit(y, &bs.out)
		}
		if y+1 >= 0 {
			emit(y+1, &bs.out2)
		}
	}
	for ; bs.next < limit; bs.next++ {
		y := bs.next
		for b := 0; b < bs.nb; b++ {
			top, bot := bs.vinputs(b, y)
			simdBlur.VRow(top, bot, bs.out[b], bs.st[b], bs.w8, bs.set)
		}
		bs.set ^= 1
		if y >= 0 {
			emit(y, &bs.out)
		}
	}
}

// streamFirst reports whether scoreView streams scale 0 (scoreFirst): on
// the fast path, on one goroutine.
func (r *Reference) streamFirst(sc *scratch) bool {
	return sc.fused != nil && fuseSIMD && r.threads == 1
}

// scoreFirst is scale 0 of scoreView streamed end to end on one goroutine:
// eight rows of dist at a time are converted to positive XYB into small
// rings (and downsampled into sc.lin[0] for scale 1, as firstScale does),
// and each channel's three blurs and error terms (fusedTerms's) follow
// them row by row. The distorted image's XYB planes of scale 0, the
// largest planes of a scoring, never exist whole: no page of them is
// faulted in, written and read back. Each value is computed as on the
// plane-by-plane path, so the row sums in sc.rows are the same bits.
func (r *Reference) scoreFirst(ctx context.Context, rs *refScale, dist *zenmetrics.Image, blend bool, bg float32, sc *scratch) error {
	w, h := r.w, r.h
	w1 := r.dims[1][0]
	fl := fusedLen(w)
	if sc.stream == nil {
		sc.stream = make([]float32, 3*fl+3*ringRows*w)
	}
	var bs [3]blurStream
	var ring [3][]float32
	for c := range bs {
		bs[c].init(3, w, h, sc.stream[c*fl:(c+1)*fl], sc.simdbuf[0])
		o := 3*fl + c*ringRows*w
		ring[c] = sc.stream[o : o+ringRows*w]
	}
	buf := sc.rowbuf[0][:6*w]
	a := [3][]float32{buf[0:w], buf[w : 2*w], buf[2*w : 3*w]}
	b := [3][]float32{buf[3*w : 4*w], buf[4*w : 5*w], buf[5*w : 6*w]}
	xyb := func(src [3][]float32, y int) {
		o := (y % ringRows) * w
		xybRow(true, src[0], src[1], src[2], ring[0][o:o+w], ring[1][o:o+w], ring[2][o:o+w])
	}
	for y0 := 0; y0 < h; y0 += 8 {
		if err := ctx.Err(); err != nil {
			return err
		}
		y1 := min(y0+8, h)
		for oy := y0 / 2; 2*oy < y1; oy++ {
			ya := 2 * oy
			toLinearRow(dist, ya, blend, bg, a[0], a[1], a[2])
			xyb(a, ya)
			second := a
			if yb := ya + 1; yb < h {
				toLinearRow(dist, yb, blend, bg, b[0], b[1], b[2])
				xyb(b, yb)
				second = b
			}
			for c := 0; c < 3; c++ {
				downsample2Row(a[c], second[c], sc.lin[0][c][oy*w1:(oy+1)*w1])
			}
		}
		slot := (y0 % ringRows) * w
		n := (y1 - y0) * w
		for c := 0; c < 3; c++ {
			img1, mu1, vr1, img2 := rs.img[c], rs.mu[c], rs.vr[c], ring[c]
			rows := sc.rows[6*h*c : 6*h*(c+1)]
			im2 := img2[slot : slot+n]
			in := [3][2][]float32{{im2, nil}, {im2, im2}, {img1[y0*w : y1*w], im2}}
			bs[c].group(y0, in[:], func(y int, out *[maxBlurs][]float32) {
				o, ro := y*w, (y%ringRows)*w
				simdTerms.Row(rows[6*y:6*y+6], img1[o:o+w], mu1[o:o+w], vr1[o:o+w],
					img2[ro:ro+w], out[0][:w], out[1][:w], out[2][:w])
			})
		}
	}
	return nil
}
