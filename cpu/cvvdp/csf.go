package cvvdp

// castleCSF as pycvvdp 0.5.4 evaluates it (csf.py, interp.py): the table
// of csf_lut.go in float32, log10 of its axes, a linear interpolation
// (with linear extrapolation at the ends) along log frequency for the band's
// frequency, then per pixel a clamped linear interpolation along log
// background luminance, and 10^ of the result.

// csfT is the table rounded to float32 with its axes in log10, as
// castleCSF.__init__ builds its tensors.
var csfT = func() (t struct {
	logL, logRho [lutN]float32
	logS         [4][lutN][lutN]float32
}) {
	for i := 0; i < lutN; i++ {
		t.logL[i] = log10f(float32(csfLBkg[i]))
		t.logRho[i] = log10f(float32(csfRho[i]))
	}
	for c := range t.logS {
		for i := range t.logS[c] {
			for j := range t.logS[c][i] {
				t.logS[c][i][j] = float32(csfLogS[c][i][j])
			}
		}
	}
	return t
}()

// log10f is torch.log10 on float32 (see fastmath.go).
func log10f(x float32) float32 { return log10fFast(x) }

// csfRow is, for channel table c, log10 S at frequency rho for each of the
// table's luminances: batch_interp1d (searchsorted, clamped to the end
// segments so that frequencies beyond the table extrapolate).
func csfRow(c int, rho float64) (row [lutN]float32) {
	x := log10f(float32(rho))
	xp := &csfT.logRho
	// searchsorted (left) − 1: the last index whose value is < x.
	idx := 0
	for idx < lutN && xp[idx] < x {
		idx++
	}
	idx = min(max(idx-1, 0), lutN-2)
	x0, x1 := xp[idx], xp[idx+1]
	for i := 0; i < lutN; i++ {
		y0, y1 := csfT.logS[c][i][idx], csfT.logS[c][i][idx+1]
		slope := (y1 - y0) / (x1 - x0)
		row[i] = y0 + slope*(x-x0)
	}
	return row
}

// csfInterp is log10 S for a background of log10 luminance logL with the
// band's row (interp1q, which assumes uniform steps, clamps to the table).
func csfInterp(row *[lutN]float32, logL float32) float32 {
	x0, x1 := csfT.logL[0], csfT.logL[lutN-1]
	ind := (logL - x0) / (x1 - x0) * float32(lutN-1)
	ind = min(max(ind, 0), lutN-1)
	i0 := int(ind)
	frac := ind - float32(i0)
	i1 := min(i0+1, lutN-1)
	return row[i0]*(1-frac) + row[i1]*frac
}

// sensitivity is S = 10^csfInterp times the sensitivity correction.
func sensitivity(row *[lutN]float32, logL float32) float32 {
	return exp10f(csfInterp(row, logL)) * f32SensCorr
}
