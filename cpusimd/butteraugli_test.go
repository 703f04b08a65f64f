package cpusimd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The Butteraugli kernels are checked against their Go twins bit for bit
// (tolerance 0: the assembly does the twins' float32/float64 steps in the
// same order, so any difference is a bug), with baGuard samples around every
// output to catch stray writes. Without assembly (noasm, other GOARCHes) the test
// still runs the twins against the plain formulas of the exported
// wrappers' doc comments and fails if the assembly should exist but does not run.

// withAsm runs f with the assembly on (where built) and off.
func baWithAsm(t *testing.T, f func(asm bool)) {
	t.Helper()
	saved := baEnabled
	defer func() { baEnabled = saved }()
	baEnabled = false
	f(false)
	if !baAsm {
		t.Log("no Butteraugli assembly on this build/CPU: twins only")
		return
	}
	baEnabled = true
	f(true)
}

func baRandPlane(r *rand.Rand, n int, scale float32) []float32 {
	p := make([]float32, n)
	for i := range p {
		// Mixed magnitudes and signs, some exact zeros.
		switch r.IntN(10) {
		case 0:
			p[i] = 0
		case 1:
			p[i] = (r.Float32() - 0.5) * scale * 100
		default:
			p[i] = (r.Float32() - 0.5) * scale
		}
	}
	return p
}

const baGuard = 16

// run calls f on a destination with baGuard bands and returns the inside,
// failing if a baGuard sample changed.
func baGuarded(t *testing.T, n int, f func(dst []float32)) []float32 {
	t.Helper()
	buf := make([]float32, n+2*baGuard)
	for i := range buf {
		buf[i] = float32(math.NaN())
	}
	f(buf[baGuard : baGuard+n : baGuard+n])
	for i := 0; i < baGuard; i++ {
		if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[baGuard+n+i])) {
			t.Fatalf("baGuard sample %d written", i)
		}
	}
	return append([]float32(nil), buf[baGuard:baGuard+n]...)
}

func baSameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: sample %d: %v (%08x) vs %v (%08x)", what, i, a[i], math.Float32bits(a[i]), b[i], math.Float32bits(b[i]))
		}
	}
}

func TestBAFIR(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, off := range []int{3, 6, 7, 16} {
		k := make([]float32, off+1)
		for i := range k {
			k[i] = r.Float32()
		}
		taps := NewBATaps(k)
		for _, n := range []int{1, 7, 8, 9, 16, 17, 24, 64, 101} {
			for _, step := range []int{1, 3, 130} {
				src := baRandPlane(r, 2*off*step+n, 10)
				var res [2][]float32
				baWithAsm(t, func(asm bool) {
					res[baB2i(asm)] = baGuarded(t, n, func(dst []float32) { BAFIR(dst, src, step, taps) })
				})
				// The twin against the plain sum, term by term, every
				// product rounded (float32(·): arm64 would fuse it).
				for i := 0; i < n; i++ {
					var a [4]float32
					for j := 0; j < off; j++ {
						v := float32((src[i+j*step] + src[i+(2*off-j)*step]) * k[j])
						if j < 4 {
							a[j] = v
						} else {
							a[j%4] = a[j%4] + v
						}
					}
					want := float32(src[i+off*step]*k[off]) + a[0] + a[1] + a[2]
					if off >= 4 {
						want += a[3]
					}
					if math.Float32bits(want) != math.Float32bits(res[0][i]) {
						t.Fatalf("off %d n %d step %d: twin %v, want %v", off, n, step, res[0][i], want)
					}
				}
				if res[1] != nil {
					baSameBits(t, "fir", res[0], res[1])
				}
			}
		}
	}
}

func baB2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBAMalta(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 8, 13, 40} {
		stride := n + 8 + r.IntN(5)
		i0 := r.IntN(4)
		size := i0 + n - 1 + 8*stride + 9
		u, h, m := baRandPlane(r, size, 3), baRandPlane(r, size, 3), baRandPlane(r, size, 3)
		var res [2][]float32
		baWithAsm(t, func(asm bool) {
			res[baB2i(asm)] = baGuarded(t, n, func(o []float32) { BAMalta(o, u, h, m, i0, stride) })
		})
		if res[1] != nil {
			baSameBits(t, "malta", res[0], res[1])
		}
	}
}

func TestBAMaltaDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	w := NewBAMaltaWeights(130262059.556, 1234.5, 987.25)
	w2 := NewBAMaltaWeights(5, 3.25, 1.5)
	for _, mw := range []*BAMaltaWeights{w, w2} {
		for _, n := range []int{1, 8, 15, 1000} {
			r0 := baRandPlane(r, n, 4)
			r1 := make([]float32, n)
			for i := range r1 {
				// Around the bounds 0.55·|v0| and 1.05·|v0| of both signs.
				switch r.IntN(4) {
				case 0:
					r1[i] = r0[i] * (r.Float32()*1.4 - 0.2)
				case 1:
					r1[i] = -r0[i] * r.Float32()
				case 2:
					r1[i] = r0[i] * float32(0.55)
				default:
					r1[i] = (r.Float32() - 0.5) * 4
				}
			}
			var res [2][]float32
			baWithAsm(t, func(asm bool) {
				res[baB2i(asm)] = baGuarded(t, n, func(o []float32) { BAMaltaDiff(mw, r0, r1, o) })
			})
			if res[1] != nil {
				baSameBits(t, "maltaDiff", res[0], res[1])
			}
		}
	}
}

func TestBADiffmapRow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	k := &BADiffmapConsts{320, 320, 1.2, 1.2, 2150, 10.6, 16.2, 29.2, 0.84, 0.70, 0.4, 10}
	for _, n := range []int{1, 8, 17, 300} {
		var rows [baRows][]float32
		for i := range rows {
			rows[i] = baRandPlane(r, n, 2)
		}
		for _, i := range []int{BARowA0, BARowA1, BARowMAC, BARowMDC} {
			for x := range rows[i] {
				rows[i][x] = baAbs32(rows[i][x])
			}
		}
		// HF distorted values near the bounds 0.4·|v0| and |v0|, both signs.
		for _, c := range [][2]int{{BARowH0X, BARowH1X}, {BARowH0Y, BARowH1Y}} {
			for x := range rows[c[1]] {
				v0 := rows[c[0]][x]
				switch r.IntN(4) {
				case 0:
					rows[c[1]][x] = v0 * float32(0.4)
				case 1:
					rows[c[1]][x] = -v0 * r.Float32()
				case 2:
					rows[c[1]][x] = v0 * (r.Float32()*1.5 - 0.2)
				}
			}
		}
		var res [2][]float32
		baWithAsm(t, func(asm bool) {
			res[baB2i(asm)] = baGuarded(t, n, func(o []float32) {
				rows[BARowOut] = o
				BADiffmapRow(&rows, k)
			})
		})
		if res[1] != nil {
			baSameBits(t, "diffmapRow", res[0], res[1])
		}
	}
}

func TestBAOpsinRow(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	mix := [12]float32{0.2995655, 0.6337309, 0.0777056, 1.7557484, 0.2215869, 0.6939139, 0.0987314, 1.7557484, 0.02, 0.02, 0.2048013, 12.226455}
	k := NewBAOpsinConsts(80, 1e-4, mix, 9.971064, 13.33988, -23.16046,
		[6]float32{-1.8503833e-06, 1.428716, 0.7424587, 0.99032813, 1.0096718, 0.17409343})
	for _, n := range []int{1, 8, 19, 500} {
		var in [6][]float32
		for i := range in {
			in[i] = make([]float32, n)
			for x := range in[i] {
				in[i][x] = r.Float32() * r.Float32() * 1.2
			}
		}
		var res [2][3][]float32
		baWithAsm(t, func(asm bool) {
			var o [3][]float32
			o[0] = baGuarded(t, n, func(ox []float32) {
				o[1] = baGuarded(t, n, func(oy []float32) {
					o[2] = baGuarded(t, n, func(ob []float32) {
						BAOpsinRow(in[0], in[1], in[2], in[3], in[4], in[5], ox, oy, ob, k)
					})
				})
			})
			res[baB2i(asm)] = o
		})
		if res[1][0] != nil {
			for c := 0; c < 3; c++ {
				baSameBits(t, "opsin", res[0][c], res[1][c])
			}
		}
	}
}

func TestBAErosion(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, w := range []int{7, 14, 30, 200} {
		rows := [3][]float32{baRandPlane(r, w, 1), baRandPlane(r, w, 1), baRandPlane(r, w, 1)}
		// Ties and non-negative values (as the activity is) in some rows.
		for x := range rows[1] {
			if x%5 == 0 {
				rows[1][x] = rows[0][x]
			}
			if w == 200 {
				rows[2][x] = baAbs32(rows[2][x])
				rows[0][x] = baAbs32(rows[0][x])
			}
		}
		n := w - 6
		if n <= 0 {
			continue
		}
		var res [2][]float32
		baWithAsm(t, func(asm bool) {
			res[baB2i(asm)] = baGuarded(t, n, func(o []float32) { BAErosion(rows[0], rows[1], rows[2], o, 3) })
		})
		if res[1] != nil {
			baSameBits(t, "erosion", res[0], res[1])
		}
	}
}

// baRowsTest runs f on copies of nr random rows (values spread around the
// thresholds thr, both signs, exact threshold values and zeros included)
// with the assembly off and on, and compares every row bit for bit. The
// rows sit in buffers with NaN guard bands that must stay untouched.
func baRowsTest(t *testing.T, name string, nr int, thr []float32, f func(rows [][]float32)) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(name)), uint64(nr)))
	for _, n := range []int{1, 8, 11, 64, 333} {
		in := make([][]float32, nr)
		for j := range in {
			in[j] = make([]float32, n)
			for i := range in[j] {
				th := thr[r.IntN(len(thr))]
				switch r.IntN(6) {
				case 0:
					in[j][i] = th
				case 1:
					in[j][i] = -th
				case 2:
					in[j][i] = 0
				default:
					in[j][i] = (r.Float32()*2 - 1) * th * 2.5
				}
			}
		}
		var res [2][][]float32
		baWithAsm(t, func(asm bool) {
			bufs := make([][]float32, nr)
			rows := make([][]float32, nr)
			for j := range bufs {
				bufs[j] = make([]float32, n+2*baGuard)
				for i := range bufs[j] {
					bufs[j][i] = float32(math.NaN())
				}
				rows[j] = bufs[j][baGuard : baGuard+n : baGuard+n]
				copy(rows[j], in[j])
			}
			f(rows)
			for j := range bufs {
				for i := 0; i < baGuard; i++ {
					if !math.IsNaN(float64(bufs[j][i])) || !math.IsNaN(float64(bufs[j][baGuard+n+i])) {
						t.Fatalf("%s: guard of row %d written", name, j)
					}
				}
			}
			res[baB2i(asm)] = rows
		})
		if res[1] != nil {
			for j := range res[0] {
				baSameBits(t, fmt.Sprintf("%s n=%d row %d", name, n, j), res[0][j], res[1][j])
			}
		}
	}
}

func TestBABandKernels(t *testing.T) {
	baRowsTest(t, "lfSplit", 6, []float32{1, 30}, func(r [][]float32) {
		BALFSplit(r[0], r[1], r[2], r[3], r[4], r[5], &[4]float32{-0.362267, 49.87985, 33.83284, 14.45827})
	})
	for _, amp := range []bool{false, true} {
		baRowsTest(t, "mfSplit", 2, []float32{0.29, 0.1, 3}, func(r [][]float32) {
			w := float32(0.29)
			if amp {
				w = 0.1
			}
			BAMFSplit(r[0], r[1], amp, w)
		})
	}
	baRowsTest(t, "suppress", 2, []float32{1, 10, 100}, func(r [][]float32) {
		BASuppress(r[0], r[1], &[3]float32{46, 0.34697944, 0.65302056})
	})
	baRowsTest(t, "uhfSplitX", 2, []float32{1.5, 0.04, 5}, func(r [][]float32) {
		BAUHFSplitX(r[0], r[1], &[2]float32{1.5, 0.04})
	})
	baRowsTest(t, "uhfSplitY", 2, []float32{28.469181, 5.191753, 0.132, 40}, func(r [][]float32) {
		BAUHFSplitY(r[0], r[1], &[6]float32{28.469181, 5.191753, 0.72421616, 2.6931376, 2.155, 0.132})
	})
	baRowsTest(t, "maskPre", 5, []float32{1, 20}, func(r [][]float32) {
		BAMaskPre(r[0], r[1], r[2], r[3], r[4], &[6]float32{2.5, 0.4, 0.4, 6.194241, 78.112, 8.838099})
	})
	for _, step := range []int{1, 3, 41} {
		baRowsTest(t, "sep5", 2, []float32{1}, func(r [][]float32) {
			// Row 1 is the output; row 0, read with the step, is padded
			// by repeating it.
			src := make([]float32, 0, 4*step+len(r[1]))
			for len(src) < 4*step+len(r[1]) {
				src = append(src, r[0]...)
				src = append(src, 0.5)
			}
			BASep5(r[1], src[:4*step+len(r[1])], step, &[3]float32{0.4, 0.24, 0.06})
		})
	}
}

// TestBAColumnSum: the kernel against the twin and the twin against the
// plain formula, for every row count up to the longest kernel's and widths
// that end in a partial block (the overlapping last block) or a whole one.
// Rows with exact zeros and negative weights make −0 products, which the
// sum from +0 must turn into +0 as the reference's zeroed accumulator does.
func TestBAColumnSum(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 21, 64, 1333} {
		for nrows := 1; nrows <= baColRows; nrows += 1 + nrows/8 {
			rows := make([][]float32, nrows)
			k := make([]float32, nrows)
			for j := range rows {
				rows[j] = baRandPlane(r, n, 2)
				k[j] = r.Float32() - 0.25
			}
			if nrows == 1 {
				k[0] = -1
			}
			scale := 1 / (r.Float32() + 0.5)
			want := make([]float32, n)
			for x := range want {
				var acc float32
				for j := range rows {
					p := float32(rows[j][x] * k[j])
					acc += p
				}
				want[x] = acc * scale
			}
			baWithAsm(t, func(asm bool) {
				got := baGuarded(t, n, func(dst []float32) { BAColumnSum(dst, rows, k, scale) })
				baSameBits(t, fmt.Sprintf("n=%d rows=%d asm=%v", n, nrows, asm), got, want)
			})
		}
	}
}

// TestBARowBorder: the kernel against the twin, and lane l against the
// plain loop over only its nonzero weights (what cpu/butteraugli's
// reference computes for a border column), for tap counts up to the
// longest kernel's block and lanes with zero weights before, after and
// between the taps, over samples with exact zeros and both signs.
func TestBARowBorder(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for n := 0; n <= 8+2*16; n++ {
		src := baRandPlane(r, n+3, 2)
		w := make([][8]float32, n)
		var s [8]float32
		var lo, hi [8]int
		for l := range s {
			lo[l] = r.IntN(n + 1)
			hi[l] = lo[l] + r.IntN(n-lo[l]+1)
			for j := lo[l]; j < hi[l]; j++ {
				w[j][l] = r.Float32() - 0.2
			}
			s[l] = 1 / (r.Float32() + 0.5)
		}
		var want [8]float32
		for l := range want {
			var acc float32
			for j := lo[l]; j < hi[l]; j++ {
				acc += float32(src[j] * w[j][l])
			}
			want[l] = acc * s[l]
		}
		baWithAsm(t, func(asm bool) {
			var got [8]float32
			BARowBorder(&got, src, w, &s)
			baSameBits(t, fmt.Sprintf("n=%d asm=%v", n, asm), got[:], want[:])
		})
	}
}

// TestBABorderKernelsRun calls colSumKernel and rowBorderKernel directly
// where assembly is built: each must report that it ran (so neither
// quietly falls back to its twin, as both did on arm64 before their NEON
// versions) and give the twin's bits (tolerance 0, as above) for every
// row or tap count up to the longest kernel's.
func TestBABorderKernelsRun(t *testing.T) {
	if !baAsm {
		t.Skip("no Butteraugli assembly on this build/CPU")
	}
	r := rand.New(rand.NewPCG(35, 36))
	const n8 = 3
	for nrows := 1; nrows <= baColRows; nrows++ {
		rows := make([][]float32, nrows)
		k := make([]float32, nrows)
		var ptrs [baColRows]*float32
		for j := range rows {
			rows[j] = baRandPlane(r, 8*n8, 3)
			ptrs[j] = &rows[j][0]
			k[j] = r.Float32() - 0.3
		}
		scale := 1 / (r.Float32() + 0.5)
		want := make([]float32, 8*n8)
		colSumGo(want, rows, k, scale, 0)
		var ran bool
		got := baGuarded(t, 8*n8, func(dst []float32) { ran = colSumKernel(dst, &ptrs, k, nrows, n8, scale) })
		if !ran {
			t.Fatal("colSumKernel did not run")
		}
		baSameBits(t, fmt.Sprintf("colSumKernel rows=%d", nrows), got, want)
	}
	for n := 1; n <= 8+2*16; n++ {
		src := baRandPlane(r, n, 3)
		w := make([][8]float32, n)
		var s [8]float32
		for j := range w {
			for l := range w[j] {
				w[j][l] = r.Float32() - 0.3
			}
		}
		for l := range s {
			s[l] = 1 / (r.Float32() + 0.5)
		}
		var got, want [8]float32
		rowBorderGo(&want, src, w, &s)
		if !rowBorderKernel(&got, src, w, &s) {
			t.Fatal("rowBorderKernel did not run")
		}
		baSameBits(t, fmt.Sprintf("rowBorderKernel taps=%d", n), got[:], want[:])
	}
}
