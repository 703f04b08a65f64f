package metrictest

import (
	"math"
	"math/rand/v2"

	"github.com/zenmetrics-go/zenmetrics"
)

// SyntheticPair returns a seeded, photo-like RGB8 reference of w×h pixels
// (smooth gradients, periodic texture, hard-edged shapes, fine noise) and a
// distorted version of it (partial blur, block-wise quantisation, a slight
// colour shift in places, noise). Neither image is flat or all zero, and
// the same arguments always give the same bytes.
func SyntheticPair(w, h int, seed int64) (ref, dist *zenmetrics.Image) {
	return Synthetic(w, h, seed, zenmetrics.RGB8)
}

// Synthetic is SyntheticPair in any pixel format. Gray formats use the
// luma of the colour image; formats with alpha get a seeded alpha pattern
// (smooth ramps, a fully transparent and a fully opaque region), the
// distorted image's alpha lightly perturbed; 16-bit formats get 16-bit
// precision (the low byte is not a copy of the high one).
func Synthetic(w, h int, seed int64, f zenmetrics.PixelFormat) (ref, dist *zenmetrics.Image) {
	if w <= 0 || h <= 0 || f.Channels() == 0 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	a, b := syntheticPlanes(w, h, rng)
	var alphaA, alphaB []float64
	if f.HasAlpha() {
		alphaA, alphaB = syntheticAlpha(w, h, rng)
	}
	return pack(w, h, f, a, alphaA), pack(w, h, f, b, alphaB)
}

type shape struct {
	x0, y0, x1, y1 float64
	circle         bool
	col            [3]float64
	opacity        float64
}

// syntheticPlanes returns reference and distorted colours in [0,1], three
// values per pixel.
func syntheticPlanes(w, h int, rng *rand.Rand) (ref, dist []float64) {
	n := w * h
	ref = make([]float64, 3*n)
	var grad [3][3]float64
	for c := range grad {
		grad[c] = [3]float64{0.2 + 0.6*rng.Float64(), 0.4 * (rng.Float64() - 0.5), 0.4 * (rng.Float64() - 0.5)}
	}
	type wave struct{ fx, fy, ph, amp float64 }
	var waves [3][4]wave
	for c := range waves {
		for i := range waves[c] {
			waves[c][i] = wave{
				fx:  (rng.Float64() - 0.5) * 0.6,
				fy:  (rng.Float64() - 0.5) * 0.6,
				ph:  rng.Float64() * 2 * math.Pi,
				amp: 0.02 + 0.05*rng.Float64(),
			}
		}
	}
	shapes := make([]shape, 12)
	for i := range shapes {
		cx, cy := rng.Float64()*float64(w), rng.Float64()*float64(h)
		rx, ry := (0.05+0.2*rng.Float64())*float64(w), (0.05+0.2*rng.Float64())*float64(h)
		shapes[i] = shape{x0: cx - rx, y0: cy - ry, x1: cx + rx, y1: cy + ry, circle: rng.IntN(2) == 0,
			col: [3]float64{rng.Float64(), rng.Float64(), rng.Float64()}, opacity: 0.3 + 0.7*rng.Float64()}
	}
	// sin(a+b) = sin a cos b + cos a sin b, with a depending on x only and
	// b on y only, so the waves cost two tables instead of a sine a pixel.
	var sx, cx [3][4][]float64
	var sy, cy [3][4][]float64
	for c := range waves {
		for i, wv := range waves[c] {
			sx[c][i], cx[c][i] = make([]float64, w), make([]float64, w)
			for x := 0; x < w; x++ {
				sx[c][i][x], cx[c][i][x] = math.Sincos(wv.fx*float64(x) + wv.ph)
			}
			sy[c][i], cy[c][i] = make([]float64, h), make([]float64, h)
			for y := 0; y < h; y++ {
				sy[c][i][y], cy[c][i][y] = math.Sincos(wv.fy * float64(y))
			}
		}
	}
	for y := 0; y < h; y++ {
		fy := float64(y) / float64(h)
		for x := 0; x < w; x++ {
			fx := float64(x) / float64(w)
			p := ref[3*(y*w+x) : 3*(y*w+x)+3]
			for c := 0; c < 3; c++ {
				v := grad[c][0] + grad[c][1]*fx + grad[c][2]*fy
				for i, wv := range waves[c] {
					v += wv.amp * (sx[c][i][x]*cy[c][i][y] + cx[c][i][x]*sy[c][i][y])
				}
				p[c] = v
			}
			for _, s := range shapes {
				if s.inside(float64(x), float64(y)) {
					for c := 0; c < 3; c++ {
						p[c] += s.opacity * (s.col[c] - p[c])
					}
				}
			}
			for c := 0; c < 3; c++ {
				p[c] = clamp01(p[c] + 0.03*(rng.Float64()-0.5))
			}
		}
	}
	// Distortion: mix with a 3×3 box blur, quantise 8×8 blocks coarsely in
	// a random subset of blocks, shift colour slightly, add noise.
	dist = make([]float64, 3*n)
	shift := [3]float64{0.02 * (rng.Float64() - 0.5), 0.02 * (rng.Float64() - 0.5), 0.02 * (rng.Float64() - 0.5)}
	bw := (w + 7) / 8
	quant := make([]bool, bw*((h+7)/8))
	for i := range quant {
		quant[i] = rng.IntN(4) == 0
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < 3; c++ {
				sum, cnt := 0.0, 0.0
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						xx, yy := x+dx, y+dy
						if xx >= 0 && xx < w && yy >= 0 && yy < h {
							sum += ref[3*(yy*w+xx)+c]
							cnt++
						}
					}
				}
				v := 0.5*ref[3*(y*w+x)+c] + 0.5*sum/cnt + shift[c]
				if quant[(y/8)*bw+x/8] {
					v = math.Round(v*12) / 12
				}
				dist[3*(y*w+x)+c] = clamp01(v + 0.02*(rng.Float64()-0.5))
			}
		}
	}
	return ref, dist
}

func (s shape) inside(x, y float64) bool {
	if x < s.x0 || x > s.x1 || y < s.y0 || y > s.y1 {
		return false
	}
	if !s.circle {
		return true
	}
	cx, cy := (s.x0+s.x1)/2, (s.y0+s.y1)/2
	dx, dy := (x-cx)/((s.x1-s.x0)/2), (y-cy)/((s.y1-s.y0)/2)
	return dx*dx+dy*dy <= 1
}

// syntheticAlpha returns alpha in [0,1] for the reference and a lightly
// perturbed copy for the distorted image.
func syntheticAlpha(w, h int, rng *rand.Rand) (ref, dist []float64) {
	ref = make([]float64, w*h)
	dist = make([]float64, w*h)
	ph := rng.Float64() * 2 * math.Pi
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			var a float64
			switch {
			case fx < 0.2:
				a = 0 // fully transparent band
			case fx > 0.8:
				a = 1 // fully opaque band
			default:
				a = 0.5 + 0.5*math.Sin(9*fx+7*fy+ph)
			}
			ref[y*w+x] = a
			dist[y*w+x] = clamp01(a + 0.05*(rng.Float64()-0.5))
		}
	}
	return ref, dist
}

func clamp01(v float64) float64 { return min(max(v, 0), 1) }

// pack quantises colours (and alpha) into an image of format f.
func pack(w, h int, f zenmetrics.PixelFormat, rgb, alpha []float64) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, f)
	ch := f.Channels()
	maxv := float64(f.MaxValue())
	put := func(o int, v float64) {
		q := int(math.Round(clamp01(v) * maxv))
		if f.BytesPerSample() == 2 {
			im.Pix[o] = byte(q >> 8)
			im.Pix[o+1] = byte(q)
		} else {
			im.Pix[o] = byte(q)
		}
	}
	bps := f.BytesPerSample()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			o := y*im.Stride + x*ch*bps
			p := rgb[3*i : 3*i+3]
			if f.IsGray() {
				put(o, 0.2126*p[0]+0.7152*p[1]+0.0722*p[2])
			} else {
				put(o, p[0])
				put(o+bps, p[1])
				put(o+2*bps, p[2])
			}
			if f.HasAlpha() {
				put(o+(ch-1)*bps, alpha[i])
			}
		}
	}
	return im
}
