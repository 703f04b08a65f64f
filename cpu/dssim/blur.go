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

// blurRows writes rows [y0, y1) of one 3×3 pass over the w×h plane src into
// dst, with edges extended (row and column indices clamped), in float32
// exactly as dssim-core's portable blur orders it: inner pixels add the
// three row sums (a·k0 + b·k1 + c·k2) left to right without fused
// operations; the first and last pixel of a row use fused multiply-adds,
// fma(c, k2, fma(a, k0, b·k1)) per row, as dssim-core's edge path does.
func blurRows(src, dst []float32, w, h, y0, y1 int) {
	k0, k1, k2 := kernel[0], kernel[1], kernel[2]
	k3, k4, k5 := kernel[3], kernel[4], kernel[5]
	k6, k7, k8 := kernel[6], kernel[7], kernel[8]
	for y := y0; y < y1; y++ {
		yp, yn := max(y-1, 0), min(y+1, h-1)
		p := src[yp*w : yp*w+w]
		c := src[y*w : y*w+w]
		n := src[yn*w : yn*w+w]
		out := dst[y*w : y*w+w]
		edge := func(x int) float32 {
			x0, x2 := max(x-1, 0), min(x+1, w-1)
			return fma32(p[x2], k2, fma32(p[x0], k0, p[x]*k1)) +
				fma32(c[x2], k5, fma32(c[x0], k3, c[x]*k4)) +
				fma32(n[x2], k8, fma32(n[x0], k6, n[x]*k7))
		}
		out[0] = edge(0)
		if w > 1 {
			out[w-1] = edge(w - 1)
		}
		if w > 2 {
			// Re-slicing to equal lengths lets the compiler drop bounds
			// checks in the loop; the float32 conversions keep arm64 from
			// fusing the multiply-adds that dssim-core does not fuse.
			pa, pb, pc := p[0:w-2], p[1:w-1], p[2:w]
			ca, cb, cc := c[0:w-2], c[1:w-1], c[2:w]
			na, nb, nc := n[0:w-2], n[1:w-1], n[2:w]
			o := out[1 : w-1]
			_, _, _, _, _, _, _, _ = pb[len(pa)-1], pc[len(pa)-1], ca[len(pa)-1], cb[len(pa)-1], cc[len(pa)-1], na[len(pa)-1], nb[len(pa)-1], nc[len(pa)-1]
			_ = o[len(pa)-1]
			for i := range pa {
				rp := float32(float32(pa[i]*k0)+float32(pb[i]*k1)) + float32(pc[i]*k2)
				rc := float32(float32(ca[i]*k3)+float32(cb[i]*k4)) + float32(cc[i]*k5)
				rn := float32(float32(na[i]*k6)+float32(nb[i]*k7)) + float32(nc[i]*k8)
				o[i] = (rp + rc) + rn
			}
		}
	}
}

// blur is dssim-core's blur: two passes of the 3×3 kernel, src → tmp →
// dst. dst may be src (dssim-core's blur_in_place); tmp must be distinct.
func (p *pool) blur(src, dst, tmp []float32, w, h int) {
	p.rows(h, w, func(y0, y1 int) { blurRows(src, tmp, w, h, y0, y1) })
	p.rows(h, w, func(y0, y1 int) { blurRows(tmp, dst, w, h, y0, y1) })
}
