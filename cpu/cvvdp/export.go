package cvvdp

import (
	"context"
	"fmt"
	"sync"

	"github.com/zenmetrics-go/zenmetrics"
)

// What an accelerator implementation (gpu/webgpu/cvvdp) takes from this
// package so that it computes this package's score rather than a copy of
// it that could drift: the pyramid's layout, the castleCSF rows of every
// band, the display's sample tables and colour matrix, the float32
// constants (rounded here, once, as the CPU path uses them) and the final
// pooling from per-band sums. The per-pixel work is the accelerator's;
// everything below a band's sums is shared.

// Plan is the pyramid of a w×h image on one display model.
type Plan struct {
	Display Display
	// PPD is the display's pixels per degree.
	PPD float64
	// Levels is the number of bands, the base band (the last) included.
	Levels int
	// W and H are each level's size; level 0 is the image.
	W, H []int
	// Mul is each band's contrast factor (get_band: 2 between the first
	// and the base band, 1 for those two).
	Mul []float32
	// CSF[b][c] is log10 S along the table's 32 luminances for band b's
	// frequency and channel c (the base band's at 0.1 cycles/degree):
	// the row csfInterp then interpolates per pixel.
	CSF [][nCh][lutN]float32
	// Photometry is the display model's encoding as the unpacking needs it.
	Photometry Photometry
	// HeatW[b] is band b's channel weights in the distortion map
	// (heatWeights: channel weight × image_int, × baseband_weight on the
	// base band).
	HeatW [][nCh]float32

	ph *photometry
}

// Photometry is how display-encoded samples become DKL: each sample
// through the display's table (LUT), then, for HLG, the per-pixel OOTF,
// then ToDKL (for colour; grey puts the luminance in all three channels).
type Photometry struct {
	ToDKL [3][3]float32
	// HLG is set for BT.2020-HLG displays: the tables then hold the
	// inverse OETF and each pixel goes through hlgPixel's OOTF:
	// k = Y_s^Gamma1 (Y_s = Luma·rgb), c·k·Span + Black + Refl, with
	// c·k·Expo clamped to [0, 1] first when Expo ≠ 1.
	HLG                     bool
	Gamma1                  float32
	Luma                    [3]float32
	Span, Black, Refl, Expo float32
}

// photometries caches newPhotometry per display name, so that the sample
// tables (a 16-bit one takes 65536 powers) are built once per process.
var photometries sync.Map // string → *photometry

// NewPlan returns the plan of a w×h image on the named display model
// ("" is DefaultDisplay). Sizes below MinSide are a TooSmallError, an
// unknown display ErrBadInput.
func NewPlan(w, h int, display string) (*Plan, error) {
	disp, err := LookupDisplay(display)
	if err != nil {
		return nil, err
	}
	if w < MinSide || h < MinSide {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.CVVDP, Width: w, Height: h, MinWidth: MinSide, MinHeight: MinSide}
	}
	var ph *photometry
	if v, ok := photometries.Load(disp.Name); ok {
		ph = v.(*photometry)
	} else {
		if ph, err = newPhotometry(disp); err != nil {
			return nil, err
		}
		v, _ := photometries.LoadOrStore(disp.Name, ph)
		ph = v.(*photometry)
	}
	ppd := disp.PixelsPerDegree()
	lay, ok := newLayout(w, h, ppd)
	if !ok {
		return nil, fmt.Errorf("%w: cvvdp: %dx%d is too small for a pyramid", zenmetrics.ErrBadInput, w, h)
	}
	p := &Plan{Display: disp, PPD: ppd, Levels: lay.n, W: lay.w, H: lay.h, ph: ph,
		Mul: make([]float32, lay.n), CSF: make([][nCh][lutN]float32, lay.n), HeatW: make([][nCh]float32, lay.n)}
	r := Reference{lay: lay}
	for b := 0; b < lay.n; b++ {
		p.Mul[b] = lay.bandMul(b)
		p.HeatW[b] = r.heatWeights(b)
		rho := lay.freqs[b]
		if b == lay.n-1 {
			rho = basebandRho
		}
		for c := 0; c < nCh; c++ {
			p.CSF[b][c] = csfRow(c, rho)
		}
	}
	p.Photometry = Photometry{ToDKL: ph.toDKL, HLG: ph.eotf == "HLG"}
	if p.Photometry.HLG {
		p.Photometry.Gamma1 = float32(ph.hlgGam - 1)
		p.Photometry.Luma = ph.hlgLuma
		p.Photometry.Span = float32(ph.peak - ph.black)
		p.Photometry.Black, p.Photometry.Refl = float32(ph.black), float32(ph.refl)
		p.Photometry.Expo = float32(ph.expo)
	}
	return p, nil
}

// LUT is the display's table for code values 0..maxv (255 or 65535): the
// linear light of each, or the inverse OETF for HLG. Shared: do not
// modify.
func (p *Plan) LUT(maxv int) []float32 {
	if maxv == 65535 {
		return p.ph.lut16()
	}
	return p.ph.lut8()
}

// BandPixels is the number of pixels of band b (the mean's divisor).
func (p *Plan) BandPixels(b int) int { return p.W[b] * p.H[b] }

// JOD pools per-band sums into the score: sums[b][c] is band b's sum over
// its pixels of safe_pow(D, 2) for channel c (D the masked, clamped
// difference; on the base band |T − R|·S), added in whatever order the
// caller likes in float64. This is the CPU path's poolBand and poolJOD.
func (p *Plan) JOD(sums [][nCh]float64) float64 {
	q := make(frameQ, p.Levels)
	for b := range q {
		n := float32(p.BandPixels(b))
		for c := 0; c < nCh; c++ {
			mean := float32(sums[b][c]) / n
			q[b][c] = pow32(mean+f32Eps, 0.5) - pow32(f32Eps, 0.5)
		}
	}
	return poolJOD([]frameQ{q}, p.Levels)
}

// Constants are the float32 constants of the per-pixel work, as this
// package uses them.
type Constants struct {
	// Eps is safe_pow's ε; MaskP the masking exponent p and EpsP ε^p.
	Eps, MaskP, EpsP float32
	// MaskQ and EpsQ: the masker's exponent q per channel and ε^q.
	MaskQ, EpsQ [nCh]float32
	// Xcm[j][c] weighs channel j's masker in channel c's masking signal.
	Xcm [nCh][nCh]float32
	// ChGain is the per-channel gain of the mult-mutual model.
	ChGain [nCh]float32
	// MaskCMul (10^mask_c) scales the masking signal, DMax (10^d_max)
	// is the soft clamp of the differences, SensCorr the CSF correction.
	MaskCMul, DMax, SensCorr float32
	// PU is the 13-tap phase-uncertainty Gaussian; bands are blurred only
	// when both sides exceed PUPad.
	PU    [2*puRadius + 1]float32
	PUPad int
	// ContrastMax clamps the Weber contrast, LBkgMin the background.
	ContrastMax, LBkgMin float32
	// LogL0 and LogL1 are the CSF table's first and last log10
	// luminances (csfInterp's uniform axis).
	LogL0, LogL1 float32
	// Reduce and Expand are the pyramid's taps: [¼−a/2, ¼, a] and twice
	// those.
	Reduce, Expand [3]float32
	// The distortion map: met2jod's constants (jod_a, jod_exp, the
	// linear segment's slope below MetQt). heatPixel's ε^4 and ε^¼ are
	// not here: a kernel computes them with its own pow, so that they
	// cancel the terms they are subtracted from exactly.
	JodA, JodExp, JodLin, MetQt float32
}

// KernelConstants returns the constants.
func KernelConstants() Constants {
	c := Constants{Eps: f32Eps, MaskP: f32MaskP, EpsP: f32EpsP, MaskCMul: f32MaskCMul, DMax: f32DMax,
		SensCorr: f32SensCorr, PU: puKernel, PUPad: puPadSize, ContrastMax: contrastMax, LBkgMin: lBkgMin,
		LogL0: csfT.logL[0], LogL1: csfT.logL[lutN-1],
		Reduce: [3]float32{kr0, kr1, kr2}, Expand: [3]float32{ke0, ke1, ke2},
		JodA: float32(pJodA), JodExp: float32(pJodExp), MetQt: metQt}
	c.JodLin = c.JodA * pow32(metQt, c.JodExp-1)
	for j := 0; j < nCh; j++ {
		c.MaskQ[j], c.EpsQ[j], c.ChGain[j] = f32MaskQ[j], f32EpsQ[j], chGain[j]
		for k := 0; k < nCh; k++ {
			c.Xcm[j][k] = xcm[j][k]
		}
	}
	return c
}

// WorstLevels is the level sizes of the deepest pyramid a w×h image can
// have on any display model (newLayout at a very high pixels per degree):
// a display with fewer bands lacks only the smallest of these levels, so
// memory sized from them bounds every display's. ok is false below
// MinSide.
func WorstLevels(w, h int) (ws, hs []int, ok bool) {
	if w < MinSide || h < MinSide {
		return nil, nil, false
	}
	l, ok := estimateLayout(w, h)
	if !ok {
		return nil, nil, false
	}
	return l.w, l.h, true
}

// Heatmap rebuilds pycvvdp's raw heatmap from the bands' distortion-map
// values (bands[b]: W[b]×H[b] values of heatPixel, as Score computes them
// for its map) the way Score does: from the base band up, each level the
// coarser one expanded plus its own values, then 1 − met2jod(v)/10. It
// returns W[0]×H[0] values; bands is not modified.
func (p *Plan) Heatmap(bands [][]float32, threads int) []float32 {
	threads = max(1, threads)
	last := p.Levels - 1
	w, h := p.W[0], p.H[0]
	cur := bands[last]
	cw, ch := p.W[last], p.H[last]
	var tmp []float32
	if last > 0 {
		tmp = make([]float32, h*half(w))
	}
	for i := last - 1; i >= 0; i-- {
		dst := make([]float32, p.W[i]*p.H[i])
		expand(dst, cur, tmp, cw, ch, p.W[i], p.H[i], threads)
		for k, v := range bands[i] {
			dst[k] += v
		}
		cur, cw, ch = dst, p.W[i], p.H[i]
	}
	out := make([]float32, w*h)
	for k, v := range cur {
		out[k] = 1 - met2jod(v)/10
	}
	return out
}

// FastMath is what this package's float32 powers, logarithms and
// exponentials (fastmath.go) are computed from, so that an accelerator
// can evaluate them the same way, in float64 with the same tables and the
// same polynomial order, and round to the same float32 as this package:
// a correctly rounded pow of its own would still differ from these in the
// rare cases where they are one ulp off.
type FastMath struct {
	// LogInv[j] and LogC[j] are 1/c and log2(c), c = 1 + (j + ½)/128.
	LogInv, LogC [128]float64
	// Exp2T[j] is 2^(j/128).
	Exp2T [128]float64
	// Log2Of10 is log2(10) as exp10f and log10fFast use it.
	Log2Of10 float64
}

// FastMathTables returns the tables and constants of fastmath.go.
func FastMathTables() FastMath {
	return FastMath{LogInv: logInv, LogC: logC, Exp2T: exp2T, Log2Of10: log2Of10}
}

// BandSums scores dist against the reference as ScoreContext does and
// returns, per band, each channel's sum over the band's pixels of
// safe_pow(D, 2), added as Plan.JOD's callers must add them (each row left
// to right, the rows top to bottom, in float64): what an accelerator's
// tests compare its own sums with, bit for bit, before the pooling hides
// differences below float32's resolution.
func (r *Reference) BandSums(ctx context.Context, dist *zenmetrics.Image) (sums [][nCh]float64, err error) {
	defer zenmetrics.Recover(&err)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	if err := dist.Validate(); err != nil {
		return nil, err
	}
	if dist.Width != r.w || dist.Height != r.h {
		return nil, &zenmetrics.SizeMismatchError{RefWidth: r.w, RefHeight: r.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	sc := newScratch(&r.lay, r.threads, false)
	r.frameToPyramid(dist, sc)
	n := r.lay.n
	sums = make([][nCh]float64, n)
	for b := 0; b < n; b++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if b == n-1 {
			r.scoreBaseBand(b, sc)
		} else {
			r.scoreBand(b, sc)
		}
		for y := 0; y < r.lay.h[b]; y++ {
			for c := 0; c < nCh; c++ {
				sums[b][c] += sc.acc[nCh*y+c]
			}
		}
	}
	return sums, nil
}
