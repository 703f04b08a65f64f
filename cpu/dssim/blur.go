package dssim

// kernel is dssim-core 3.4.0's 3×3 blur kernel (dssim-core/src/blur.rs,
// KERNEL; kornelski/dssim tag 3.4.0, AGPL-3.0), row-major. It is
// separable (≈ [0.30876, 0.38248, 0.30876] squared) and sums to 1.000001;
// the blur applies it twice.
var kernel = [9]float32{
	0.095332, 0.118095, 0.095332,
	0.118095, 0.146293, 0.118095,
	0.095332, 0.118095, 0.095332,
}

// One pass of dssim-core's blur gives output pixel (x, y), in float32,
//
//	(P + C) + N
//
// where P, C and N are the weighted sums of the three pixels around x in
// the rows above, at and below y (indices clamped into the image):
// ((s[x−1]·k0 + s[x]·k1) + s[x+1]·k2) without fused operations for inner
// pixels, fma(s[x+1], k2, fma(s[x−1], k0, s[x]·k1)) for the first and last
// pixel of a row (dssim-core's edge path). The kernel's top and bottom rows
// are equal (k6, k7, k8 = k0, k1, k2), so N for output row y is exactly P
// for output row y+2: each input row's "outer" sum (weights k0 k1 k0) and
// "middle" sum (k3 k4 k3) is computed once and used for three output rows.
// That is the same float32 arithmetic in the same order as dssim-core's
// 9-tap loop (the test compares them bit for bit) with a third fewer
// operations.

// rowSums writes the outer (k0 k1 k2) and middle (k3 k4 k5) sums of input
// row s into o and m.
func rowSums(s, o, m []float32) {
	w := len(s)
	k0, k1, k2 := kernel[0], kernel[1], kernel[2]
	k3, k4, k5 := kernel[3], kernel[4], kernel[5]
	o, m = o[:w], m[:w]
	edge := func(x int) {
		x0, x2 := max(x-1, 0), min(x+1, w-1)
		o[x] = fma32(s[x2], k2, fma32(s[x0], k0, s[x]*k1))
		m[x] = fma32(s[x2], k5, fma32(s[x0], k3, s[x]*k4))
	}
	edge(0)
	if w > 1 {
		edge(w - 1)
	}
	if w <= 2 {
		return
	}
	// Equal-length re-slices let the compiler drop the bounds checks; the
	// float32 conversions keep arm64 from fusing multiply-adds that
	// dssim-core does not fuse.
	sa, sb, sc := s[0:w-2], s[1:w-1], s[2:w]
	oo, mm := o[1:w-1], m[1:w-1]
	_, _, _, _ = sb[len(sa)-1], sc[len(sa)-1], oo[len(sa)-1], mm[len(sa)-1]
	for i := range sa {
		a, b, c := sa[i], sb[i], sc[i]
		oo[i] = float32(float32(a*k0)+float32(b*k1)) + float32(c*k2)
		mm[i] = float32(float32(a*k3)+float32(b*k4)) + float32(c*k5)
	}
}

// blurInput is what the first pass of a blur reads: plane a, or a·a
// (square), or a·b (product), each product a float32 multiplication as
// dssim-core forms img², img1·img2 before blurring them.
type blurInput struct {
	a, b   []float32
	square bool
}

// row returns input row y (w pixels), computed into buf when it is a
// square or a product.
func (in blurInput) row(y, w int, buf []float32) []float32 {
	a := in.a[y*w : y*w+w]
	switch {
	case in.square:
		buf = buf[:w]
		for i, v := range a {
			buf[i] = v * v
		}
		return buf
	case in.b != nil:
		b := in.b[y*w : y*w+w]
		buf = buf[:w]
		for i, v := range a {
			buf[i] = v * b[i]
		}
		return buf
	}
	return a
}

// rowBufLen is the per-worker buffer one blur pass needs for rows of w
// pixels: three outer sums, three middle sums and one computed input row.
func rowBufLen(w int) int { return 7 * w }

// blurRows writes rows [y0, y1) of one pass over the w×h input into dst.
// buf holds rowBufLen(w) floats.
func blurRows(in blurInput, dst []float32, w, h, y0, y1 int, buf []float32) {
	var outer, mid [3][]float32
	for i := range outer {
		outer[i] = buf[2*i*w : (2*i+1)*w]
		mid[i] = buf[(2*i+1)*w : (2*i+2)*w]
	}
	load := buf[6*w : 7*w]
	// slot r holds input row r's sums, for r in the window y−1, y, y+1
	// (clamped), kept in ring slots (r+3) % 3.
	sums := func(r int) {
		k := (r + 3) % 3
		rowSums(in.row(r, w, load), outer[k], mid[k])
	}
	clamp := func(r int) int { return min(max(r, 0), h-1) }
	// Rows are identified by their clamped index; a window that repeats a
	// row (at the top and bottom edges) reads the same slot twice.
	prev, cur := clamp(y0-1), y0
	sums(prev)
	if cur != prev {
		sums(cur)
	}
	for y := y0; y < y1; y++ {
		next := clamp(y + 1)
		if next != cur {
			sums(next)
		}
		p, c, n := outer[(prev+3)%3], mid[(cur+3)%3], outer[(next+3)%3]
		out := dst[y*w : y*w+w]
		p, c, n = p[:len(out)], c[:len(out)], n[:len(out)]
		for i := range out {
			out[i] = (p[i] + c[i]) + n[i]
		}
		prev, cur = cur, next
	}
}

// blur is dssim-core's blur: two passes of the 3×3 kernel, in → tmp →
// dst. dst may alias in.a (dssim-core's blur_in_place); tmp must not.
// bufs holds one rowBufLen(w) buffer per worker.
func (p *pool) blur(in blurInput, dst, tmp []float32, w, h int, bufs [][]float32) {
	p.rows(h, w, func(worker, y0, y1 int) { blurRows(in, tmp, w, h, y0, y1, bufs[worker]) })
	p.rows(h, w, func(worker, y0, y1 int) { blurRows(blurInput{a: tmp}, dst, w, h, y0, y1, bufs[worker]) })
}
