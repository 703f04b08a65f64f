package butteraugli

import (
	"math"

	"github.com/zenmetrics-go/zenmetrics/cpusimd"
)

// Butteraugli's blurs are truncated Gaussians: the kernel reaches out
// int(2.25·σ) pixels. The 5-tap one (only σ=1.2, in the opsin dynamics) is
// libjxl's Separable5 convolution, which mirrors the image at its borders
// (the edge pixel repeated). Every longer kernel is a plain FIR applied to
// rows and then to columns; at the borders the kernel is cut off at the
// image edge and renormalised to the weights that remain.

// kernel is one precomputed blur.
type kernel struct {
	full []float32 // 2·off+1 taps, unnormalised
	off  int
	// half[i] = full[i] / Σfull, i = 0..off (outermost tap first); used
	// where the whole kernel fits inside the image.
	half []float32
	// sep5 weights (centre, ±1, ±2), for the 5-tap mirrored blur.
	w0, w1, w2 float32
	// simd is half for cpusimd.BAFIR (nil for the 5-tap kernel).
	simd *cpusimd.BATaps
}

func makeKernel(sigma float32) *kernel {
	const m = float32(2.25)
	s := float64(sigma)
	scaler := -1.0 / (2.0 * s * s)
	off := int(m * float32(math.Abs(float64(sigma))))
	if off < 1 {
		off = 1
	}
	k := &kernel{full: make([]float32, 2*off+1), off: off}
	for i := -off; i <= off; i++ {
		k.full[i+off] = float32(math.Exp(scaler * float64(i) * float64(i)))
	}
	var sum float32
	for _, v := range k.full {
		sum += v
	}
	inv := 1 / sum
	k.half = make([]float32, off+1)
	for i := range k.half {
		k.half[i] = k.full[i] * inv
	}
	if off != 2 {
		k.simd = cpusimd.NewBATaps(k.half)
	}
	if len(k.full) == 5 {
		k.w0 = k.full[2] * inv
		k.w1 = k.full[1] * inv
		k.w2 = k.full[0] * inv
	}
	return k
}

// The five blur radii butteraugli uses.
var (
	kernOpsin = makeKernel(1.2)           // 5 taps
	kernLF    = makeKernel(7.15593339443) // 33 taps
	kernHF    = makeKernel(3.22489901262) // 15 taps
	kernUHF   = makeKernel(1.56416327805) // 7 taps
	kernMask  = makeKernel(2.7)           // 13 taps
)

// scratch holds reusable work buffers for one sequential pipeline: three
// numbered buffers, and a free list of planes that a stage has finished
// with, handed out again (zeroed, like a new plane) to later stages.
type scratch struct {
	bufs [3][]float32
	free [][]float32
}

// newPlane is a zeroed w×h plane, from the free list when a buffer there is
// large enough (the smallest such), else newly allocated.
func (s *scratch) newPlane(w, h int) plane {
	p, reused := s.takePlane(w, h)
	if reused {
		clear(p.p)
	}
	return p
}

// outPlane is newPlane without the zeroing, for a stage that writes every
// sample before anything reads it (a blur's or a row kernel's output):
// clearing a reused 4 MB plane costs a pass over memory for nothing.
func (s *scratch) outPlane(w, h int) plane {
	p, _ := s.takePlane(w, h)
	return p
}

// takePlane is a w×h plane from the free list (reused) or newly allocated
// (zero).
func (s *scratch) takePlane(w, h int) (p plane, reused bool) {
	n := w * h
	best := -1
	for i, b := range s.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(s.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return newPlane(w, h), false
	}
	b := s.free[best][:n]
	last := len(s.free) - 1
	s.free[best] = s.free[last]
	s.free[last] = nil
	s.free = s.free[:last]
	return plane{w: w, h: h, p: b}, true
}

func (s *scratch) newImage3(w, h int) image3 {
	return image3{s.newPlane(w, h), s.newPlane(w, h), s.newPlane(w, h)}
}

// outImage3 is three outPlanes.
func (s *scratch) outImage3(w, h int) image3 {
	return image3{s.outPlane(w, h), s.outPlane(w, h), s.outPlane(w, h)}
}

// release puts buffers that nothing reads any more on the free list. Each
// buffer must be released once, and not while any plane still uses it.
func (s *scratch) release(bufs ...[]float32) {
	for _, b := range bufs {
		if cap(b) > 0 {
			s.free = append(s.free, b[:0])
		}
	}
}

// plane returns buffer i viewed as a w×h plane (contents undefined).
func (s *scratch) plane(i, w, h int) plane {
	if cap(s.bufs[i]) < w*h {
		s.bufs[i] = make([]float32, w*h)
	}
	return plane{w: w, h: h, p: s.bufs[i][:w*h]}
}

// blur writes the blurred in to out (which may be in itself). It uses
// scratch buffer 0. The passes are blurH and blurV over all rows (sep5H
// and sep5V for the 5-tap kernel), the same row functions the streamed
// pair path runs on windows of rows.
func blur(wk workers, k *kernel, in, out plane, sc *scratch) {
	w, h := in.w, in.h
	if len(k.full) == 5 && &in.p[0] != &out.p[0] {
		tmp := sc.plane(0, w, h)
		wk.rows(h, func(y0, y1 int) { sep5H(k, in, tmp, y0, y1) })
		wk.rows(h, func(y0, y1 int) { sep5V(k, tmp, out, y0, y1) })
		return
	}
	// Rows first, then columns; per pixel the same arithmetic as libjxl's
	// convolve-and-transpose twice.
	a := sc.plane(0, interStride(w), h)
	blocks := k.rowBorders(w)
	wk.rows(h, func(y0, y1 int) { blurH(k, in, a, blocks, y0, y1) })
	wk.rows(h, func(y0, y1 int) { blurV(k, a, out, y0, y1) })
}

// interStride is the row stride of a blur's intermediate plane for an
// image w wide: blurStride on the fast path, w (what firColumns reads)
// on the reference path.
func interStride(w int) int {
	if useFast {
		return blurStride(w)
	}
	return w
}

// blurH writes rows [y0, y1) of in blurred along x into the same rows of
// a, whose stride (a.w) is interStride(in.w). blocks is k.rowBorders(in.w).
func blurH(k *kernel, in, a plane, blocks []rowBorder, y0, y1 int) {
	w := in.w
	if !useFast {
		for y := y0; y < y1; y++ {
			firRow(k, in.row(y), a.row(y)[:w])
		}
		return
	}
	// The interior through cpusimd.BAFIR; the border columns (x < b1 and
	// x ≥ b2, all of them in a row narrower than the kernel) eight at a
	// time through cpusimd.BARowBorder, with borderTap's renormalisation
	// computed once per column instead of once per pixel.
	off := k.off
	b1, b2 := min(w, off), max(0, w-off)
	var o [8]float32
	for y := y0; y < y1; y++ {
		src, dst := in.row(y), a.row(y)[:w:w]
		if b1 < b2 {
			cpusimd.BAFIR(dst[b1:b2], src[b1-off:], 1, k.simd)
		}
		for i := range blocks {
			b := &blocks[i]
			cpusimd.BARowBorder(&o, src[b.jb:], b.w, &b.s)
			for l := 0; l < b.n; l++ {
				if b.mask&(1<<l) != 0 {
					dst[b.xb+l] = o[l]
				}
			}
		}
	}
}

// blurV writes rows [y0, y1) of out, a blurred along y (a from blurH,
// holding every row within k.off of them).
func blurV(k *kernel, a, out plane, y0, y1 int) {
	if !useFast {
		firColumns(k, a, out, y0, y1)
		return
	}
	w, h := out.w, out.h
	off := k.off
	st := a.w
	// Interior rows in strips of colStrip(off) columns, top to bottom, so
	// that the 2·off+1 input rows of a strip stay in the L1 cache.
	i0, i1 := max(y0, off), min(y1, h-off)
	strip := colStrip(off)
	for x0 := 0; x0 < w; x0 += strip {
		x1 := min(x0+strip, w)
		for y := i0; y < i1; y++ {
			cpusimd.BAFIR(out.row(y)[x0:x1], a.p[(y-off-a.y0)*st+x0:], st, k.simd)
		}
	}
	var rows [2*maxOff + 1][]float32
	for y := y0; y < y1; y++ {
		if y >= off && y < h-off {
			continue
		}
		// Border row: cut-off kernel, renormalised (firColumns's
		// arithmetic, whole rows at a time).
		lo, hi := max(0, y-off), min(h-1, y+off)
		var wsum float32
		for j := lo; j <= hi; j++ {
			wsum += k.full[j-y+off]
			rows[j-lo] = a.row(j)[:w:w]
		}
		cpusimd.BAColumnSum(out.row(y), rows[:hi-lo+1], k.full[lo-y+off:], 1/wsum)
	}
}

// colChunk is the width of the column strips firColumns works on, so that
// its partial sums stay in the L1 cache.
const colChunk = 512

// firColumns convolves rows [y0, y1) of out along y, reading src: for each
// output row the tap pairs are accumulated strip by strip into the same
// four partial sums as firRow uses.
func firColumns(k *kernel, src, out plane, y0, y1 int) {
	h, w := src.h, src.w
	off := k.off
	b1 := min(h, off)
	b2 := 0
	if h > off {
		b2 = h - off
	}
	sk := k.half
	var acc [4][colChunk]float32
	for x0 := 0; x0 < w; x0 += colChunk {
		x1 := min(x0+colChunk, w)
		n := x1 - x0
		a0, a1, a2, a3 := acc[0][:n], acc[1][:n], acc[2][:n], acc[3][:n]
		for y := y0; y < y1; y++ {
			dst := out.row(y)[x0:x1]
			dst = dst[:len(a0)]
			if y < b1 || y >= b2 {
				// Border row: cut-off kernel, renormalised.
				lo := max(0, y-off)
				hi := min(h-1, y+off)
				var wsum float32
				for j := lo; j <= hi; j++ {
					wsum += k.full[j-y+off]
				}
				scale := 1 / wsum
				clear(a0)
				for j := lo; j <= hi; j++ {
					r := src.row(j)[x0:x1]
					r = r[:len(a0)]
					kw := k.full[j-y+off]
					for x := range a0 {
						a0[x] += float32(r[x] * kw)
					}
				}
				for x := range a0 {
					dst[x] = a0[x] * scale
				}
				continue
			}
			// Partial sum j takes pairs j, j+4, j+8, … in that order; each
			// is built in one pass over the strip (up to four pairs at a
			// time, held in a register), the same additions in the same
			// order as one pass per pair.
			for j := 0; j < min(4, off); j++ {
				a := acc[j][:n]
				assign := true
				for i := j; i < off; {
					left := (off - i + 3) / 4 // pairs still due to this sum
					ra := func(d int) []float32 { return src.row(y - off + i + 4*d)[x0:x1] }
					rb := func(d int) []float32 { return src.row(y + off - i - 4*d)[x0:x1] }
					switch {
					case left >= 4:
						colAcc4(a, ra(0), rb(0), ra(1), rb(1), ra(2), rb(2), ra(3), rb(3),
							(*[4]float32)([]float32{sk[i], sk[i+4], sk[i+8], sk[i+12]}), assign)
						i += 16
					case left >= 2:
						colAcc2(a, ra(0), rb(0), ra(1), rb(1), sk[i], sk[i+4], assign)
						i += 8
					default:
						colAcc1(a, ra(0), rb(0), sk[i], assign)
						i += 4
					}
					assign = false
				}
			}
			rc := src.row(y)[x0:x1]
			rc = rc[:len(a0)]
			a1, a2 = a1[:len(a0)], a2[:len(a0)]
			sc := sk[off]
			if off >= 4 {
				a3 = a3[:len(a0)]
				for x := range a0 {
					dst[x] = float32(rc[x]*sc) + a0[x] + a1[x] + a2[x] + a3[x]
				}
			} else {
				for x := range a0 {
					dst[x] = float32(rc[x]*sc) + a0[x] + a1[x] + a2[x]
				}
			}
		}
	}
}

// firRow convolves one row along x: the full kernel in the interior,
// the renormalised cut-off kernel near the ends.
func firRow(k *kernel, src, dst []float32) {
	n := len(src)
	off := k.off
	b1 := min(n, off)
	b2 := 0
	if n > off {
		b2 = n - off
	}
	if b1 < b2 {
		switch off {
		case 3:
			firInterior7(src, dst, b1, b2, (*[4]float32)(k.half))
		case 6:
			firInterior13(src, dst, b1, b2, (*[7]float32)(k.half))
		case 7:
			firInterior15(src, dst, b1, b2, (*[8]float32)(k.half))
		case 16:
			firInterior33(src, dst, b1, b2, (*[17]float32)(k.half))
		default:
			panic("butteraugli: unexpected kernel length")
		}
	}
	for x := 0; x < n; x++ {
		if x < b1 || x >= b2 {
			dst[x] = borderTap(k, n, x, src)
		}
	}
}

// borderTap is the renormalised, cut-off kernel at position x of a line of
// n samples.
func borderTap(k *kernel, n, x int, src []float32) float32 {
	off := k.off
	lo := max(0, x-off)
	hi := min(n-1, x+off)
	var wsum float32
	for j := lo; j <= hi; j++ {
		wsum += k.full[j-x+off]
	}
	scale := 1 / wsum
	var sum float32
	for j := lo; j <= hi; j++ {
		sum += float32(src[j] * k.full[j-x+off])
	}
	return sum * scale
}

// mirror reflects an out-of-range coordinate back into [0, n), repeating
// the edge sample.
func mirror(x, n int) int {
	for x < 0 || x >= n {
		if x < 0 {
			x = -x - 1
		} else {
			x = 2*n - 1 - x
		}
	}
	return x
}

// Throughout, products that feed a sum are rounded with float32(·): Go on
// arm64 fuses x*y + z into one FMADD otherwise, and the results would
// differ from amd64's (and from cpusimd's kernels).

// sep5H and sep5V are the 5×5 separable blur with mirrored borders: each
// row is convolved along x into tmp (sep5H), then five rows of tmp around
// each output row are combined along y (sep5V, which needs tmp's rows
// within 2 of its rows, mirrored at the image edges).
func sep5H(k *kernel, in, tmp plane, y0, y1 int) {
	w := in.w
	w0, w1, w2 := k.w0, k.w1, k.w2
	for y := y0; y < y1; y++ {
		src := in.row(y)
		dst := tmp.row(y)
		if useFast && w >= 5 {
			cpusimd.BASep5(dst[2:w-2], src, 1, &[3]float32{w0, w1, w2})
			for _, x := range [4]int{0, 1, w - 2, w - 1} {
				dst[x] = float32(src[x]*w0) + float32((src[mirror(x-1, w)]+src[mirror(x+1, w)])*w1) +
					float32((src[mirror(x-2, w)]+src[mirror(x+2, w)])*w2)
			}
			continue
		}
		if w >= 5 {
			for x := 2; x < w-2; x++ {
				dst[x] = float32(src[x]*w0) + float32((src[x-1]+src[x+1])*w1) + float32((src[x-2]+src[x+2])*w2)
			}
			for _, x := range [4]int{0, 1, w - 2, w - 1} {
				dst[x] = float32(src[x]*w0) + float32((src[mirror(x-1, w)]+src[mirror(x+1, w)])*w1) +
					float32((src[mirror(x-2, w)]+src[mirror(x+2, w)])*w2)
			}
		} else {
			for x := 0; x < w; x++ {
				dst[x] = float32(src[x]*w0) + float32((src[mirror(x-1, w)]+src[mirror(x+1, w)])*w1) +
					float32((src[mirror(x-2, w)]+src[mirror(x+2, w)])*w2)
			}
		}
	}
}

func sep5V(k *kernel, tmp, out plane, y0, y1 int) {
	w, h := tmp.w, tmp.h
	w0, w1, w2 := k.w0, k.w1, k.w2
	for y := y0; y < y1; y++ {
		if useFast && y >= 2 && y < h-2 {
			cpusimd.BASep5(out.row(y), tmp.p[(y-2-tmp.y0)*w:], w, &[3]float32{w0, w1, w2})
			continue
		}
		m := tmp.row(y)
		t1 := tmp.row(mirror(y-1, h))
		b1 := tmp.row(mirror(y+1, h))
		t2 := tmp.row(mirror(y-2, h))
		b2 := tmp.row(mirror(y+2, h))
		dst := out.row(y)
		for x := range dst {
			dst[x] = float32(m[x]*w0) + float32((t1[x]+b1[x])*w1) + float32((t2[x]+b2[x])*w2)
		}
	}
}

// colAcc1 sets (assign) or adds to a the tap pair (ra+rb)·s.
func colAcc1(a, ra, rb []float32, s float32, assign bool) {
	ra, rb = ra[:len(a)], rb[:len(a)]
	if assign {
		for x := range a {
			a[x] = float32((ra[x] + rb[x]) * s)
		}
		return
	}
	for x := range a {
		a[x] += float32((ra[x] + rb[x]) * s)
	}
}

// colAcc2 is colAcc1 for two pairs in turn, in one pass.
func colAcc2(a, ra0, rb0, ra1, rb1 []float32, s0, s1 float32, assign bool) {
	ra0, rb0, ra1, rb1 = ra0[:len(a)], rb0[:len(a)], ra1[:len(a)], rb1[:len(a)]
	if assign {
		for x := range a {
			v := float32((ra0[x] + rb0[x]) * s0)
			v += float32((ra1[x] + rb1[x]) * s1)
			a[x] = v
		}
		return
	}
	for x := range a {
		v := a[x]
		v += float32((ra0[x] + rb0[x]) * s0)
		v += float32((ra1[x] + rb1[x]) * s1)
		a[x] = v
	}
}

// colAcc4 is colAcc1 for four pairs in turn, in one pass.
func colAcc4(a, ra0, rb0, ra1, rb1, ra2, rb2, ra3, rb3 []float32, s *[4]float32, assign bool) {
	n := len(a)
	ra0, rb0, ra1, rb1 = ra0[:n], rb0[:n], ra1[:n], rb1[:n]
	ra2, rb2, ra3, rb3 = ra2[:n], rb2[:n], ra3[:n], rb3[:n]
	s0, s1, s2, s3 := s[0], s[1], s[2], s[3]
	for x := range a {
		var v float32
		if assign {
			v = float32((ra0[x] + rb0[x]) * s0)
		} else {
			v = a[x] + float32((ra0[x]+rb0[x])*s0)
		}
		v += float32((ra1[x] + rb1[x]) * s1)
		v += float32((ra2[x] + rb2[x]) * s2)
		v += float32((ra3[x] + rb3[x]) * s3)
		a[x] = v
	}
}
