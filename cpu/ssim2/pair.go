package ssim2

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
)

// One pair in one pass. Prepare keeps nine float32 planes per scale of the
// reference so that any number of distorted images can be scored against
// it; a pair that is scored once does not need them. ScorePair then runs
// both images through each scale together, eight rows at a time: both
// images' XYB rows into small rings, and per channel the five blurs (the
// reference's mu and sigma, the distorted image's, and the product)
// streamed side by side with the error terms right behind them. No
// full-size plane is written at scale 0 and only the next scale's linear
// planes at the others, so a 1 MP pair touches about a fifth of the memory
// of Prepare and Score (the rest of a one-shot run's time went to faulting
// in fresh pages). Every value is computed by the same kernels in the same
// order as Prepare and Score compute it on the fast path, so the score is
// the same bits (pair_test.go).

// pairStreams reports whether ScorePair streams ref and dist together:
// on the fast path, on one goroutine (the streams of a scale run one after
// the other), and for a reference without alpha (one background).
func pairStreams(ref *zenmetrics.Image, cfg Config) bool {
	return useSIMD && fuseSIMD && cfg.threads() == 1 && !ref.Format.HasAlpha()
}

// ScorePair scores dist against ref as Score does, without keeping
// anything for another distorted image: in one streamed pass per scale
// where it can (on the fast path, one thread, a reference without alpha),
// else through Prepare and Score. The scores are identical either way.
func ScorePair(ctx context.Context, ref, dist *zenmetrics.Image, cfg Config) (score float64, err error) {
	defer zenmetrics.Recover(&err)
	if err := checkImage(ref); err != nil {
		return 0, err
	}
	if err := dist.Validate(); err != nil {
		return 0, err
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !pairStreams(ref, cfg) {
		r, err := PrepareContext(ctx, ref, cfg)
		if err != nil {
			return 0, err
		}
		defer r.Release()
		return r.ScoreContext(ctx, dist)
	}
	return scorePair(ctx, ref, dist)
}

// pairBufs are scorePair's buffers.
type pairBufs struct {
	// lin[i][j]: image i's (0 reference, 1 distorted) linear planes of
	// scales 1 and up, alternating between j = 0 and 1 as in scratch.
	lin     [2][2][3][]float32
	streams []float32       // three blurStreams of five blurs
	rings   [2][3][]float32 // each image's XYB rows, ringRows per channel
	vr      []float32       // one row of the reference's sigma² − mu²
	work    []float32       // the blurs' work buffer (simdWorkLen)
	rowbuf  []float32       // two rows of linear RGB
	rows    []float64       // per channel, six sums per row
}

func scorePair(ctx context.Context, ref, dist *zenmetrics.Image) (float64, error) {
	w, h := ref.Width, ref.Height
	dims := scaleDims(w, h)
	n1, n2 := linSizes(w, h)
	var pb pairBufs
	big := make([]float32, 6*(n1+n2))
	for i := range pb.lin {
		for c := 0; c < 3; c++ {
			pb.lin[i][0][c], big = big[:n1:n1], big[n1:]
			pb.lin[i][1][c], big = big[:n2:n2], big[n2:]
		}
	}
	sl := streamLen(w)
	buf := make([]float32, 3*maxBlurs*sl+6*ringRows*w+w)
	pb.streams, buf = buf[:3*maxBlurs*sl], buf[3*maxBlurs*sl:]
	for i := range pb.rings {
		for c := 0; c < 3; c++ {
			pb.rings[i][c], buf = buf[:ringRows*w], buf[ringRows*w:]
		}
	}
	pb.vr = buf
	pb.work = make([]float32, simdWorkLen(w))
	pb.rowbuf = make([]float32, 6*w)
	pb.rows = make([]float64, 3*6*h)

	blend := dist.Format.HasAlpha() && !opaque(dist)
	var norms [numScales][3][6]float64
	cur := 0
	for k, d := range dims {
		wk, hk := d[0], d[1]
		if k >= 2 {
			pw, ph := dims[k-1][0], dims[k-1][1]
			for i := range pb.lin {
				downsample2(&pb.lin[i][cur], &pb.lin[i][1-cur], pw, ph, 0, hk)
			}
			cur = 1 - cur
		}
		var src pairSource
		if k == 0 {
			src = func(y0, y1 int) { pb.firstRows(ref, dist, blend, dims[1][0], y0, y1) }
		} else {
			src = func(y0, y1 int) { pb.linRows(cur, wk, y0, y1) }
		}
		if err := pb.scale(ctx, wk, hk, src); err != nil {
			return 0, err
		}
		for c := 0; c < 3; c++ {
			norms[k][c] = planeNorms(pb.rows[6*hk*c:6*hk*(c+1)], hk, wk*hk)
		}
	}
	return finalScore(norms[:len(dims)]), nil
}

// pairSource fills both images' XYB rings with rows [y0, y1) of a scale.
type pairSource func(y0, y1 int)

// ringRow is row y of image i's channel c in its ring (w wide).
func (pb *pairBufs) ringRow(i, c, y, w int) []float32 {
	o := (y % ringRows) * w
	return pb.rings[i][c][o : o+w : o+w]
}

// firstRows converts rows [y0, y1) of both images (y0 even) to positive
// XYB in the rings and their 2×2 means into the scale-1 linear planes, as
// firstScale does: the reference as it is, the distorted image blended
// on the grey 0.5 when it has real alpha (the one background of a
// reference without alpha).
func (pb *pairBufs) firstRows(ref, dist *zenmetrics.Image, blend bool, w1, y0, y1 int) {
	w, h := ref.Width, ref.Height
	buf := pb.rowbuf
	a := [3][]float32{buf[0:w], buf[w : 2*w], buf[2*w : 3*w]}
	b := [3][]float32{buf[3*w : 4*w], buf[4*w : 5*w], buf[5*w : 6*w]}
	for i, im := range [2]*zenmetrics.Image{ref, dist} {
		bl := blend && i == 1
		for oy := y0 / 2; 2*oy < y1; oy++ {
			ya := 2 * oy
			toLinearRow(im, ya, bl, 0.5, a[0], a[1], a[2])
			xybRow(true, a[0], a[1], a[2], pb.ringRow(i, 0, ya, w), pb.ringRow(i, 1, ya, w), pb.ringRow(i, 2, ya, w))
			second := a
			if yb := ya + 1; yb < h {
				toLinearRow(im, yb, bl, 0.5, b[0], b[1], b[2])
				xybRow(true, b[0], b[1], b[2], pb.ringRow(i, 0, yb, w), pb.ringRow(i, 1, yb, w), pb.ringRow(i, 2, yb, w))
				second = b
			}
			for c := 0; c < 3; c++ {
				downsample2Row(a[c], second[c], pb.lin[i][0][c][oy*w1:(oy+1)*w1])
			}
		}
	}
}

// linRows converts rows [y0, y1) of both images' linear planes lin[·][cur]
// (w wide) to positive XYB in the rings.
func (pb *pairBufs) linRows(cur, w, y0, y1 int) {
	for i := range pb.lin {
		l := &pb.lin[i][cur]
		for y := y0; y < y1; y++ {
			o := y * w
			xybRow(true, l[0][o:o+w], l[1][o:o+w], l[2][o:o+w], pb.ringRow(i, 0, y, w), pb.ringRow(i, 1, y, w), pb.ringRow(i, 2, y, w))
		}
	}
}

// scale streams one w×h scale: eight rows of both images from src at a
// time, then per channel the five blurs and the error terms of every row
// they complete, into pb.rows (channel c's sums at 6·h·c).
func (pb *pairBufs) scale(ctx context.Context, w, h int, src pairSource) error {
	sl := streamLen(w)
	var bs [3]blurStream
	for c := range bs {
		bs[c].init(maxBlurs, w, h, pb.streams[c*maxBlurs*sl:(c+1)*maxBlurs*sl], pb.work)
	}
	vr := pb.vr[:w:w]
	for y0 := 0; y0 < h; y0 += 8 {
		if err := ctx.Err(); err != nil {
			return err
		}
		y1 := min(y0+8, h)
		src(y0, y1)
		slot := (y0 % ringRows) * w
		n := (y1 - y0) * w
		for c := 0; c < 3; c++ {
			ring1, ring2 := pb.rings[0][c], pb.rings[1][c]
			rows := pb.rows[6*h*c : 6*h*(c+1)]
			im1, im2 := ring1[slot:slot+n], ring2[slot:slot+n]
			// Prepare's two blurs (fusedStats), then fusedTerms's three.
			in := [maxBlurs][2][]float32{{im1, nil}, {im1, im1}, {im2, nil}, {im2, im2}, {im1, im2}}
			bs[c].group(y0, in[:], func(y int, out *[maxBlurs][]float32) {
				m1, s11 := out[0][:w:w], out[1][:w:w]
				for x := range vr {
					vr[x] = s11[x] - float32(m1[x]*m1[x])
				}
				ro := (y % ringRows) * w
				simdTerms.Row(rows[6*y:6*y+6], ring1[ro:ro+w], m1, vr,
					ring2[ro:ro+w], out[2][:w], out[3][:w], out[4][:w])
			})
		}
	}
	return nil
}
