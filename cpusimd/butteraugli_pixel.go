package cpusimd

import (
	"fmt"
	"math"
)

// Butteraugli's per-pixel kernels: the final error terms, the opsin
// dynamics and the fuzzy erosion (see butteraugli.go for the conventions;
// products that feed a sum are rounded with float32(·), which Go on arm64
// would otherwise fuse into FMADDs).

// Row indexes of BADiffmapRow's table.
const (
	BARowA0 = iota // Malta sums, X and Y
	BARowA1
	BARowH0X // HF bands, reference and distorted, X then Y
	BARowH1X
	BARowH0Y
	BARowH1Y
	BARowM0X // MF bands, X, Y, B
	BARowM1X
	BARowM0Y
	BARowM1Y
	BARowM0B
	BARowM1B
	BARowL0X // LF bands, X, Y, B
	BARowL1X
	BARowL0Y
	BARowL1Y
	BARowL0B
	BARowL1B
	BARowAct0 // masking activity, reference and distorted
	BARowAct1
	BARowMAC // mask weights of the AC and DC terms
	BARowMDC
	BARowOut
	baRows
)

// BADiffmapConsts are the weights of the final error terms: AsymGt and
// AsymLt of X and Y (interleaved: gt0, lt0, gt1, lt1), the MF and LF L2
// weights of X, Y, B, then 0.4 (the HF too-small bound) and the masking
// activity weight.
type BADiffmapConsts [12]float32

// BADiffmapRow computes one row of cpu/butteraugli's distance map from the
// rows in r (indexed by the BARow constants; all as long as r[BARowOut]).
func BADiffmapRow(r *[baRows][]float32, k *BADiffmapConsts) {
	n := len(r[BARowOut])
	for i := range r {
		if len(r[i]) < n {
			panic(fmt.Sprintf("cpusimd: BADiffmapRow row %d has %d samples, want %d", i, len(r[i]), n))
		}
	}
	x := 0
	if baEnabled && n >= 8 {
		x = n &^ 7
		var ptrs [baRows]*float32
		for i := range ptrs {
			ptrs[i] = &r[i][0]
		}
		diffmapRowKernel(&ptrs, x/8, k)
	}
	for ; x < n; x++ {
		r[BARowOut][x] = diffmapGo(r, k, x)
	}
}

// asymL2Go is cpu/butteraugli's asymL2.
func asymL2Go(v0, v1, wgt, wlt, tooSmallMul, prev float32) float32 {
	d := v0 - v1
	total := float32(d*d*wgt) + prev
	fabs0 := baAbs32(v0)
	tooSmall := float32(tooSmallMul * fabs0)
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

func diffmapGo(r *[baRows][]float32, k *BADiffmapConsts, x int) float32 {
	at := func(i int) float32 { return r[i][x] }
	ac0 := asymL2Go(at(BARowH0X), at(BARowH1X), k[0], k[1], k[10], at(BARowA0))
	d := at(BARowM0X) - at(BARowM1X)
	ac0 = float32(d*d*k[4]) + ac0
	ac1 := asymL2Go(at(BARowH0Y), at(BARowH1Y), k[2], k[3], k[10], at(BARowA1))
	d = at(BARowM0Y) - at(BARowM1Y)
	ac1 = float32(d*d*k[5]) + ac1
	d = at(BARowAct0) - at(BARowAct1)
	ac1 += float32(k[11] * d * d)
	d = at(BARowM0B) - at(BARowM1B)
	ac2 := d * d * k[6]
	d = at(BARowL0X) - at(BARowL1X)
	dc0 := d * d * k[7]
	d = at(BARowL0Y) - at(BARowL1Y)
	dc1 := d * d * k[8]
	d = at(BARowL0B) - at(BARowL1B)
	dc2 := d * d * k[9]
	m, md := at(BARowMAC), at(BARowMDC)
	v := (float32(dc0*md) + float32(dc1*md) + float32(dc2*md)) + (float32(ac0*m) + float32(ac1*m) + float32(ac2*m))
	return float32(math.Sqrt(float64(v)))
}

// BAOpsinConsts: the intensity target, the 1e-4 floor, the 12 opsin mixing
// coefficients, gammaHDR's offset, multiplier and additive constant, the
// (2,2) log2 approximation's p0, p1, p2, q0, q1, q2, 1, and its exponent
// magic 0x3f2aaaab (as bits).
type BAOpsinConsts [25]float32

// NewBAOpsinConsts fills the table from cpu/butteraugli's constants.
func NewBAOpsinConsts(intensity, minV float32, mix [12]float32, gammaAdd, gammaMul, retAdd float32, logPQ [6]float32) *BAOpsinConsts {
	var k BAOpsinConsts
	k[0], k[1] = intensity, minV
	copy(k[2:14], mix[:])
	k[14], k[15], k[16] = gammaAdd, gammaMul, retAdd
	copy(k[17:23], logPQ[:])
	k[23] = 1
	k[24] = math.Float32frombits(0x3f2aaaab)
	return &k
}

// BAOpsinRow converts one row of linear RGB (r, g, b) with its blurred copy
// (br, bg, bb) to butteraugli's XYB (ox, oy, ob): cpu/butteraugli's
// opsinDynamics inner loop.
func BAOpsinRow(r, g, b, br, bg, bb, ox, oy, ob []float32, k *BAOpsinConsts) {
	n := len(ox)
	for _, s := range [][]float32{r, g, b, br, bg, bb, oy, ob} {
		if len(s) < n {
			panic("cpusimd: BAOpsinRow rows too short")
		}
	}
	x := 0
	if baEnabled && n >= 8 {
		x = n &^ 7
		ptrs := [9]*float32{&r[0], &g[0], &b[0], &br[0], &bg[0], &bb[0], &ox[0], &oy[0], &ob[0]}
		opsinRowKernel(&ptrs, x/8, k)
	}
	for ; x < n; x++ {
		ox[x], oy[x], ob[x] = opsinGo(k, r[x], g[x], b[x], br[x], bg[x], bb[x])
	}
}

func log2ApproxGo(k *BAOpsinConsts, x float32) float32 {
	bits := int32(math.Float32bits(x))
	e := (bits - 0x3f2aaaab) >> 23
	m := math.Float32frombits(uint32(bits-e<<23)) - 1
	num := float32((float32(k[19]*m)+k[18])*m) + k[17]
	den := float32((float32(k[22]*m)+k[21])*m) + k[20]
	return num/den + float32(e)
}

func opsinGo(k *BAOpsinConsts, r, g, b, br, bg, bb float32) (x, y, z float32) {
	in, minV := k[0], k[1]
	mix := (*[12]float32)(k[2:14])
	gamma := func(v float32) float32 {
		if v < 0 {
			v = 0
		}
		return float32(k[15]*log2ApproxGo(k, v+k[14])) + k[16]
	}
	r0, g0, b0 := br*in, bg*in, bb*in
	var s [3]float32
	for c := 0; c < 3; c++ {
		m := mix[4*c:]
		p := max(float32(m[0]*r0)+(float32(m[1]*g0)+(float32(m[2]*b0)+m[3])), m[3], minV)
		s[c] = max(gamma(p)/p, minV)
	}
	r1, g1, b1 := r*in, g*in, b*in
	var o [3]float32
	for c := 0; c < 3; c++ {
		m := mix[4*c:]
		o[c] = max((float32(m[0]*r1)+(float32(m[1]*g1)+(float32(m[2]*b1)+m[3])))*s[c], m[3])
	}
	return o[0] - o[1], o[0] + o[1], o[2]
}

// BAErosion writes cpu/butteraugli's fuzzy erosion for the outputs o[i],
// i.e. columns x0+i of a row with all eight neighbours at distance 3:
// row, up and down are the row and the rows three above and below, whole
// (so x0 ≥ 3 and x0+len(o)+3 ≤ len(row)).
func BAErosion(row, up, down, o []float32, x0 int) {
	n := len(o)
	if n == 0 {
		return
	}
	if x0 < 3 || x0+n+3 > len(row) || len(up) < len(row) || len(down) < len(row) {
		panic("cpusimd: BAErosion bad range")
	}
	i := 0
	if baEnabled {
		i = n &^ 7
		erosionKernel(row[x0-3:], up[x0-3:], down[x0-3:], o, i/8)
	}
	erosionGo(row, up, down, o, x0, i)
}

// erosionGo is BAErosion's twin from output i0 on.
func erosionGo(row, up, down, o []float32, x0, i0 int) {
	for i := i0; i < len(o); i++ {
		x := x0 + i
		m0 := row[x]
		m1 := 2 * m0
		m2 := m1
		for _, v := range [8]float32{row[x-3], up[x-3], down[x-3], row[x+3], up[x+3], down[x+3], up[x], down[x]} {
			baStoreMin3(v, &m0, &m1, &m2)
		}
		o[i] = float32(0.45*m0) + float32(0.3*m1) + float32(0.25*m2)
	}
}

func baStoreMin3(v float32, m0, m1, m2 *float32) {
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
