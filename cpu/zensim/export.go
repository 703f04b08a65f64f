package zensim

// Hooks for other backends (gpu/webgpu/zensim): the geometry, the tables
// and constants, and the pooling of raw sums into a score, so that a
// backend which computes the per-pixel values itself shares everything
// else with this package instead of transcribing it a second time.

// StripRows is the height of zensim's vertical-blur strips (output rows):
// the vertical running sums restart at every strip, so a backend that
// reproduces this package's values must restart them at the same rows.
const StripRows = stripInner

// BlurRadius is the radius of the 11-tap box blur.
const BlurRadius = blurRadius

// ChunkRows is the XYB conversion's chunk: which pixels of an opaque 8-bit
// image take the vector cube root depends on it (see toXYB).
const ChunkRows = chunkRows

// NumScales is the most scales zensim compares.
const NumScales = numScales

// Feature modes per channel and scale (ChannelMode).
const (
	ModeNone = int(modeNone) // nothing computed
	ModeMSE  = int(modeMSE)  // MSE only
	ModeEdge = int(modeEdge) // edge, HF and MSE (local means only)
	ModeFull = int(modeFull) // everything
)

// ChannelMode is which features channel c (0 X, 1 Y, 2 B) needs at scale
// s with the default weights.
func ChannelMode(s, c int) int { return int(modes[s][c]) }

// PaddedWidth is the plane width of a w-pixel-wide image (see paddedWidth).
func PaddedWidth(w int) int { return paddedWidth(w) }

// ScaleSizes lists the plane width and height of every scale used for a
// w×h image (at most NumScales; none below MinSize).
func ScaleSizes(w, h int) [][2]int {
	var out [][2]int
	for _, d := range scaleDims(w, h) {
		out = append(out, [2]int{d.w, d.h})
	}
	return out
}

// Tables returns the 8-bit and 16-bit sRGB → linear tables and zensim's
// 4096-entry alpha background table (shared; do not modify).
func Tables() (lut8 []float32, lut16 []float32, bg []float32) {
	return srgb8ToLinear[:], srgb16ToLinear(), alphaBackground()
}

// OpsinConstants are the opsin matrix row by row (m00..m22), the bias kB0
// and the absorbance bias −cbrt(kB0), in float32 as the conversion uses
// them.
func OpsinConstants() [11]float32 {
	return [11]float32{kM00, kM01, kM02, kM10, kM11, kM12, kM20, kM21, kM22, kB0, absorbanceBias}
}

// Sums are one channel's raw sums over one scale's pixels (features this
// channel's mode does not compute are 0).
type Sums struct {
	SSIM, SSIM2, SSIM4, SSIM8 float64
	Art, Art2, Art4, Art8     float64
	Det, Det2, Det4, Det8     float64
	MSE                       float64
	HFSqSrc, HFSqDst          float64
	HFAbsSrc, HFAbsDst        float64
	SSIMMax, ArtMax, DetMax   float32
}

// Finish pools per-scale, per-channel sums of a w×h image (one entry per
// scale of ScaleSizes) into the result, exactly as ScoreDetail pools its
// own sums.
func Finish(w, h int, sums [][3]Sums) *Result {
	dims := scaleDims(w, h)
	stats := make([]scaleStats, len(sums))
	for s := range sums {
		n := float64(dims[s].w * dims[s].h)
		for c := 0; c < 3; c++ {
			v := &sums[s][c]
			a := acc{
				ssimD: v.SSIM, ssimD2: v.SSIM2, ssimD4: v.SSIM4, ssimD8: v.SSIM8,
				art: v.Art, art2: v.Art2, art4: v.Art4, art8: v.Art8,
				det: v.Det, det2: v.Det2, det4: v.Det4, det8: v.Det8,
				mse: v.MSE, hfSqSrc: v.HFSqSrc, hfSqDst: v.HFSqDst,
				hfAbsSrc: v.HFAbsSrc, hfAbsDst: v.HFAbsDst,
				ssimMax: v.SSIMMax, artMax: v.ArtMax, detMax: v.DetMax,
			}
			stats[s].basic[c], stats[s].peak[c] = finalize(&a, 1/n)
		}
	}
	return combine(stats)
}

// Identical is the result for identical images (score 100).
func Identical() *Result { return &Result{Score: 100, Features: make([]float64, numWeights)} }
