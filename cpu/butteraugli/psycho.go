package butteraugli

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/cpusimd"
)

// psycho is an XYB image split into frequency bands: ultra-high and high
// frequencies of X and Y, and medium and low frequencies of X, Y and B.
type psycho struct {
	uhf [2]plane
	hf  [2]plane
	mf  image3
	lf  image3
}

// Band-splitting constants.
const (
	lfXMul    = float32(33.832837186260)
	lfYMul    = float32(14.458268100570)
	lfBMul    = float32(49.87984651440)
	lfYToBMul = float32(-0.362267051518)

	removeMfRange = float32(0.29)
	addMfRange    = float32(0.1)
	removeHfRange = float32(1.5)
	addHfRange    = float32(0.132)
	removeUhfRng  = float32(0.04)
	maxclampHf    = float32(28.4691806922)
	maxclampUhf   = float32(5.19175294647)
	mulYHf        = float32(2.155)
	mulYUhf       = float32(2.69313763794)
	maxclampMul   = float32(0.724216145665)

	suppressW = float32(46.0)
	suppressS = float32(0.653020556257)
)

// suppressOneMinusS is 1−s computed in double, then rounded.
var suppressOneMinusS = float32(1.0 - 0.653020556257)

// The constants of the band loops for cpusimd's fast path.
var (
	lfSplitConsts  = [4]float32{lfYToBMul, lfBMul, lfXMul, lfYMul}
	suppressConsts = [3]float32{suppressW, suppressOneMinusS, suppressS}
	uhfXConsts     = [2]float32{removeHfRange, removeUhfRng}
	uhfYConsts     = [6]float32{maxclampHf, maxclampUhf, maxclampMul, mulYUhf, mulYHf, addHfRange}
)

// removeRange pulls values towards zero by w, zeroing [−w, w].
func removeRange(w, x float32) float32 {
	if x > w {
		return x - w
	}
	if x < -w {
		return x + w
	}
	return 0
}

// amplifyRange doubles values inside [−w, w] and shifts the rest by w.
func amplifyRange(w, x float32) float32 {
	if x > w {
		return x + w
	}
	if x < -w {
		return x - w
	}
	return x + x
}

// maximumClamp compresses values beyond ±m.
func maximumClamp(m, v float32) float32 {
	if v >= m {
		return float32((v-m)*maxclampMul) + m // rounded: arm64 would fuse it
	}
	if v < -m {
		return float32((v+m)*maxclampMul) - m
	}
	return v
}

// separateFrequencies splits xyb (consumed: its planes are reused) into
// bands. Its steps are row functions (lfSplitRows, mfSplitRows,
// suppressRows, uhfSplitRows) between the blurs, which the streamed pair
// path runs on windows of rows in the same order.
func separateFrequencies(wk workers, xyb image3, sc *scratch) psycho {
	w, h := xyb[0].w, xyb[0].h
	var ps psycho
	// LF: the blurred image; MF for now: the rest (reusing xyb).
	for c := 0; c < 3; c++ {
		ps.lf[c] = sc.outPlane(w, h)
		blur(wk, kernLF, xyb[c], ps.lf[c], sc)
	}
	wk.rows(h, func(y0, y1 int) { lfSplitRows(xyb, ps.lf, y0, y1) })
	// MF/HF: HF is the residual of MF after another blur.
	for c := 0; c < 3; c++ {
		bl := sc.outPlane(w, h)
		blur(wk, kernHF, xyb[c], bl, sc)
		if c == 2 {
			ps.mf[2] = bl
			break
		}
		wk.rows(h, func(y0, y1 int) { mfSplitRows(c, xyb[c], bl, y0, y1) })
		ps.mf[c] = bl
		ps.hf[c] = xyb[c]
	}
	// Red-green contrast is suppressed where the Y contrast is high.
	wk.rows(h, func(y0, y1 int) { suppressRows(ps.hf[0], ps.hf[1], y0, y1) })
	// HF/UHF.
	for c := 0; c < 2; c++ {
		bl := sc.outPlane(w, h)
		blur(wk, kernUHF, ps.hf[c], bl, sc)
		wk.rows(h, func(y0, y1 int) { uhfSplitRows(c, ps.hf[c], bl, y0, y1) })
		ps.uhf[c] = ps.hf[c]
		ps.hf[c] = bl
	}
	return ps
}

// lfSplitRows turns rows [y0, y1) of xyb into the residual xyb − lf and
// scales lf (the LF blur of xyb) into the LF bands.
func lfSplitRows(xyb, lf image3, y0, y1 int) {
	if useFast {
		for y := y0; y < y1; y++ {
			cpusimd.BALFSplit(xyb[0].row(y), xyb[1].row(y), xyb[2].row(y),
				lf[0].row(y), lf[1].row(y), lf[2].row(y), &lfSplitConsts)
		}
		return
	}
	for y := y0; y < y1; y++ {
		lx, ly, lb := lf[0].row(y), lf[1].row(y), lf[2].row(y)
		for c := 0; c < 3; c++ {
			src, l := xyb[c].row(y), lf[c].row(y)
			for x := range src {
				src[x] -= l[x]
			}
		}
		for x := range lx {
			b := float32(lfYToBMul*ly[x]) + lb[x] // rounded: arm64 would fuse it
			lb[x] = b * lfBMul
			lx[x] *= lfXMul
			ly[x] *= lfYMul
		}
	}
}

// mfSplitRows splits rows [y0, y1) of channel c (X or Y) of the residual
// hf, given its HF blur bl: hf becomes the HF band (hf − bl), bl the MF
// band.
func mfSplitRows(c int, hf, bl plane, y0, y1 int) {
	if useFast {
		w := removeMfRange
		if c != 0 {
			w = addMfRange
		}
		for y := y0; y < y1; y++ {
			cpusimd.BAMFSplit(hf.row(y), bl.row(y), c != 0, w)
		}
		return
	}
	for y := y0; y < y1; y++ {
		hr, mr := hf.row(y), bl.row(y)
		for x := range hr {
			m := mr[x]
			hr[x] -= m
			if c == 0 {
				mr[x] = removeRange(removeMfRange, m)
			} else {
				mr[x] = amplifyRange(addMfRange, m)
			}
		}
	}
}

// suppressRows scales rows [y0, y1) of the X HF band down where the Y HF
// band is strong.
func suppressRows(hx, hy plane, y0, y1 int) {
	if useFast {
		for y := y0; y < y1; y++ {
			cpusimd.BASuppress(hx.row(y), hy.row(y), &suppressConsts)
		}
		return
	}
	for y := y0; y < y1; y++ {
		rx, ry := hx.row(y), hy.row(y)
		for x := range rx {
			vy := ry[x]
			sc := float32(suppressW/(float32(vy*vy)+suppressW)*suppressOneMinusS) + suppressS
			rx[x] = sc * rx[x]
		}
	}
}

// uhfSplitRows splits rows [y0, y1) of HF band c given its UHF blur bl:
// uhf (the HF band, in place) becomes the UHF band, bl the final HF band.
func uhfSplitRows(c int, uhf, bl plane, y0, y1 int) {
	if useFast {
		for y := y0; y < y1; y++ {
			if c == 0 {
				cpusimd.BAUHFSplitX(uhf.row(y), bl.row(y), &uhfXConsts)
			} else {
				cpusimd.BAUHFSplitY(uhf.row(y), bl.row(y), &uhfYConsts)
			}
		}
		return
	}
	for y := y0; y < y1; y++ {
		ur, hr := uhf.row(y), bl.row(y)
		if c == 0 {
			for x := range ur {
				hv := hr[x]
				uv := ur[x] - hv
				hr[x] = removeRange(removeHfRange, hv)
				ur[x] = removeRange(removeUhfRng, uv)
			}
		} else {
			for x := range ur {
				hv := maximumClamp(maxclampHf, hr[x])
				uv := maximumClamp(maxclampUhf, ur[x]-hv)
				ur[x] = uv * mulYUhf
				hr[x] = amplifyRange(addHfRange, float32(hv*mulYHf))
			}
		}
	}
}

// Masking constants.
const (
	maskMul       = float32(6.19424080439)
	maskBias      = float32(12.61050594197)
	maskToErrMul  = float32(10.0)
	maskMulsX     = float32(2.5)
	maskMulsY     = float32(0.4)
	maskMulsYUhf  = float32(0.4)
	intensityHack = float32(0.79079917404) // log(80)/log(255)
)

// globalScale is 1 / (17.83 × intensityHack), the product taken in float32
// and the quotient in double, as the reference does.
var globalScale = func() float32 {
	a := float32(17.83)
	t := a * intensityHack
	return float32(1.0 / float64(t))
}()

// maskActivity writes the blurred, companded high-frequency activity of ps:
// the input of butteraugli's visual masking.
func maskActivity(wk workers, ps *psycho, out plane, sc *scratch) {
	tmp := sc.plane(2, out.w, out.h)
	wk.rows(out.h, func(y0, y1 int) { maskPreRows(ps, tmp, y0, y1) })
	blur(wk, kernMask, tmp, out, sc)
}

// maskPreRows writes rows [y0, y1) of the companded activity (before its
// blur) of ps's HF and UHF bands into o.
func maskPreRows(ps *psycho, o plane, y0, y1 int) {
	bias := maskMul * maskBias
	sqrtBias := float32(math.Sqrt(float64(bias)))
	if useFast {
		k := [6]float32{maskMulsX, maskMulsY, maskMulsYUhf, maskMul, bias, sqrtBias}
		for y := y0; y < y1; y++ {
			cpusimd.BAMaskPre(ps.hf[0].row(y), ps.hf[1].row(y), ps.uhf[0].row(y), ps.uhf[1].row(y), o.row(y), &k)
		}
		return
	}
	for y := y0; y < y1; y++ {
		hx, hy := ps.hf[0].row(y), ps.hf[1].row(y)
		ux, uy := ps.uhf[0].row(y), ps.uhf[1].row(y)
		or := o.row(y)
		for x := range or {
			xd := (ux[x] + hx[x]) * maskMulsX
			yd := float32(uy[x]*maskMulsY) + float32(hy[x]*maskMulsYUhf)
			m := float32(math.Sqrt(float64(float32(xd*xd) + float32(yd*yd))))
			or[x] = float32(math.Sqrt(float64(float32(maskMul*abs32(m))+bias))) - sqrtBias
		}
	}
}

// storeMin3 keeps the three smallest values seen, in order.
func storeMin3(v float32, m0, m1, m2 *float32) {
	if v < *m2 {
		if v < *m0 {
			*m2 = *m1
			*m1 = *m0
			*m0 = v
		} else if v < *m1 {
			*m2 = *m1
			*m1 = v
		} else {
			*m2 = v
		}
	}
}

// fuzzyErosion replaces each value by a weighted mix of the three smallest
// among itself and its eight neighbours at distance 3.
func fuzzyErosion(wk workers, from, to plane) {
	wk.rows(from.h, func(y0, y1 int) { erosionRows(from, to, y0, y1) })
}

// erosionRows is fuzzyErosion for rows [y0, y1) of to (from holding the
// rows within 3 of them).
func erosionRows(from, to plane, y0, y1 int) {
	const step = 3
	w, h := from.w, from.h
	for y := y0; y < y1; y++ {
		out := to.row(y)
		if useFast && y >= step && y < h-step && w > 2*step {
			// Interior: all eight neighbours exist.
			cpusimd.BAErosion(from.row(y), from.row(y-step), from.row(y+step), out[step:w-step], step)
			for _, x := range [2 * step]int{0, 1, 2, w - 3, w - 2, w - 1} {
				out[x] = erodeAt(from, x, y)
			}
			continue
		}
		for x := 0; x < w; x++ {
			out[x] = erodeAt(from, x, y)
		}
	}
}

// erodeAt is fuzzyErosion's output at (x, y).
func erodeAt(from plane, x, y int) float32 {
	const step = 3
	w, h := from.w, from.h
	row := from.row(y)
	m0 := row[x]
	m1 := 2 * m0
	m2 := m1
	if x >= step {
		storeMin3(row[x-step], &m0, &m1, &m2)
		if y >= step {
			storeMin3(from.row(y - step)[x-step], &m0, &m1, &m2)
		}
		if y < h-step {
			storeMin3(from.row(y + step)[x-step], &m0, &m1, &m2)
		}
	}
	if x < w-step {
		storeMin3(row[x+step], &m0, &m1, &m2)
		if y >= step {
			storeMin3(from.row(y - step)[x+step], &m0, &m1, &m2)
		}
		if y < h-step {
			storeMin3(from.row(y + step)[x+step], &m0, &m1, &m2)
		}
	}
	if y >= step {
		storeMin3(from.row(y - step)[x], &m0, &m1, &m2)
	}
	if y < h-step {
		storeMin3(from.row(y + step)[x], &m0, &m1, &m2)
	}
	return float32(0.45*m0) + float32(0.3*m1) + float32(0.25*m2)
}

// maskY and maskDcY turn the masking activity into the weights of the AC
// and DC error terms (double precision, as in the reference).
func maskY(delta float64) float64 {
	const offset, scaler, mul = 0.829591754942, 0.451936922203, 2.5485944793
	c := mul / (float64(scaler*delta) + offset)
	r := float64(globalScale) * (1.0 + c)
	return r * r
}

// maskRows writes rows [y0, y1) of the AC and DC mask weights from the
// eroded activity.
func maskRows(eroded, mAC, mDC plane, y0, y1 int) {
	for y := y0; y < y1; y++ {
		e, a, d := eroded.row(y), mAC.row(y), mDC.row(y)
		for x, v := range e {
			a[x] = float32(maskY(float64(v)))
			d[x] = float32(maskDcY(float64(v)))
		}
	}
}

func maskDcY(delta float64) float64 {
	const offset, scaler, mul = 0.20025578522, 3.87449418804, 0.505054525019
	c := mul / (float64(scaler*delta) + offset)
	r := float64(globalScale) * (1.0 + c)
	return r * r
}
