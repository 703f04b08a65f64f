package butteraugli

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/cpusimd"
)

// Weights of the error terms.
const (
	wMfMalta   = 37.0819870399
	norm1Mf    = 130262059.556
	wMfMaltaX  = 8246.75321353
	norm1MfX   = 1009002.70582
	wHfMalta   = 18.7237414387
	norm1Hf    = 4498534.45232
	wHfMaltaX  = 6923.99476109
	norm1HfX   = 8051.15833247
	wUhfMalta  = 1.10039032555
	norm1Uhf   = 71.7800275169
	wUhfMaltaX = 173.5
	norm1UhfX  = 5.0
)

// wmul: HF X, HF Y, HF B (unused), MF X, MF Y, MF B, LF X, LF Y, LF B.
var wmul = [9]float64{
	400.0, 1.50815703118, 0,
	2150.0, 10.6195433239, 16.2176043152,
	29.2353797994, 0.844626970982, 0.703646627719,
}

var (
	maltaUhf  = [2]maltaWeights{makeMaltaWeights(wUhfMaltaX, wUhfMaltaX, norm1UhfX, false), makeMaltaWeights(wUhfMalta, wUhfMalta, norm1Uhf, false)}
	maltaHfW  = [2]maltaWeights{makeMaltaWeights(wHfMaltaX, wHfMaltaX, norm1HfX, true), makeMaltaWeights(wHfMalta, wHfMalta, norm1Hf, true)}
	maltaMfW  = [2]maltaWeights{makeMaltaWeights(wMfMaltaX, wMfMaltaX, norm1MfX, true), makeMaltaWeights(wMfMalta, wMfMalta, norm1Mf, true)}
	asymGt    [2]float32 // HF asymmetric weights (hf_asymmetry 1: both sides equal)
	asymLt    [2]float32
	l2MF      [3]float32
	l2LF      [3]float32
	supMixMul = 1.0 - 0.3*float64(float32(0.5))
)

// diffmapSIMD holds the weights of the final error terms for
// cpusimd.BADiffmapRow.
var diffmapSIMD cpusimd.BADiffmapConsts

func init() {
	defer func() {
		diffmapSIMD = cpusimd.BADiffmapConsts{asymGt[0], asymLt[0], asymGt[1], asymLt[1],
			l2MF[0], l2MF[1], l2MF[2], l2LF[0], l2LF[1], l2LF[2], 0.4, maskToErrMul}
	}()
	for c := 0; c < 2; c++ {
		// The reference passes wmul[c] as a float argument, then scales by
		// 0.8 in double before rounding again.
		w := float64(float32(wmul[c]))
		asymGt[c] = float32(w * 0.8)
		asymLt[c] = float32(w * 0.8)
	}
	for c := 0; c < 3; c++ {
		l2MF[c] = float32(wmul[3+c])
		l2LF[c] = float32(wmul[6+c])
	}
}

// level is the reference side of one resolution: everything butteraugli
// derives from the reference alone.
type level struct {
	w, h     int
	pi       psycho
	activity plane // blurred masking activity of the reference
	mAC, mDC plane // mask weights of the AC and DC terms (from the eroded activity)
}

func prepareLevel(wk workers, rgb image3, intensity float32, sc *scratch) *level {
	w, h := rgb[0].w, rgb[0].h
	xyb := sc.outImage3(w, h)
	blurred := sc.outImage3(w, h)
	opsinDynamics(wk, rgb, intensity, xyb, blurred, sc)
	sc.release(blurred[0].p, blurred[1].p, blurred[2].p)
	lv := &level{w: w, h: h}
	lv.pi = separateFrequencies(wk, xyb, sc)
	// separateFrequencies keeps xyb[0] and xyb[1] (as the UHF bands) but
	// not xyb[2].
	sc.release(xyb[2].p)
	lv.activity = newPlane(w, h)
	maskActivity(wk, &lv.pi, lv.activity, sc)
	eroded := sc.plane(0, w, h)
	fuzzyErosion(wk, lv.activity, eroded)
	lv.mAC, lv.mDC = newPlane(w, h), newPlane(w, h)
	wk.rows(h, func(y0, y1 int) { maskRows(eroded, lv.mAC, lv.mDC, y0, y1) })
	return lv
}

// diffmapLevel compares the distorted XYB image (consumed) with the prepared
// reference level.
func diffmapLevel(wk workers, lv *level, xyb1 image3, sc *scratch) plane {
	w, h := lv.w, lv.h
	p1 := separateFrequencies(wk, xyb1, sc)
	act1 := sc.newPlane(w, h)
	maskActivity(wk, &p1, act1, sc)
	p0 := &lv.pi
	if useFast {
		res := sc.outPlane(w, h)
		maltaDiffmap(wk, lv, p0, &p1, act1, res)
		sc.release(p1.lf[0].p, p1.lf[1].p, p1.lf[2].p, p1.mf[0].p, p1.mf[1].p, p1.mf[2].p,
			p1.hf[0].p, p1.hf[1].p, p1.uhf[0].p, p1.uhf[1].p, xyb1[2].p, act1.p)
		return res
	}

	// The reference loops. Malta terms of X (c=0) and Y (c=1): UHF, then
	// HF, then MF, summed in that order per pixel.
	var acc [2]plane
	dU, dH, dM := sc.newPadded(w, h), sc.newPadded(w, h), sc.newPadded(w, h)
	for c := 0; c < 2; c++ {
		wk.rows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				maltaDiffRow(&maltaUhf[c], p0.uhf[c].row(y), p1.uhf[c].row(y), dU.inner(y))
				maltaDiffRow(&maltaHfW[c], p0.hf[c].row(y), p1.hf[c].row(y), dH.inner(y))
				maltaDiffRow(&maltaMfW[c], p0.mf[c].row(y), p1.mf[c].row(y), dM.inner(y))
			}
		})
		out := sc.newPlane(w, h)
		s := dU.stride
		wk.rows(h, func(y0, y1 int) {
			for y := y0; y < y1; y++ {
				o := out.row(y)
				// Top-left corner of the 9×9 neighbourhood of pixel (0, y).
				i0 := dU.origin(y) - maltaPad*s - maltaPad
				for x := range o {
					i := i0 + x
					u := gather9(dU.p, i, s)
					h := gather9(dH.p, i, s)
					m := gather9(dM.p, i, s)
					o[x] = maltaHF(u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8]) +
						maltaLF(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]) +
						maltaLF(m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
				}
			}
		})
		acc[c] = out
	}

	res := sc.newPlane(w, h)
	diffmapRowsRef(wk, lv, p0, &p1, acc, act1, res)
	// Everything but res goes back to the free list: the distorted bands
	// (xyb1[0] and xyb1[1] are p1.uhf; xyb1[2] is in none of them), the
	// activity, the Malta inputs and sums.
	sc.release(p1.lf[0].p, p1.lf[1].p, p1.lf[2].p, p1.mf[0].p, p1.mf[1].p, p1.mf[2].p,
		p1.hf[0].p, p1.hf[1].p, p1.uhf[0].p, p1.uhf[1].p, xyb1[2].p,
		act1.p, acc[0].p, acc[1].p, dU.p, dH.p, dM.p)
	return res
}

// asymL2 adds to prev the squared HF difference plus half-open penalties
// for a distorted value that shrank towards zero or overshot. Here and in
// the loops below, products that feed a sum are rounded with float32(·):
// Go on arm64 would otherwise fuse them into FMADDs, and arm64's scores
// would differ from amd64's.
func asymL2(v0, v1, wgt, wlt, prev float32) float32 {
	d := v0 - v1
	total := float32(d*d*wgt) + prev
	fabs0 := abs32(v0)
	tooSmall := float32(0.4 * fabs0)
	tooBig := fabs0
	var v float32
	if v0 < 0 {
		if v1 > -tooSmall {
			v = v1 + tooSmall
		} else if v1 < -tooBig {
			v = -v1 - tooBig
		}
	} else {
		if v1 < tooSmall {
			v = tooSmall - v1
		} else if v1 > tooBig {
			v = v1 - tooBig
		}
	}
	return float32(wlt*(v*v)) + total
}

// subsample2x averages 2×2 blocks (an odd last column or row is averaged
// over the pixels it has).
func subsample2x(wk workers, in image3, sc *scratch) image3 {
	w, h := in[0].w, in[0].h
	sw, sh := (w+1)/2, (h+1)/2
	out := sc.outImage3(sw, sh)
	for c := 0; c < 3; c++ {
		src, dst := in[c], out[c]
		wk.rows(sh, func(y0, y1 int) {
			for oy := y0; oy < y1; oy++ {
				var r1 []float32
				if 2*oy+1 < h {
					r1 = src.row(2*oy + 1)
				}
				subsampleRow(src.row(2*oy), r1, dst.row(oy), h&1 != 0 && oy == sh-1)
			}
		})
	}
	return out
}

// subsampleRow writes one row o of the 2×2 averages of rows r0 and r1 (nil
// for an odd last row, whose values are then doubled, as they are when
// last is set).
func subsampleRow(r0, r1, o []float32, last bool) {
	w, sw := len(r0), len(o)
	// o starts at zero and gets the four rounded quarters of each block
	// added in order.
	clear(o)
	if r1 != nil {
		// Both rows at once.
		pairs := o[:w/2]
		for ox := range pairs {
			a, b := r0[2*ox:2*ox+2:2*ox+2], r1[2*ox:2*ox+2:2*ox+2]
			v := pairs[ox]
			v += float32(0.25 * a[0])
			v += float32(0.25 * a[1])
			v += float32(0.25 * b[0])
			v += float32(0.25 * b[1])
			pairs[ox] = v
		}
		if w&1 != 0 {
			v := o[sw-1]
			v += float32(0.25 * r0[w-1])
			v += float32(0.25 * r1[w-1])
			o[sw-1] = v
		}
	} else {
		for x, v := range r0 {
			o[x/2] += float32(0.25 * v)
		}
	}
	if w&1 != 0 {
		o[sw-1] *= 2
	}
	if last {
		for x := range o {
			o[x] *= 2
		}
	}
}

// addSupersampled2x blends the half-resolution map into the full one.
func addSupersampled2x(wk workers, src, dst plane) {
	wk.rows(dst.h, func(y0, y1 int) { addSupersampledRows(src, dst, y0, y1) })
}

// addSupersampledRows is addSupersampled2x for rows [y0, y1) of dst.
func addSupersampledRows(src, dst plane, y0, y1 int) {
	for y := y0; y < y1; y++ {
		d, s := dst.row(y), src.row(y/2)
		for x := range d {
			v := float32(float64(d[x]) * supMixMul)
			d[x] = v + float32(0.5*s[x/2])
		}
	}
}

// diffmapRowsRef is the reference loop of diffmapLevel's final error terms.
func diffmapRowsRef(wk workers, lv *level, p0, p1 *psycho, acc [2]plane, act1, res plane) {
	in := maltaIn{p0: p0, p1: p1, act0: lv.activity, act1: act1, mac: lv.mAC, mdc: lv.mDC}
	wk.rows(res.h, func(y0, y1 int) {
		for y := y0; y < y1; y++ {
			r := in.finalRows(y, acc[0].row(y), acc[1].row(y), res.row(y))
			diffmapRowRef(&r)
		}
	})
}

// diffmapRowRef is one row of the final error terms (the table of
// cpusimd.BADiffmapRow, computed by the reference loop).
func diffmapRowRef(r *[cpusimd.BARowOut + 1][]float32) {
	a0, a1 := r[cpusimd.BARowA0], r[cpusimd.BARowA1]
	h0x, h1x := r[cpusimd.BARowH0X], r[cpusimd.BARowH1X]
	h0y, h1y := r[cpusimd.BARowH0Y], r[cpusimd.BARowH1Y]
	m0x, m1x := r[cpusimd.BARowM0X], r[cpusimd.BARowM1X]
	m0y, m1y := r[cpusimd.BARowM0Y], r[cpusimd.BARowM1Y]
	m0b, m1b := r[cpusimd.BARowM0B], r[cpusimd.BARowM1B]
	l0x, l1x := r[cpusimd.BARowL0X], r[cpusimd.BARowL1X]
	l0y, l1y := r[cpusimd.BARowL0Y], r[cpusimd.BARowL1Y]
	l0b, l1b := r[cpusimd.BARowL0B], r[cpusimd.BARowL1B]
	b0, b1 := r[cpusimd.BARowAct0], r[cpusimd.BARowAct1]
	mac, mdc := r[cpusimd.BARowMAC], r[cpusimd.BARowMDC]
	o := r[cpusimd.BARowOut]
	for x := range o {
		ac0 := asymL2(h0x[x], h1x[x], asymGt[0], asymLt[0], a0[x])
		d := m0x[x] - m1x[x]
		ac0 = float32(d*d*l2MF[0]) + ac0

		ac1 := asymL2(h0y[x], h1y[x], asymGt[1], asymLt[1], a1[x])
		d = m0y[x] - m1y[x]
		ac1 = float32(d*d*l2MF[1]) + ac1
		d = b0[x] - b1[x]
		ac1 += float32(maskToErrMul * d * d)

		d = m0b[x] - m1b[x]
		ac2 := d * d * l2MF[2]

		d = l0x[x] - l1x[x]
		dc0 := d * d * l2LF[0]
		d = l0y[x] - l1y[x]
		dc1 := d * d * l2LF[1]
		d = l0b[x] - l1b[x]
		dc2 := d * d * l2LF[2]

		m, md := mac[x], mdc[x]
		v := (float32(dc0*md) + float32(dc1*md) + float32(dc2*md)) + (float32(ac0*m) + float32(ac1*m) + float32(ac2*m))
		o[x] = float32(math.Sqrt(float64(v)))
	}
}
