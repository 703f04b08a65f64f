// Package cvvdpsynth builds the synthetic image pairs of
// refvectors/cvvdp/pycvvdp_synth_goldens.json (pycvvdp 0.5.4, standard_4k,
// predict(dist, ref, dim_order="HWC") on uint8 arrays), so that the CPU
// reference and the GPU kernels are held to the same goldens. The
// constructions are described in imazen/zenmetrics,
// scripts/cvvdp_goldens/bench_12mp_cuda.py (commit cd928c3b); the formulas
// below are written from that description.
package cvvdpsynth

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/zenmetrics-go/zenmetrics"
)

// Goldens is the fixture file's content.
type Goldens struct {
	Version  string             `json:"pycvvdp_version"`
	Display  string             `json:"display_name"`
	PPD      float64            `json:"pix_per_deg"`
	Fixtures map[string]Fixture `json:"fixtures"`
}

// Fixture is one pair: its size (height, width), how it is built and
// pycvvdp's JOD for it.
type Fixture struct {
	Shape        [2]int  `json:"shape_hw"`
	Construction string  `json:"construction"`
	JOD          float64 `json:"jod"`
}

// Load reads the fixture file at path.
func Load(path string) (*Goldens, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g Goldens
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &g, nil
}

// Build makes the pair of a fixture; ok is false for an unknown
// construction.
func (f Fixture) Build() (ref, dist *zenmetrics.Image, ok bool) {
	h, w := f.Shape[0], f.Shape[1]
	switch f.Construction {
	case "synth_pair_odd_dim":
		r := oddRef(w, h)
		return r, offsetDist(r), true
	case "synth_pair_256_blur3x1":
		r := baseRef(w, h)
		return r, blurDist(r, 1, 0), true
	case "synth_pair_256_blur1x3":
		r := baseRef(w, h)
		return r, blurDist(r, 0, 1), true
	case "synth_pair_12mp", "synth_pair_128_offset", "synth_pair_1024_offset",
		"synth_pair_1280x720_offset", "synth_pair_720x1280_offset", "synth_pair_11x19_offset":
		r := baseRef(w, h)
		return r, offsetDist(r), true
	case "synth_pair_256_chroma_shift", "synth_pair_128_chroma_shift", "synth_pair_1024_chroma_shift":
		r := baseRef(w, h)
		return r, chromaDist(r), true
	case "synth_pair_256_noise", "synth_pair_1024_noise":
		r := baseRef(w, h)
		return r, noiseDist(r), true
	}
	return nil, nil, false
}

// baseRef is the common reference: R = (17x + 5y) mod 251 + 40,
// G = (11x + 13y) mod 247 + 40, B = (7x + 19y) mod 241 + 40, each sum
// taken in uint8 (numpy adds 40 to a uint8 array, so values past 255
// wrap).
func baseRef(w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*im.Stride + 3*x
			im.Pix[o] = uint8((17*x+5*y)%251) + 40
			im.Pix[o+1] = uint8((11*x+13*y)%247) + 40
			im.Pix[o+2] = uint8((7*x+19*y)%241) + 40
		}
	}
	return im
}

// oddRef is synth_pair_odd_dim's reference: R = 8x mod 256, G = 8y mod
// 256, B = 4(x + y) mod 256.
func oddRef(w, h int) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*im.Stride + 3*x
			im.Pix[o], im.Pix[o+1], im.Pix[o+2] = uint8(8*x), uint8(8*y), uint8(4*(x+y))
		}
	}
	return im
}

func clampByte(v int) uint8 { return uint8(min(max(v, 0), 255)) }

// perPixel builds dist from ref with f(x, y, channel, value).
func perPixel(ref *zenmetrics.Image, f func(x, y, c int, v uint8) uint8) *zenmetrics.Image {
	d := zenmetrics.NewImage(ref.Width, ref.Height, ref.Format)
	for y := 0; y < ref.Height; y++ {
		for x := 0; x < ref.Width; x++ {
			for c := 0; c < 3; c++ {
				o := y*ref.Stride + 3*x + c
				d.Pix[o] = f(x, y, c, ref.Pix[o])
			}
		}
	}
	return d
}

// offsetDist: R − 8, G − 4, B + 12, clamped.
func offsetDist(ref *zenmetrics.Image) *zenmetrics.Image {
	return perPixel(ref, func(_, _, c int, v uint8) uint8 { return clampByte(int(v) + []int{-8, -4, 12}[c]) })
}

// chromaDist: G + 16, clamped.
func chromaDist(ref *zenmetrics.Image) *zenmetrics.Image {
	return perPixel(ref, func(_, _, c int, v uint8) uint8 {
		if c == 1 {
			return clampByte(int(v) + 16)
		}
		return v
	})
}

// noiseDist: + ((73x + 137y + 211c) mod 64) − 32, clamped.
func noiseDist(ref *zenmetrics.Image) *zenmetrics.Image {
	return perPixel(ref, func(x, y, c int, v uint8) uint8 { return clampByte(int(v) + (73*x+137*y+211*c)%64 - 32) })
}

// blurDist: the mean (integer division) of the pixel and the next two
// along x (dx = 1) or y (dy = 1), wrapping around.
func blurDist(ref *zenmetrics.Image, dx, dy int) *zenmetrics.Image {
	w, h := ref.Width, ref.Height
	at := func(x, y, c int) int { return int(ref.Pix[(y%h)*ref.Stride+3*(x%w)+c]) }
	return perPixel(ref, func(x, y, c int, _ uint8) uint8 {
		return uint8((at(x, y, c) + at(x+dx, y+dy, c) + at(x+2*dx, y+2*dy, c)) / 3)
	})
}
