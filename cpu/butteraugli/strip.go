package butteraugli

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zenmetrics-go/zenmetrics"
)

// Butteraugli in horizontal strips, for images whose working set does not
// fit the memory budget at once (the CPU backend's fallback; the GPU has
// its own in gpu/webgpu/butteraugli, whose analysis this follows).
//
// Every filter of Butteraugli is an FIR: per resolution level the chain is
// the opsin blur (kernOpsin.off = 2 rows) → LF blur (16) → MF blur (7) →
// UHF blur (3) → masking blur (6) → fuzzy erosion (3) → Malta lines (4),
// at most R = 41 rows. The half-resolution level doubles that and adds one
// row of its 2×2 subsampling and one of the upsampling that combines it:
// a halo of 2R + 2 = 84 rows. Crops start on even rows, so the half
// level's rows are the full image's. A blur cuts its kernel at a crop edge
// exactly as at an image edge, and no value within the interior of a strip
// (at least 84 rows from a crop edge that is not an image edge) reads one
// that did: the interior of every strip's map is bit-identical to the full
// image's map. Its maximum is then the full image's, and the power sums of
// the norms, summed per row in x order and over rows in row order as
// distanceP does, are bit-identical too (TestStripsEqualFull checks it).
//
// The reference is not prepared once: each Score compares every strip's
// crops afresh, so only one strip's working set is live (about 200 B/px of
// a crop) beside the two images. That is roughly twice the time of a full
// comparison, the price of scoring an image that would not fit otherwise.

// erodeReach and maltaReach are the rows the fuzzy erosion and the Malta
// filters look away (3 and 4: a 9-tap line).
const (
	erodeReach = 3
	maltaReach = 4
)

// StripHalo is the context rows each side of a strip's interior.
func StripHalo() int {
	r := kernOpsin.off + kernLF.off + kernHF.off + kernUHF.off + kernMask.off + erodeReach + maltaReach
	return (2*r + 2 + 1) &^ 1
}

// StripBytes is the heap one strip of band interior rows of a w×h image
// takes while it is compared (EstimateBytes of its crop).
func StripBytes(w, h, band int) int64 {
	return EstimateBytes(w, min(h, band+2*StripHalo()))
}

// StripBand is the largest even band of interior rows whose strip fits in
// budget bytes, or 0 when not even a 2-row band does.
func StripBand(w, h int, budget int64) int {
	halo := StripHalo()
	perRow := EstimateBytes(w, 2) - EstimateBytes(w, 1)
	if w <= 0 || h <= 0 || perRow <= 0 {
		return 0
	}
	rows := (budget - (1 << 20)) / perRow // EstimateBytes adds 1 MiB once
	band := int(min(rows-int64(2*halo), int64(h))) &^ 1
	if band < 2 {
		return 0
	}
	return band
}

// CompareStrips compares dist with ref in strips of band interior rows
// (even, ≥ 2; a band that covers the image compares it whole). The result
// equals Compare's bit for bit (see above).
func CompareStrips(ctx context.Context, ref, dist *zenmetrics.Image, cfg Config, band int) (res Result, err error) {
	defer zenmetrics.Recover(&err)
	if err := checkConfig(&cfg); err != nil {
		return Result{}, err
	}
	if err := ref.Validate(); err != nil {
		return Result{}, err
	}
	if err := dist.Validate(); err != nil {
		return Result{}, err
	}
	if err := zenmetrics.CheckSameSize(ref, dist); err != nil {
		return Result{}, err
	}
	if band < 2 || band%2 != 0 {
		return Result{}, fmt.Errorf("butteraugli: strip band %d is not an even number of rows ≥ 2", band)
	}
	w, h := ref.Width, ref.Height
	halo := StripHalo()
	if band+2*halo >= h || w < minSize || h < minSize {
		return Compare(ref, dist, cfg)
	}
	crop := Config{Threads: cfg.Threads, IntensityTarget: cfg.IntensityTarget, DistMap: true}
	var dm []float32
	if cfg.DistMap {
		dm = make([]float32, w*h)
	}
	var m float32
	var tot3, totP [3]float64
	for y0 := 0; y0 < h; y0 += band {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		y1 := min(y0+band, h)
		c0, c1 := max(0, y0-halo), min(h, y1+halo)
		r, err := Compare(rows(ref, c0, c1), rows(dist, c0, c1), crop)
		if err != nil {
			return Result{}, err
		}
		for y := y0; y < y1; y++ {
			row := r.DistMap[(y-c0)*w : (y-c0+1)*w]
			for _, v := range row {
				m = max(m, v)
			}
			add3(&tot3, rowPowerSums(row, 3))
			if cfg.PNorm > 0 {
				add3(&totP, rowPowerSums(row, cfg.PNorm))
			}
			if dm != nil {
				copy(dm[y*w:], row)
			}
		}
	}
	res = Result{Width: w, Height: h, Max: float64(m), PNorm3: finishDistanceP(tot3, w*h, 3), DistMap: dm}
	if cfg.PNorm > 0 {
		res.PNorm = finishDistanceP(totP, w*h, cfg.PNorm)
	}
	return res, nil
}

// rows is rows [c0, c1) of im, sharing its pixels.
func rows(im *zenmetrics.Image, c0, c1 int) *zenmetrics.Image {
	bpp := im.Format.BytesPerPixel()
	return &zenmetrics.Image{Width: im.Width, Height: c1 - c0, Format: im.Format, Stride: im.Stride,
		Pix: im.Pix[c0*im.Stride : (c1-1)*im.Stride+im.Width*bpp]}
}

func add3(t *[3]float64, s [3]float64) {
	t[0] += s[0]
	t[1] += s[1]
	t[2] += s[2]
}

// StripReference is a reference scored in strips: it holds the image only
// (the crops are prepared afresh by every Score, see above).
type StripReference struct {
	ref  atomic.Pointer[zenmetrics.Image] // nil once released
	cfg  Config
	band int
}

// PrepareStrips returns a reference that scores in strips of band rows;
// it copies nothing (ref must stay unchanged while it is used).
func PrepareStrips(ref *zenmetrics.Image, cfg Config, band int) (*StripReference, error) {
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if ref.Width < minSize || ref.Height < minSize {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.Butteraugli, Width: ref.Width, Height: ref.Height,
			MinWidth: minSize, MinHeight: minSize}
	}
	s := &StripReference{cfg: cfg, band: band}
	s.ref.Store(ref)
	return s, nil
}

// Score compares dist with the reference strip by strip.
func (s *StripReference) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	ref := s.ref.Load()
	if ref == nil {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	res, err := CompareStrips(ctx, ref, dist, s.cfg, s.band)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return toScore(res, s.cfg), nil
}

// Release drops the reference image.
func (s *StripReference) Release() { s.ref.Store(nil) }

// Band is the interior rows of each strip.
func (s *StripReference) Band() int { return s.band }
