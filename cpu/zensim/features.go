package zensim

import (
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"
	"unsafe"
)

// acc is one channel's raw sums over one strip (or, merged, one scale).
type acc struct {
	ssimD, ssimD2, ssimD4, ssimD8 float64
	art, art2, art4, art8         float64
	det, det2, det4, det8         float64
	mse                           float64
	hfSqSrc, hfSqDst              float64
	hfAbsSrc, hfAbsDst            float64
	ssimMax, artMax, detMax       float32
}

var accBytes = int(unsafe.Sizeof(acc{}))

func (a *acc) merge(b *acc) {
	a.ssimD += b.ssimD
	a.ssimD4 += b.ssimD4
	a.ssimD2 += b.ssimD2
	a.art += b.art
	a.art4 += b.art4
	a.art2 += b.art2
	a.det += b.det
	a.det4 += b.det4
	a.det2 += b.det2
	a.mse += b.mse
	a.hfSqSrc += b.hfSqSrc
	a.hfSqDst += b.hfSqDst
	a.hfAbsSrc += b.hfAbsSrc
	a.hfAbsDst += b.hfAbsDst
	a.ssimD8 += b.ssimD8
	a.art8 += b.art8
	a.det8 += b.det8
	a.ssimMax = max(a.ssimMax, b.ssimMax)
	a.artMax = max(a.artMax, b.artMax)
	a.detMax = max(a.detMax, b.detMax)
}

// scaleStats is one scale's pooled features: per channel 13 basic then 6
// peak values, in zensim's feature order.
type scaleStats struct {
	basic [3][numBasic]float64
	peak  [3][numPeak]float64
}

// scale computes scale s's features: strips in parallel, each strip's
// per-channel sums kept apart and merged in strip order (as zensim's
// single-band pass does), so the result is the same for any thread count.
func (r *Reference) scale(s int, sc *scratch) scaleStats {
	d := r.dims[s]
	nStrips := (d.h + stripInner - 1) / stripInner
	res := make([][3]acc, nStrips)
	ref, dist := r.ref[s], sc.dist[s]
	parallel.Each(r.threads, nStrips, func(worker, k int) {
		y := k * stripInner
		end := min(y+stripInner, d.h)
		top := max(y-blurRadius, 0)
		bot := min(end+blurRadius, d.h)
		for c := 0; c < 3; c++ {
			m := modes[s][c]
			if m == modeNone {
				continue
			}
			src := ref[c][top*d.w : bot*d.w]
			dst := dist[c][top*d.w : bot*d.w]
			stripChannel(&res[k][c], m, src, dst, d.w, bot-top, y-top, end-y, sc.strip[worker])
		}
	})
	var tot [3]acc
	for k := range res {
		for c := 0; c < 3; c++ {
			tot[c].merge(&res[k][c])
		}
	}
	n := float64(d.w * d.h)
	var st scaleStats
	for c := 0; c < 3; c++ {
		st.basic[c], st.peak[c] = finalize(&tot[c], 1/n)
	}
	return st
}

// finalize pools one channel's sums (zensim's ScaleAccumulators::finalize).
func finalize(a *acc, inv float64) (b [numBasic]float64, p [numPeak]float64) {
	b[0] = a.ssimD * inv
	b[1] = math.Pow(a.ssimD4*inv, 0.25)
	b[2] = math.Sqrt(a.ssimD2 * inv)
	b[3] = a.art * inv
	b[4] = math.Pow(a.art4*inv, 0.25)
	b[5] = math.Sqrt(a.art2 * inv)
	b[6] = a.det * inv
	b[7] = math.Pow(a.det4*inv, 0.25)
	b[8] = math.Sqrt(a.det2 * inv)
	b[9] = a.mse * inv
	vs, vd := a.hfSqSrc*inv, a.hfSqDst*inv
	if vs > 1e-10 {
		b[10] = max(1-vd/vs, 0)
		b[12] = max(vd/vs-1, 0)
	}
	ms, md := a.hfAbsSrc*inv, a.hfAbsDst*inv
	if ms > 1e-10 {
		b[11] = max(1-md/ms, 0)
	}
	for i := 0; i < 9; i++ {
		b[i] = math.Abs(b[i])
	}
	p[0] = float64(a.ssimMax)
	p[1] = float64(a.artMax)
	p[2] = float64(a.detMax)
	p[3] = math.Pow(a.ssimD8*inv, 0.125)
	p[4] = math.Pow(a.art8*inv, 0.125)
	p[5] = math.Pow(a.det8*inv, 0.125)
	return b, p
}

// combine lays the features out as zensim does (all basic features, scale
// by scale, then all peak features), weights them in index order and maps
// the distance to the score. With fewer than 4 scales the vector is
// shorter and weight i still multiplies feature i, as in zensim.
func combine(stats []scaleStats) *Result {
	f := make([]float64, 0, numWeights)
	for _, st := range stats {
		for c := 0; c < 3; c++ {
			f = append(f, st.basic[c][:]...)
		}
	}
	for _, st := range stats {
		for c := 0; c < 3; c++ {
			f = append(f, st.peak[c][:]...)
		}
	}
	var dist float64
	for i, v := range f {
		dist += float64(v * weights[i]) // unfused, as zensim sums
	}
	dist /= float64(max(len(stats), 1))
	score := 100.0
	if dist > 0 {
		score = 100 - float64(scoreA*math.Pow(dist, scoreB))
	}
	return &Result{Score: score, Distance: dist, Features: f}
}

// hAddIdx, remIdx and initIdx are zensim's window indices for a line of
// n samples: the sample entering after x, the one leaving, and the i-th of
// the first window, all reflected about the ends without repeating them
// and clamped to n−1.
func hAddIdx(x, n int) int {
	a := x + blurRadius + 1
	if a >= n {
		a = 2*(n-1) - a
		if a < 0 {
			a = -a
		}
	}
	return min(a, n-1)
}

func remIdx(x, n int) int {
	a := x - blurRadius
	if a < 0 {
		a = -a
	}
	return min(a, n-1)
}

func initIdx(i, n int) int {
	if i <= blurRadius {
		return min(blurRadius-i, n-1)
	}
	return min(i-blurRadius, n-1)
}

const diam = 2*blurRadius + 1

var invDiam = float32(1) / float32(diam)

// hblur writes the horizontal box blur of the strip's rows: mu1, mu2 and,
// when full, ssq (of s² + d²) and s12 (of s·d), each sum × (1/11).
func hblur(src, dst []float32, w, rows int, full bool, mu1, mu2, ssq, s12 []float32) {
	for y := 0; y < rows; y++ {
		s := src[y*w : (y+1)*w]
		d := dst[y*w : (y+1)*w]
		o1, o2 := mu1[y*w:(y+1)*w], mu2[y*w:(y+1)*w]
		var ss, sd, sq, sp float32
		if !full {
			for i := 0; i < diam; i++ {
				k := initIdx(i, w)
				ss += s[k]
				sd += d[k]
			}
			for x := 0; x < w; x++ {
				o1[x] = float32(ss * invDiam)
				o2[x] = float32(sd * invDiam)
				a, m := hAddIdx(x, w), remIdx(x, w)
				ss = float32(ss+s[a]) - s[m]
				sd = float32(sd+d[a]) - d[m]
			}
			continue
		}
		o3, o4 := ssq[y*w:(y+1)*w], s12[y*w:(y+1)*w]
		for i := 0; i < diam; i++ {
			k := initIdx(i, w)
			sv, dv := s[k], d[k]
			ss += sv
			sd += dv
			sq = fma32(sv, sv, fma32(dv, dv, sq))
			sp = fma32(sv, dv, sp)
		}
		for x := 0; x < w; x++ {
			o1[x] = float32(ss * invDiam)
			o2[x] = float32(sd * invDiam)
			o3[x] = float32(sq * invDiam)
			o4[x] = float32(sp * invDiam)
			a, m := hAddIdx(x, w), remIdx(x, w)
			sa, da, sr, dr := s[a], d[a], s[m], d[m]
			ss = float32(ss+sa) - sr
			sd = float32(sd+da) - dr
			sq = fma32(sa, sa, fma32(da, da, fma32(-sr, sr, fma32(-dr, dr, sq))))
			sp = fma32(sa, da, fma32(-sr, dr, sp))
		}
	}
}

// red8 is magetypes' AVX2 reduce_add order for 8 lanes.
func red8(l *[8]float32) float64 {
	return float64(float32(float32(l[0]+l[4])+float32(l[1]+l[5])) + float32(float32(l[2]+l[6])+float32(l[3]+l[7])))
}

func max8(l *[8]float32) float32 {
	m := l[0]
	for _, v := range l[1:] {
		m = max(m, v)
	}
	return m
}

// stripChannel computes one channel's sums over one strip: src, dst are
// the strip's rows (h of them, w wide); rows [in0, in0+inH) are output.
func stripChannel(a *acc, m mode, src, dst []float32, w, h, in0, inH int, buf []float32) {
	*a = acc{}
	if m == modeMSE {
		s := src[in0*w : (in0+inH)*w]
		d := dst[in0*w : (in0+inH)*w]
		for i := range s {
			v := s[i] - d[i]
			a.mse += float64(float32(v * v))
		}
		return
	}
	full := m == modeFull
	n := w * h
	mu1, mu2, ssq, s12 := buf[:n], buf[n:2*n], buf[2*n:3*n], buf[3*n:4*n]
	hblur(src, dst, w, h, full, mu1, mu2, ssq, s12)
	groups := w / 8
	for g := 0; g <= groups; g++ {
		x0, lanes := g*8, 8
		if g == groups {
			lanes = w - x0
			if lanes == 0 {
				break
			}
		}
		vcolumns(a, full, src, dst, mu1, mu2, ssq, s12, w, h, in0, inH, x0, lanes)
	}
}

// vcolumns runs the vertical running sums and the per-pixel features for
// columns [x0, x0+lanes): 8 columns summed as one vector (lanes = 8), or
// the last w mod 8 columns one at a time, as zensim's scalar tail does.
func vcolumns(a *acc, full bool, src, dst, hm1, hm2, hsq, hs12 []float32, w, h, in0, inH, x0, lanes int) {
	if lanes < 8 {
		for l := 0; l < lanes; l++ {
			vcol(a, full, src, dst, hm1, hm2, hsq, hs12, w, h, in0, inH, x0+l, 1)
		}
		return
	}
	vcol(a, full, src, dst, hm1, hm2, hsq, hs12, w, h, in0, inH, x0, 8)
}

// abs32 is |x| for float32 (clears the sign bit, as a vector abs does).
func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// lanes8 holds one row's per-lane values of every summed quantity.
type lanes8 struct {
	d, d2, d4, d8     [8]float32
	a, a2, a4, a8     [8]float32
	t, t2, t4, t8     [8]float32
	hs, hd, as, ad, m [8]float32
}

// add adds the first n lanes' values to the sums: 8 lanes in magetypes'
// reduce order, one lane (the scalar tail) directly.
func (v *lanes8) add(a *acc, full bool, n int) {
	if n == 8 {
		if full {
			a.ssimD += red8(&v.d)
			a.ssimD4 += red8(&v.d4)
			a.ssimD2 += red8(&v.d2)
			a.ssimD8 += red8(&v.d8)
			a.ssimMax = max(a.ssimMax, max8(&v.d))
		}
		a.art += red8(&v.a)
		a.art4 += red8(&v.a4)
		a.art2 += red8(&v.a2)
		a.det += red8(&v.t)
		a.det4 += red8(&v.t4)
		a.det2 += red8(&v.t2)
		a.art8 += red8(&v.a8)
		a.det8 += red8(&v.t8)
		a.artMax = max(a.artMax, max8(&v.a))
		a.detMax = max(a.detMax, max8(&v.t))
		a.hfSqSrc += red8(&v.hs)
		a.hfSqDst += red8(&v.hd)
		a.hfAbsSrc += red8(&v.as)
		a.hfAbsDst += red8(&v.ad)
		a.mse += red8(&v.m)
		return
	}
	if full {
		a.ssimD += float64(v.d[0])
		a.ssimD4 += float64(v.d4[0])
		a.ssimD2 += float64(v.d2[0])
		a.ssimD8 += float64(v.d8[0])
		a.ssimMax = max(a.ssimMax, v.d[0])
	}
	a.art += float64(v.a[0])
	a.art4 += float64(v.a4[0])
	a.art2 += float64(v.a2[0])
	a.det += float64(v.t[0])
	a.det4 += float64(v.t4[0])
	a.det2 += float64(v.t2[0])
	a.art8 += float64(v.a8[0])
	a.det8 += float64(v.t8[0])
	a.artMax = max(a.artMax, v.a[0])
	a.detMax = max(a.detMax, v.t[0])
	a.hfSqSrc += float64(v.hs[0])
	a.hfSqDst += float64(v.hd[0])
	a.hfAbsSrc += float64(v.as[0])
	a.hfAbsDst += float64(v.ad[0])
	a.mse += float64(v.m[0])
}

// edge computes lane l's edge, HF and MSE values from the pixel values
// and the local means.
func (v *lanes8) edge(l int, sv, dv, mu1, mu2 float32) {
	hs, hd := sv-mu1, dv-mu2
	e1, e2 := abs32(hs), abs32(hd)
	ed := (1+e2)/(1+e1) - 1
	art := max(ed, 0)
	det := max(-ed, 0)
	a2, t2 := float32(art*art), float32(det*det)
	a4, t4 := float32(a2*a2), float32(t2*t2)
	v.a[l], v.a2[l], v.a4[l], v.a8[l] = art, a2, a4, float32(a4*a4)
	v.t[l], v.t2[l], v.t4[l], v.t8[l] = det, t2, t4, float32(t4*t4)
	v.hs[l], v.hd[l] = float32(hs*hs), float32(hd*hd)
	v.as[l], v.ad[l] = e1, e2
	pd := sv - dv
	v.m[l] = float32(pd * pd)
}

// vcol processes lanes (8 or 1) adjacent columns from x0.
func vcol(a *acc, full bool, src, dst, hm1, hm2, hsq, hs12 []float32, w, h, in0, inH, x0, lanes int) {
	var sm1, sm2, ssq, ss12 [8]float32
	for i := 0; i < diam; i++ {
		o := initIdx(i, h)*w + x0
		for l := 0; l < lanes; l++ {
			sm1[l] += hm1[o+l]
			sm2[l] += hm2[o+l]
		}
		if full {
			for l := 0; l < lanes; l++ {
				ssq[l] += hsq[o+l]
				ss12[l] += hs12[o+l]
			}
		}
	}
	var v lanes8
	end := in0 + inH
	for y := 0; y < end; y++ {
		if y >= in0 {
			o := y*w + x0
			s, d := src[o:o+lanes], dst[o:o+lanes]
			if full {
				for l := range s {
					mu1 := float32(sm1[l] * invDiam)
					mu2 := float32(sm2[l] * invDiam)
					q := float32(ssq[l] * invDiam)
					p := float32(ss12[l] * invDiam)
					md := mu1 - mu2
					numM := fma32(md, -md, 1)
					numS := fma32(2, fma32(-mu1, mu2, p), ssimC2)
					den := fma32(-mu2, mu2, fma32(-mu1, mu1, q)) + ssimC2
					sd := max(1-float32(numM*numS)/den, 0)
					sd2 := float32(sd * sd)
					sd4 := float32(sd2 * sd2)
					v.d[l], v.d2[l], v.d4[l], v.d8[l] = sd, sd2, sd4, float32(sd4*sd4)
					v.edge(l, s[l], d[l], mu1, mu2)
				}
			} else {
				for l := range s {
					v.edge(l, s[l], d[l], float32(sm1[l]*invDiam), float32(sm2[l]*invDiam))
				}
			}
			v.add(a, full, lanes)
		}
		if y+1 >= end {
			break // the remaining slides feed no output row
		}
		ad := vAddIdx(y, h)*w + x0
		rm := remIdx(y, h)*w + x0
		for l := 0; l < lanes; l++ {
			sm1[l] = float32(sm1[l]+hm1[ad+l]) - hm1[rm+l]
			sm2[l] = float32(sm2[l]+hm2[ad+l]) - hm2[rm+l]
		}
		if full {
			for l := 0; l < lanes; l++ {
				ssq[l] = float32(ssq[l]+hsq[ad+l]) - hsq[rm+l]
				ss12[l] = float32(ss12[l]+hs12[ad+l]) - hs12[rm+l]
			}
		}
	}
}

// vAddIdx is the row entering the vertical window after row y (zensim's
// vblur_add_idx: mirror at the strip's end, clamped).
func vAddIdx(y, h int) int {
	a := y + blurRadius + 1
	if a < h {
		return a
	}
	r := 2*(h-1) - a
	if r < 0 {
		r = -r
	}
	return min(r, h-1)
}
