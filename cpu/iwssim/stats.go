package iwssim

import (
	"github.com/zenmetrics-go/zenmetrics/internal/parallel"
	"math"
)

// Local statistics on the region of one scale.
//
// piq's SSIM maps are 'valid' 11×11 correlations, so they exist at the
// (w−10)×(h−10) centres (r, c) with 5 ≤ r < h−5, 5 ≤ c < w−5: "the region".
// Its information-content map is computed on the 3×3 blocks of the whole
// band and then cropped by iw_pad = 4, which leaves exactly the blocks
// centred on the region. So every statistic below is needed on the region
// only, where no padding is ever read (the 3×3 windows reach rows 4..h−5).
//
// The region is processed in chunks of output rows. A chunk first filters
// the input rows it needs along x (the Gaussian over 11 columns, the box over
// 3) into per-worker buffers, then along y, one output row at a time, and
// produces that row's terms. Chunks overlap by 10 input rows, which are
// filtered twice; that costs (chunk+10)/chunk of the x pass and keeps each
// chunk independent, so results do not depend on the thread count.

// chunkRows is the number of output rows per chunk for a region rw wide:
// large enough that the 10 overlapping rows are a small fraction, small
// enough that a worker's buffers stay in cache.
func chunkRows(rw int) int {
	return max(32, 65536/max(rw, 1))
}

// chunkLen is the length of one worker's buffer for a region rw wide in a
// band w wide: six maps of chunk+10 rows, six output rows, two product rows.
func chunkLen(w, rw int) int {
	return 6*(chunkRows(rw)+2*gaussRad)*rw + 6*rw + 2*w
}

// gaussRow correlates src with the 11-tap Gaussian: dst[j] = Σ g[t]·src[j+t].
// The kernel is symmetric, so taps t and 10−t share one multiplication.
func gaussRow(dst, src []float64) {
	g := &cst.gauss
	g0, g1, g2, g3, g4, g5 := g[0], g[1], g[2], g[3], g[4], g[5]
	src = src[:len(dst)+2*gaussRad]
	for j := range dst {
		s := src[j : j+11 : j+11]
		dst[j] = float64(g0*(s[0]+s[10])) + float64(g1*(s[1]+s[9])) + float64(g2*(s[2]+s[8])) + float64(g3*(s[3]+s[7])) + float64(g4*(s[4]+s[6])) + float64(g5*s[5])
	}
}

// gaussCol is gaussRow down the columns of 11 consecutive rows.
func gaussCol(dst []float64, rows *[11][]float64) {
	g := &cst.gauss
	g0, g1, g2, g3, g4, g5 := g[0], g[1], g[2], g[3], g[4], g[5]
	n := len(dst)
	r0, r1, r2, r3, r4, r5 := rows[0][:n], rows[1][:n], rows[2][:n], rows[3][:n], rows[4][:n], rows[5][:n]
	r6, r7, r8, r9, r10 := rows[6][:n], rows[7][:n], rows[8][:n], rows[9][:n], rows[10][:n]
	for j := range dst {
		dst[j] = float64(g0*(r0[j]+r10[j])) + float64(g1*(r1[j]+r9[j])) + float64(g2*(r2[j]+r8[j])) + float64(g3*(r3[j]+r7[j])) + float64(g4*(r4[j]+r6[j])) + float64(g5*r5[j])
	}
}

// box3Row sums the three samples around each region column: dst[j] =
// src[j+4] + src[j+5] + src[j+6] (centre column j+5).
func box3Row(dst, src []float64) {
	src = src[iwCrop : len(dst)+iwCrop+2]
	for j := range dst {
		s := src[j : j+3 : j+3]
		dst[j] = s[0] + s[1] + s[2]
	}
}

// chunkBufs are a worker's views of its buffer for one chunk.
type chunkBufs struct {
	g     [3][]float64 // Gaussian along x: x, x², x·y (rows of rw)
	b     [3][]float64 // 3-sums along x of the same
	out   [3][]float64 // one output row of the Gaussian along y
	sq, p []float64    // one input row of x², x·y
}

func newChunkBufs(buf []float64, w, rw, rows int) chunkBufs {
	var c chunkBufs
	take := func(n int) []float64 {
		p := buf[:n:n]
		buf = buf[n:]
		return p
	}
	for m := 0; m < 3; m++ {
		c.g[m] = take(rows * rw)
		c.b[m] = take(rows * rw)
		c.out[m] = take(rw)
	}
	c.sq, c.p = take(w), take(w)
	return c
}

// refStats computes the reference's statistics on the region of one scale:
// the Gaussian mean mu and variance vr (relu'd, as piq does) and, when box
// is set, the 3×3 mean bm and variance bv (relu'd). Each output slice is
// rw×rh.
func refStats(y []float64, w, h int, mu, vr, bm, bv []float64, box bool, threads int, work [][]float64) {
	rw, rh := w-2*gaussRad, h-2*gaussRad
	rows := chunkRows(rw)
	bw := cst.box
	parallel.Chunks(threads, rh, rows, func(worker, i0, i1 int) {
		n := i1 - i0 + 2*gaussRad
		c := newChunkBufs(work[worker], w, rw, n)
		for r := i0; r < i1+2*gaussRad; r++ {
			src := y[r*w : r*w+w]
			for j, v := range src {
				c.sq[j] = v * v
			}
			o := (r - i0) * rw
			gaussRow(c.g[0][o:o+rw], src)
			gaussRow(c.g[1][o:o+rw], c.sq)
			if box && r >= i0+iwCrop && r < i1+iwCrop+2 {
				box3Row(c.b[0][o:o+rw], src)
				box3Row(c.b[1][o:o+rw], c.sq)
			}
		}
		for i := i0; i < i1; i++ {
			var rs [2][11][]float64
			for t := 0; t < 11; t++ {
				o := (i - i0 + t) * rw
				rs[0][t], rs[1][t] = c.g[0][o:o+rw], c.g[1][o:o+rw]
			}
			gaussCol(c.out[0], &rs[0])
			gaussCol(c.out[1], &rs[1])
			o := i * rw
			m, e2 := c.out[0], c.out[1]
			for j := 0; j < rw; j++ {
				mu[o+j] = m[j]
				vr[o+j] = relu(e2[j] - float64(m[j]*m[j]))
			}
			if !box {
				continue
			}
			a := (i - i0 + iwCrop) * rw
			x0, x1, x2 := c.b[0][a:a+rw], c.b[0][a+rw:a+2*rw], c.b[0][a+2*rw:a+3*rw]
			q0, q1, q2 := c.b[1][a:a+rw], c.b[1][a+rw:a+2*rw], c.b[1][a+2*rw:a+3*rw]
			for j := 0; j < rw; j++ {
				mb := bw * (x0[j] + x1[j] + x2[j])
				bm[o+j] = mb
				bv[o+j] = relu(float64(bw*(q0[j]+q1[j]+q2[j])) - float64(mb*mb))
			}
		}
	})
}

// relu is torch's F.relu for the finite values met here.
func relu(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

// scoreScale computes one scale's row sums for the distorted band x against
// the prepared scale s: for k < 4, Σ cs·iw and Σ iw per region row (into
// num and den); for the last scale (no weights), Σ ssim per row (into num).
func scoreScale(s *scaleRef, x []float64, num, den []float64, threads int, work [][]float64) {
	w, rw, rh := s.w, s.rw, s.rh
	y := s.y
	rows := chunkRows(rw)
	weighted := s.ss != nil
	c1, c2 := cst.c1, cst.c2
	bw := cst.box
	nsq := sigmaNsq
	inv := 1 / cst.nsq2
	lam := s.lamScaled
	parallel.Chunks(threads, rh, rows, func(worker, i0, i1 int) {
		n := i1 - i0 + 2*gaussRad
		c := newChunkBufs(work[worker], w, rw, n)
		for r := i0; r < i1+2*gaussRad; r++ {
			src := x[r*w : r*w+w]
			ref := y[r*w : r*w+w]
			sq, p := c.sq[:w], c.p[:w]
			for j, v := range src {
				sq[j] = v * v
				p[j] = v * ref[j]
			}
			o := (r - i0) * rw
			gaussRow(c.g[0][o:o+rw], src)
			gaussRow(c.g[1][o:o+rw], sq)
			gaussRow(c.g[2][o:o+rw], p)
			if weighted && r >= i0+iwCrop && r < i1+iwCrop+2 {
				box3Row(c.b[0][o:o+rw], src)
				box3Row(c.b[1][o:o+rw], sq)
				box3Row(c.b[2][o:o+rw], p)
			}
		}
		for i := i0; i < i1; i++ {
			var rs [3][11][]float64
			for t := 0; t < 11; t++ {
				o := (i - i0 + t) * rw
				for m := 0; m < 3; m++ {
					rs[m][t] = c.g[m][o : o+rw]
				}
			}
			for m := 0; m < 3; m++ {
				gaussCol(c.out[m], &rs[m])
			}
			o := i * rw
			mx, ex2, exy := c.out[0][:rw], c.out[1][:rw], c.out[2][:rw]
			my, vy := s.mu[o:o+rw], s.vr[o:o+rw]
			if !weighted {
				// piq's last level: the full SSIM (luminance × contrast-structure).
				var sum float64
				for j := 0; j < rw; j++ {
					sxx := relu(ex2[j] - float64(mx[j]*mx[j]))
					sxy := exy[j] - float64(mx[j]*my[j])
					cs := (2*sxy + c2) / (sxx + vy[j] + c2)
					sum += float64(float64((2*float64(mx[j]*my[j])+c1)/(float64(mx[j]*mx[j])+float64(my[j]*my[j])+c1)) * cs)
				}
				num[i] = sum
				continue
			}
			a := (i - i0 + iwCrop) * rw
			x0, x1, x2 := c.b[0][a:a+rw], c.b[0][a+rw:a+2*rw], c.b[0][a+2*rw:a+3*rw]
			q0, q1, q2 := c.b[1][a:a+rw], c.b[1][a+rw:a+2*rw], c.b[1][a+2*rw:a+3*rw]
			p0, p1, p2 := c.b[2][a:a+rw], c.b[2][a+rw:a+2*rw], c.b[2][a+2*rw:a+3*rw]
			bmy, bvy, ss := s.bm[o:o+rw], s.bv[o:o+rw], s.ss[o:o+rw]
			var sumCS, sumIW float64
			for j := 0; j < rw; j++ {
				sxx := relu(ex2[j] - float64(mx[j]*mx[j]))
				sxy := exy[j] - float64(mx[j]*my[j])
				cs := (2*sxy + c2) / (sxx + vy[j] + c2)

				// _information_content: the 3×3 statistics, the gain g and
				// the distortion variance vv of the model x = g·y + v.
				bmx := bw * (x0[j] + x1[j] + x2[j])
				bxx := relu(float64(bw*(q0[j]+q1[j]+q2[j])) - float64(bmx*bmx))
				bxy := float64(bw*(p0[j]+p1[j]+p2[j])) - float64(bmx*bmy[j])
				byy := bvy[j]
				g := bxy / (byy + eps)
				vv := bxx - float64(g*bxy)
				if byy < eps {
					g, vv = 0, bxx
				}
				if bxx < eps {
					g, vv = 0, 0
				}
				iw := infoWeight((vv+float64((1+float64(g*g))*nsq))*ss[j], nsq*vv*inv, lam)
				sumCS += float64(cs * iw)
				sumIW += iw
			}
			num[i], den[i] = sumCS, sumIW
		}
	})
}

// infoWeight is piq's information content at one position,
//
//	Σ_k log2(1 + (q·λ_k + b)/σ²)   with q = (vv + (1+g²)σ)·ss, b = σ·vv,
//
// σ = sigma_nsq, zeroed below eps. lam holds λ_k/σ² and b is passed as
// b/σ². The sum of logarithms is computed as the logarithm of the product
// of the factors (one log instead of N; the two differ by a few units in the
// last place of the product, ~1e-15 absolute); if the product leaves the
// range where that holds, the logarithms are summed as piq does.
func infoWeight(q, b float64, lam []float64) float64 {
	c := 1 + b
	p := 1.0
	for _, l := range lam {
		p *= c + float64(q*l)
	}
	var iw float64
	if p > 0x1p-1000 && p < 0x1p1000 {
		iw = math.Log2(p)
	} else {
		for _, l := range lam {
			iw += math.Log2(c + float64(q*l))
		}
	}
	if iw < eps {
		return 0
	}
	return iw
}
