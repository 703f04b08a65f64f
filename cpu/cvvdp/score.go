package cvvdp

import (
	"context"
	"math"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
)

// frameQ is one frame's pooled differences, [band][channel]: the 2-norm
// over the band's pixels of the masked, clamped difference (Q_per_ch).
type frameQ [][nCh]float32

// puRadius is the phase-uncertainty blur's radius: torchvision's
// GaussianBlur(int(pu_dilate·4)+1, pu_dilate), 13 taps; pycvvdp blurs only
// bands larger than pu_padsize = int(pu_dilate·2) = 6 in both directions.
const (
	puRadius  = 2 * pPuDilate
	puPadSize = 2 * pPuDilate
)

// puKernel is torchvision's 1-D Gaussian in float32: exp(−½(x/σ)²) over
// x = −6..6, divided by its sum.
var puKernel = func() (k [2*puRadius + 1]float32) {
	var sum float32
	for i := range k {
		x := float32(i - puRadius)
		t := x / float32(pPuDilate)
		k[i] = float32(math.Exp(float64(-0.5 * (t * t))))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}()

// scratch holds one scoring's (or the preparation's) working memory.
type scratch struct {
	g   [][nCh][]float32 // Gaussian pyramid, per level and channel
	ex  [nCh][]float32   // the enlarged coarser level, then the test's masked contrast
	mm  [nCh][]float32   // min(|T_p|, |R_p|), blurred horizontally in place
	tmp []float32        // reduce and expand passes
	// rows[worker] is a worker's row buffers (blur).
	rows [][]float32
	// acc[nCh·y + c] is row y's sum of the band's pooled terms.
	acc []float64
	// heat[b] is the distortion map's band b (D_chr / band_mul), and
	// heatTmp two planes of level 0 for the reconstruction; nil unless a
	// map was asked for.
	heat    [][]float32
	heatTmp [2][]float32
}

// scratchLen is the number of float32 and float64 values a scratch holds.
func scratchLen(l *layout, threads int, heat bool) (f32, f64 int) {
	w, h := l.w[0], l.h[0]
	f32 = nCh*l.pixels() + 2*nCh*w*h + max(half(h)*w, h*half(w)) + threads*rowBufLen(w)
	if heat {
		f32 += l.pixels() + 2*w*h
	}
	return f32, nCh * h
}

// rowBufLen is one worker's row buffers: the blurred masking signal and
// the powered differences of the three channels, or one row being blurred
// with its reflected margins.
func rowBufLen(w int) int { return 2*nCh*w + 2*puRadius }

func newScratch(l *layout, threads int, heat bool) *scratch {
	n32, n64 := scratchLen(l, threads, heat)
	big := make([]float32, n32)
	take := func(n int) []float32 {
		p := big[:n:n]
		big = big[n:]
		return p
	}
	sc := &scratch{g: make([][nCh][]float32, l.n)}
	for i := 0; i < l.n; i++ {
		for c := 0; c < nCh; c++ {
			sc.g[i][c] = take(l.w[i] * l.h[i])
		}
	}
	w, h := l.w[0], l.h[0]
	for c := 0; c < nCh; c++ {
		sc.ex[c] = take(w * h)
		sc.mm[c] = take(w * h)
	}
	sc.tmp = take(max(half(h)*w, h*half(w)))
	sc.rows = make([][]float32, threads)
	for i := range sc.rows {
		sc.rows[i] = take(rowBufLen(w))
	}
	if heat {
		sc.heat = make([][]float32, l.n)
		for i := 0; i < l.n; i++ {
			sc.heat[i] = take(l.w[i] * l.h[i])
		}
		sc.heatTmp[0], sc.heatTmp[1] = take(w*h), take(w*h)
	}
	sc.acc = make([]float64, n64)
	return sc
}

// toDKL writes im through the display model as DKL planes into dst.
func toDKL(im *zenmetrics.Image, ph *photometry, dst [nCh][]float32, threads int) {
	w, h := im.Width, im.Height
	ch := im.Format.Channels()
	bps := im.Format.BytesPerSample()
	var lut []float32
	if bps == 2 {
		lut = ph.lut16()
	} else {
		lut = ph.lut8()
	}
	gray := im.Format.IsGray()
	m := ph.toDKL
	hlg := ph.eotf == "HLG"
	parallel.For(threads, h, parallel.RowGrain(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			row := im.Row(y)
			o0, o1, o2 := dst[0][y*w:y*w+w], dst[1][y*w:y*w+w], dst[2][y*w:y*w+w]
			for x := 0; x < w; x++ {
				o := x * ch * bps
				s := func(c int) float32 {
					if bps == 2 {
						return lut[int(row[o+2*c])<<8|int(row[o+2*c+1])]
					}
					return lut[row[o+c]]
				}
				if gray {
					// pycvvdp's one-channel path: the display's
					// luminance goes into all three channels as is.
					v := s(0)
					if hlg {
						v, _, _ = ph.hlgPixel(v, v, v)
					}
					o0[x], o1[x], o2[x] = v, v, v
					continue
				}
				r, g, b := s(0), s(1), s(2)
				if hlg {
					r, g, b = ph.hlgPixel(r, g, b)
				}
				o0[x] = r*m[0][0] + g*m[0][1] + b*m[0][2]
				o1[x] = r*m[1][0] + g*m[1][1] + b*m[1][2]
				o2[x] = r*m[2][0] + g*m[2][1] + b*m[2][2]
			}
		}
	})
}

// scoreFrame computes one frame's pooled differences from the test's
// Gaussian pyramid in sc.g (and, with a map, its bands in sc.heat).
func (r *Reference) scoreFrame(ctx context.Context, sc *scratch) (frameQ, error) {
	q := make(frameQ, r.lay.n)
	for b := 0; b < r.lay.n; b++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if b == r.lay.n-1 {
			q[b] = r.scoreBaseBand(b, sc)
		} else {
			q[b] = r.scoreBand(b, sc)
		}
	}
	return q, nil
}

// poolBand is lp_norm(D, beta=2, normalize=True) from the per-row sums of
// safe_pow(D, 2): (Σ/N + ε)^½ − ε^½ in float32.
func poolBand(acc []float64, rows, n int) (q [nCh]float32) {
	for c := 0; c < nCh; c++ {
		var s float64
		for y := 0; y < rows; y++ {
			s += acc[nCh*y+c]
		}
		mean := float32(s) / float32(n)
		q[c] = pow32(mean+f32Eps, 0.5) - pow32(f32Eps, 0.5)
	}
	return q
}

// sqTerm is safe_pow(d, 2) in float32.
func sqTerm(d float32) float32 {
	t := d + f32Eps
	return t*t - f32Eps*f32Eps
}

// heatWeights are the distortion map's channel weights for band b:
// per-channel weight × image_int, × the base-band weight on the base band.
func (r *Reference) heatWeights(b int) (w [nCh]float32) {
	for c := 0; c < nCh; c++ {
		w[c] = chWeight(c) * float32(pImageInt)
		if b == r.lay.n-1 {
			w[c] *= float32(pBasebandWeight[c])
		}
	}
	return w
}

// chWeight is get_ch_weights: 1 for the achromatic channel, ch_chrom_w
// for the chromatic ones (ch_trans_w for a transient channel).
func chWeight(c int) float32 {
	switch c {
	case 0:
		return 1
	case 1, 2:
		return float32(pChChromW)
	}
	return float32(pChTransW)
}

// heatPixel is lp_norm over channels (beta_tch, no normalisation) of the
// weighted differences, divided by the band's factor (set_lband).
func heatPixel(d, w *[nCh]float32, mul float32) float32 {
	var s float32
	for c := 0; c < nCh; c++ {
		s += pow32(d[c]*w[c]+f32Eps, pBetaTch) - pow32(f32Eps, pBetaTch)
	}
	return (pow32(s+f32Eps, 1.0/pBetaTch) - pow32(f32Eps, 1.0/pBetaTch)) / mul
}

// scoreBaseBand: D = |T − R|·S, T the test's base band over its mean
// background.
func (r *Reference) scoreBaseBand(b int, sc *scratch) [nCh]float32 {
	rb := &r.bands[b]
	n := rb.w * rb.h
	lb := basebandBkg(sc.g[b][0])
	g := &sc.g[b]
	var heat []float32
	var hw [nCh]float32
	if sc.heat != nil {
		heat = sc.heat[b]
		hw = r.heatWeights(b)
	}
	mul := r.lay.bandMul(b)
	parallel.Chunks(r.threads, rb.h, 1, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			var acc [nCh]float64
			for i := y * rb.w; i < (y+1)*rb.w; i++ {
				var d [nCh]float32
				for c := 0; c < nCh; c++ {
					t := min(g[c][i]/lb, contrastMax)
					d[c] = abs32(t-rb.rp[c][i]) * rb.bbS[c]
					acc[c] += float64(sqTerm(d[c]))
				}
				if heat != nil {
					heat[i] = heatPixel(&d, &hw, mul)
				}
			}
			for c := 0; c < nCh; c++ {
				sc.acc[nCh*y+c] = acc[c]
			}
		}
	})
	return poolBand(sc.acc, rb.h, n)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// reflect maps i into [0, n) as torch's 'reflect' padding does (the edge
// sample is not repeated); n > puRadius, so one reflection suffices.
func reflect(i, n int) int {
	if i < 0 {
		return -i
	}
	if i >= n {
		return 2*(n-1) - i
	}
	return i
}

// scoreBand does the masking model on band b (below the base band).
func (r *Reference) scoreBand(b int, sc *scratch) [nCh]float32 {
	l := &r.lay
	rb := &r.bands[b]
	w, h := rb.w, rb.h
	n := w * h
	for c := 0; c < nCh; c++ {
		expand(sc.ex[c], sc.g[b+1][c], sc.tmp, l.w[b+1], l.h[b+1], w, h, r.threads)
	}
	mul := l.bandMul(b)
	g := &sc.g[b]
	// The test's contrast, ×S×gain (into ex), and the mutual masker
	// min(|T_p|, |R_p|) (into mm).
	parallel.For(r.threads, h, parallel.RowGrain(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			lb := max(sc.ex[0][i], lBkgMin)
			for c := 0; c < nCh; c++ {
				ct := min((g[c][i]-sc.ex[c][i])/lb, contrastMax) * mul
				tp := ct * rb.s[c][i] * chGain[c]
				sc.ex[c][i] = tp
				sc.mm[c][i] = min(abs32(tp), abs32(rb.rp[c][i]))
			}
		}
	})
	blur := w > puPadSize && h > puPadSize
	if blur {
		// Horizontal pass in place, a row at a time.
		parallel.For(r.threads, nCh*h, parallel.RowGrain(w), func(worker, i0, i1 int) {
			buf := sc.rows[worker][:w+2*puRadius]
			for i := i0; i < i1; i++ {
				c, y := i/h, i%h
				row := sc.mm[c][y*w : y*w+w]
				for x := -puRadius; x < w+puRadius; x++ {
					buf[x+puRadius] = row[reflect(x, w)]
				}
				hblurRow(row, buf)
			}
		})
	}
	var heat []float32
	var hw [nCh]float32
	if sc.heat != nil {
		heat = sc.heat[b]
		hw = r.heatWeights(b)
	}
	parallel.Chunks(r.threads, h, 1, func(worker, y0, y1 int) {
		buf := sc.rows[worker]
		for y := y0; y < y1; y++ {
			var mb [nCh][]float32
			for c := 0; c < nCh; c++ {
				out := buf[c*w : c*w+w]
				if blur {
					vblurRow(out, sc.mm[c], w, h, y)
				} else {
					src := sc.mm[c][y*w : y*w+w]
					for x := range out {
						out[x] = src[x] * f32MaskCMul
					}
				}
				mb[c] = out
			}
			// sp = safe_pow(M_mm, q) per channel (in place of mb), and
			// du = safe_pow(|T_p − R_p|, p).
			var du [nCh][]float32
			for c := 0; c < nCh; c++ {
				powRow(mb[c], mb[c], f32Eps, f32MaskQ[c], f32EpsQ[c])
				du[c] = buf[(nCh+c)*w : (nCh+c+1)*w]
				tp, rp := sc.ex[c][y*w:y*w+w], rb.rp[c][y*w:y*w+w]
				for x := range du[c] {
					du[c][x] = abs32(tp[x] - rp[x])
				}
				powRow(du[c], du[c], f32Eps, f32MaskP, f32EpsP)
			}
			acc := maskedRow(mb[0][:w], mb[1][:w], mb[2][:w], du[0][:w], du[1][:w], du[2][:w], heat, y*w, &hw, mul)
			for c := 0; c < nCh; c++ {
				sc.acc[nCh*y+c] = acc[c]
			}
		}
	})
	return poolBand(sc.acc, h, n)
}

// maskedRow finishes the masking model along a row from the powered
// masking signals sp (safe_pow(M_mm, q)) and differences du
// (safe_pow(|T_p − R_p|, p)) of the three channels: cross-channel pooling
// M = Σ_j sp_j·xcm[j][c], D = du/(1 + M) softly clamped at 10^d_max, and
// the row's sums of safe_pow(D, 2) per channel; with heat non-nil, the
// map's pixels at heat[o:].
func maskedRow(sp0, sp1, sp2, du0, du1, du2, heat []float32, o int, hw *[nCh]float32, mul float32) (acc [nCh]float64) {
	n := len(sp0)
	sp1, sp2, du0, du1, du2 = sp1[:n], sp2[:n], du0[:n], du1[:n], du2[:n]
	x00, x01, x02 := xcm[0][0], xcm[0][1], xcm[0][2]
	x10, x11, x12 := xcm[1][0], xcm[1][1], xcm[1][2]
	x20, x21, x22 := xcm[2][0], xcm[2][1], xcm[2][2]
	dm := f32DMax
	var a0, a1, a2 float64
	for x := range sp0 {
		s0, s1, s2 := sp0[x], sp1[x], sp2[x]
		u0 := du0[x] / (1 + (s0*x00 + s1*x10 + s2*x20))
		u1 := du1[x] / (1 + (s0*x01 + s1*x11 + s2*x21))
		u2 := du2[x] / (1 + (s0*x02 + s1*x12 + s2*x22))
		d := [nCh]float32{dm * u0 / (dm + u0), dm * u1 / (dm + u1), dm * u2 / (dm + u2)}
		a0 += float64(sqTerm(d[0]))
		a1 += float64(sqTerm(d[1]))
		a2 += float64(sqTerm(d[2]))
		if heat != nil {
			heat[o+x] = heatPixel(&d, hw, mul)
		}
	}
	return [nCh]float64{a0, a1, a2}
}

// hblurRow blurs row in place with puKernel; buf holds the row with
// puRadius reflected samples on each side. The kernel is symmetric, so the
// taps at ±k share a multiply.
func hblurRow(row, buf []float32) {
	k := puKernel
	buf = buf[:len(row)+2*puRadius]
	for x := range row {
		b := buf[x : x+2*puRadius+1 : x+2*puRadius+1]
		row[x] = k[6]*b[6] + k[5]*(b[5]+b[7]) + k[4]*(b[4]+b[8]) + k[3]*(b[3]+b[9]) +
			k[2]*(b[2]+b[10]) + k[1]*(b[1]+b[11]) + k[0]*(b[0]+b[12])
	}
}

// vblurRow writes row y of the vertical blur of plane p (w×h, reflected at
// the top and bottom) times 10^mask_c into out. The thirteen source rows
// are resliced to the output's length so that the loop has no bounds
// checks.
func vblurRow(out, p []float32, w, h, y int) {
	n := len(out)
	row := func(k int) []float32 {
		o := reflect(y+k-puRadius, h) * w
		return p[o : o+n : o+n]
	}
	r0, r1, r2, r3, r4, r5, r6 := row(0), row(1), row(2), row(3), row(4), row(5), row(6)
	r7, r8, r9, r10, r11, r12 := row(7), row(8), row(9), row(10), row(11), row(12)
	r0, r1, r2, r3, r4, r5, r6 = r0[:n], r1[:n], r2[:n], r3[:n], r4[:n], r5[:n], r6[:n]
	r7, r8, r9, r10, r11, r12 = r7[:n], r8[:n], r9[:n], r10[:n], r11[:n], r12[:n]
	k := puKernel
	for x := range out {
		s := k[6]*r6[x] + k[5]*(r5[x]+r7[x]) + k[4]*(r4[x]+r8[x]) + k[3]*(r3[x]+r9[x]) +
			k[2]*(r2[x]+r10[x]) + k[1]*(r1[x]+r11[x]) + k[0]*(r0[x]+r12[x])
		out[x] = s * f32MaskCMul
	}
}

// safePow is safe_pow in float32: (x + ε)^p − ε^p.
func safePow(x, p float32) float32 { return pow32(x+f32Eps, p) - pow32(f32Eps, p) }

// poolJOD is do_pooling_and_jods: per frame, a 4-norm over bands (the base
// band weighted by baseband_weight, every band by the channel weight) and
// a 4-norm over channels; an image is then scaled by image_int, a video
// pooled over frames with a normalised 2-norm; met2jod maps the result.
func poolJOD(frames []frameQ, nBands int) float64 {
	var qf []float32
	for _, q := range frames {
		var qtc float32
		for c := 0; c < nCh; c++ {
			var s float32
			for b := 0; b < nBands; b++ {
				v := q[b][c] * chWeight(c)
				if b == nBands-1 {
					v *= float32(pBasebandWeight[c])
				}
				s += safePow(v, pBetaSch)
			}
			qsc := safePow(s, 1.0/pBetaSch)
			qtc += safePow(qsc, pBetaTch)
		}
		qf = append(qf, safePow(qtc, 1.0/pBetaTch))
	}
	var qv float32
	if len(qf) == 1 {
		qv = qf[0] * float32(pImageInt)
	} else {
		var s float32
		for _, v := range qf {
			s += safePow(v, pBetaT)
		}
		qv = safePow(s/float32(len(qf)), 1.0/pBetaT)
	}
	return float64(met2jod(qv))
}

// met2jod maps the pooled difference to JOD: linear below 0.1 (so that
// it differentiates at 0), 10 − jod_a·Q^jod_exp above.
func met2jod(q float32) float32 {
	ja, je := float32(pJodA), float32(pJodExp)
	if q <= metQt {
		jap := ja * pow32(metQt, je-1)
		return 10 - jap*q
	}
	return 10 - ja*pow32(q, je)
}

// heatmap reconstructs the distortion map from its bands (lpyr_dec_2's
// reconstruct) and maps it to 1 − JOD/10 (pycvvdp's "raw" heatmap).
func (r *Reference) heatmap(sc *scratch) *zenmetrics.FloatPlane {
	l := &r.lay
	last := l.n - 1
	cur := sc.heat[last]
	cw, ch := l.w[last], l.h[last]
	for i := last - 1; i >= 0; i-- {
		dst := sc.heatTmp[i%2][:l.w[i]*l.h[i]]
		expand(dst, cur, sc.tmp, cw, ch, l.w[i], l.h[i], r.threads)
		for k, v := range sc.heat[i] {
			dst[k] += v
		}
		cur, cw, ch = dst, l.w[i], l.h[i]
	}
	out := &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: make([]float32, r.w*r.h)}
	for k, v := range cur {
		out.Pix[k] = 1 - met2jod(v)/10
	}
	return out
}
