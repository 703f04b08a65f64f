package cpusimd

import "math"

// Butteraugli's frequency-band loops (cpu/butteraugli's separateFrequencies
// and maskActivity) and the 5-tap blur of its opsin dynamics; see
// butteraugli.go for the conventions. Products that feed a sum are rounded
// explicitly (float32(x*y)): Go on arm64 fuses x*y + z into one FMADD
// otherwise, which would break bit-equality with amd64 and the assembly. Every function works on whole rows of
// one length n: the assembly does the blocks of eight, the twin the rest.

func baCheck(n int, rows ...[]float32) {
	for _, r := range rows {
		if len(r) < n {
			panic("cpusimd: Butteraugli band kernel: row too short")
		}
	}
}

func baRemoveRange(w, x float32) float32 {
	if x > w {
		return x - w
	}
	if x < -w {
		return x + w
	}
	return 0
}

func baAmplifyRange(w, x float32) float32 {
	if x > w {
		return x + w
	}
	if x < -w {
		return x - w
	}
	return x + x
}

func baMaximumClamp(m, mul, v float32) float32 {
	if v >= m {
		return float32((v-m)*mul) + m
	}
	if v < -m {
		return float32((v+m)*mul) - m
	}
	return v
}

// BALFSplit subtracts the LF bands lx, ly, lb from x, y, b, then scales
// them: lb = (k[0]·ly + lb)·k[1], lx ·= k[2], ly ·= k[3].
func BALFSplit(x, y, b, lx, ly, lb []float32, k *[4]float32) {
	n := len(x)
	baCheck(n, y, b, lx, ly, lb)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [6]*float32{&x[0], &y[0], &b[0], &lx[0], &ly[0], &lb[0]}
		lfSplitKernel(&ptrs, i/8, k)
	}
	lfSplitGo(x, y, b, lx, ly, lb, k, i)
}

// lfSplitGo is BALFSplit's twin from sample i0 on.
func lfSplitGo(x, y, b, lx, ly, lb []float32, k *[4]float32, i0 int) {
	for i := i0; i < len(x); i++ {
		x[i] -= lx[i]
		y[i] -= ly[i]
		b[i] -= lb[i]
		v := float32(k[0]*ly[i]) + lb[i]
		lb[i] = v * k[1]
		lx[i] *= k[2]
		ly[i] *= k[3]
	}
}

// BAMFSplit subtracts mf from hf, then maps mf through removeRange(w)
// (amplify false) or amplifyRange(w).
func BAMFSplit(hf, mf []float32, amplify bool, w float32) {
	n := len(hf)
	baCheck(n, mf)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [2]*float32{&hf[0], &mf[0]}
		mfSplitKernel(&ptrs, i/8, amplify, &[1]float32{w})
	}
	mfSplitGo(hf, mf, amplify, w, i)
}

// mfSplitGo is BAMFSplit's twin from sample i0 on.
func mfSplitGo(hf, mf []float32, amplify bool, w float32, i0 int) {
	for i := i0; i < len(hf); i++ {
		m := mf[i]
		hf[i] -= m
		if amplify {
			mf[i] = baAmplifyRange(w, m)
		} else {
			mf[i] = baRemoveRange(w, m)
		}
	}
}

// BASuppress scales hx by (k[0]/(hy² + k[0]))·k[1] + k[2].
func BASuppress(hx, hy []float32, k *[3]float32) {
	n := len(hx)
	baCheck(n, hy)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [2]*float32{&hx[0], &hy[0]}
		suppressKernel(&ptrs, i/8, k)
	}
	suppressGo(hx, hy, k, i)
}

// suppressGo is BASuppress's twin from sample i0 on.
func suppressGo(hx, hy []float32, k *[3]float32, i0 int) {
	for i := i0; i < len(hx); i++ {
		vy := hy[i]
		s := float32(k[0]/(float32(vy*vy)+k[0])*k[1]) + k[2]
		hx[i] = s * hx[i]
	}
}

// BAUHFSplitX splits X's HF (in uhf) with its blur (in hf): hf =
// removeRange(k[0], hf), uhf = removeRange(k[1], uhf − hf before).
func BAUHFSplitX(uhf, hf []float32, k *[2]float32) {
	n := len(uhf)
	baCheck(n, hf)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [2]*float32{&uhf[0], &hf[0]}
		uhfSplitXKernel(&ptrs, i/8, k)
	}
	uhfSplitXGo(uhf, hf, k, i)
}

// uhfSplitXGo is BAUHFSplitX's twin from sample i0 on.
func uhfSplitXGo(uhf, hf []float32, k *[2]float32, i0 int) {
	for i := i0; i < len(uhf); i++ {
		hv := hf[i]
		uv := uhf[i] - hv
		hf[i] = baRemoveRange(k[0], hv)
		uhf[i] = baRemoveRange(k[1], uv)
	}
}

// BAUHFSplitY is Y's split: hv = maximumClamp(k[0], hf), uhf =
// maximumClamp(k[1], uhf − hv)·k[3], hf = amplifyRange(k[5], hv·k[4]);
// k[2] is maximumClamp's slope.
func BAUHFSplitY(uhf, hf []float32, k *[6]float32) {
	n := len(uhf)
	baCheck(n, hf)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [2]*float32{&uhf[0], &hf[0]}
		uhfSplitYKernel(&ptrs, i/8, k)
	}
	uhfSplitYGo(uhf, hf, k, i)
}

// uhfSplitYGo is BAUHFSplitY's twin from sample i0 on.
func uhfSplitYGo(uhf, hf []float32, k *[6]float32, i0 int) {
	for i := i0; i < len(uhf); i++ {
		hv := baMaximumClamp(k[0], k[2], hf[i])
		uv := baMaximumClamp(k[1], k[2], uhf[i]-hv)
		uhf[i] = uv * k[3]
		hf[i] = baAmplifyRange(k[5], float32(hv*k[4]))
	}
}

// BAMaskPre writes maskActivity's input: with xd = (ux+hx)·k[0] and
// yd = uy·k[1] + hy·k[2], out = sqrt(k[3]·|sqrt(xd² + yd²)| + k[4]) − k[5]
// (float32 square roots, correctly rounded like float32(math.Sqrt)).
func BAMaskPre(hx, hy, ux, uy, out []float32, k *[6]float32) {
	n := len(out)
	baCheck(n, hx, hy, ux, uy)
	i := 0
	if baEnabled && n >= 8 {
		i = n &^ 7
		ptrs := [5]*float32{&hx[0], &hy[0], &ux[0], &uy[0], &out[0]}
		maskPreKernel(&ptrs, i/8, k)
	}
	maskPreGo(hx, hy, ux, uy, out, k, i)
}

// maskPreGo is BAMaskPre's twin from sample i0 on.
func maskPreGo(hx, hy, ux, uy, out []float32, k *[6]float32, i0 int) {
	for i := i0; i < len(out); i++ {
		xd := (ux[i] + hx[i]) * k[0]
		yd := float32(uy[i]*k[1]) + float32(hy[i]*k[2])
		m := float32(math.Sqrt(float64(float32(xd*xd) + float32(yd*yd))))
		out[i] = float32(math.Sqrt(float64(float32(k[3]*baAbs32(m))+k[4]))) - k[5]
	}
}

// BASep5 writes len(dst) outputs of the 5-tap blur c·w0 + (c₋₁+c₊₁)·w1 +
// (c₋₂+c₊₂)·w2, where c = src[2·step + i] and the taps are step samples
// apart (so src starts two taps before the first centre).
func BASep5(dst, src []float32, step int, w *[3]float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	if step < 1 || len(src) < 4*step+n {
		panic("cpusimd: BASep5 src too short")
	}
	i := 0
	if baEnabled {
		i = n &^ 7
		sep5Kernel(src[2*step:], dst, i/8, step, w)
	}
	sep5Go(dst, src, step, w, i)
}

// sep5Go is BASep5's twin from output i0 on.
func sep5Go(dst, src []float32, step int, w *[3]float32, i0 int) {
	for i := i0; i < len(dst); i++ {
		c := 2*step + i
		dst[i] = float32(src[c]*w[0]) + float32((src[c-step]+src[c+step])*w[1]) + float32((src[c-2*step]+src[c+2*step])*w[2])
	}
}
