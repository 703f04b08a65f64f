package ssim2

import (
	"os"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Band work: each band of a banded upload builds its own rows of the
// pyramid and of every scale's horizontal blurs.
//
// Measured on the H200 with the legacy band work (band.go; 16 MP, 4
// bands): the host fills the bands for ~1.8 ms, the critical path, while
// the GPU has little to do (each early band unpacked its rows and blurred
// scale 0's), and after the last fill the final command buffer still ran
// the downsamples, the horizontal blurs of scales 1..5, vmaps and the
// reduction: ~2.4 ms of GPU work, 4.0–4.3 ms a score. All of that but
// vmaps and the reduction is row-local. So here band b, covering scale-0
// rows [y0, y1) with y0 and y1 multiples of ssim2PyrTile (but the last
// band's end, the image's height), submits after its copy
//
//	pyramid  the fused kernel (ssim2_pyramid.wgsl) over the band's rows of
//	         32 × 32 tiles only (Params.tile_y, the first tile row): a
//	         tile builds all six scales of itself from its own pixels, so
//	         the band yields scale s's rows [y0 >> s, y1 >> s) (the last
//	         band: to the scale's height), nothing outside them;
//	hblur    every scale's rows of the band, one job table per band and
//	         channel group (hblur4/hblur4t for widths % 4 == 0, the row
//	         kernel for the others; jobs start at the band's first row of
//	         the scale, Params.base, and are as tall as its rows there).
//
// and the final command buffer holds the last band's copy and the same
// two dispatches, then vstate, vmaps, the reduction and the read-back.
// A row's horizontal blur reads only that row (hblur4t loads 32 rows per
// workgroup but clamps to the job's last row and stores only the job's
// rows), and a tile's pyramid only its own pixels, so every plane holds
// the bits of the unbanded score (TestSSIM2BandWorkPlanes reads them all
// back). The bands' cuts need not be 256-row aligned any more: nothing is
// bound at an offset (raw and the pyramids are bound whole), so the plan
// cuts at ssim2PyrTile rows.
//
// Dispatches: per band 1 pyramid + 1 or 2 hblur per channel group (1
// group where the three channels' pyramid fits one binding, else 3),
// where the legacy bands had unpack + scale 0's hblur; the final drops
// the five downsamples and the rest's hblur. It needs the fused pyramid:
// where that is off (ZENMETRICS_SSIM2_PYR) the legacy band work runs.

// ssim2BandWorkEnv is ZENMETRICS_SSIM2_BANDWORK: "0" or "off" keep the
// legacy band work (band.go) for A/B measurements; anything else, or
// unset, the band work above.
const ssim2BandWorkEnv = "ZENMETRICS_SSIM2_BANDWORK"

// ssim2BandWork turns the band work on (tests switch it).
var ssim2BandWork = func() bool {
	v := os.Getenv(ssim2BandWorkEnv)
	return v != "0" && v != "off"
}()

// bandWork says whether r's banded scores take the band work: it is on
// and r's pyramid is the fused kernel's (pyrfuse.go's fusedPyramid,
// decided without the kernels: pyrTab exists only where they compile the
// pyramid).
func (r *ssim2Ref) bandWork() bool {
	return ssim2BandWork && r.pyrTab != nil && int64(r.w)*int64(r.h) <= ssim2PyrMax
}

// span is the rows [lo, hi) of scale s that band b of bs holds: the rows
// its tiles build.
func (bs *ssim2BandSet) span(plan []ssim2Scale, b, s int) (lo, hi int) {
	lo, hi = bs.rows[b]>>s, bs.rows[b+1]>>s
	if b == len(bs.rows)-2 {
		hi = plan[s].H
	}
	return lo, hi
}

// makeBandWork takes and writes the band work's buffers into t: per band
// the pyramid's Params block (written per image layout, writeBandParams)
// and the horizontal-blur job tables of its rows at every scale.
func (r *ssim2Ref) makeBandWork(g *webgpu.GPU, k *ssim2Kernels, t *webgpu.Buffers, bs *ssim2BandSet) {
	for b := 0; b+1 < len(bs.rows); b++ {
		bs.unpack = append(bs.unpack, t.Uniform(g, ssim2ParamBytes))
		rows := func(s, c int) *ssim2Params {
			lo, hi := bs.span(r.plan, b, s)
			p := r.lay.vmapsParams(r.plan, 0, s, c, r.win[s])
			p.Height, p.Base = uint32(hi-lo), uint32(lo*r.plan[s].W)
			return p
		}
		h4 := ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.wide(k), rows)
		h1 := ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.narrow(k), rows)
		for _, js := range [][]ssim2Jobs{h4, h1} {
			for i := range js {
				js[i].maxH = 0
				for _, s := range js[i].scales {
					lo, hi := bs.span(r.plan, b, s)
					js[i].maxH = max(js[i].maxH, hi-lo)
				}
			}
		}
		bs.h4, bs.h1 = append(bs.h4, h4), append(bs.h1, h1)
	}
}

// encodeBandWork records band b's work after its copy (device thread):
// the pyramid of its tile rows, then the horizontal blurs of its rows at
// every scale.
func (r *ssim2Ref) encodeBandWork(e *webgpu.Encoder, k *ssim2Kernels, bs *ssim2BandSet, b int) {
	pl := k.pyramid
	if r.pyr.nb == 1 {
		pl = k.pyramid1
	}
	t0 := bs.rows[b] / ssim2PyrTile
	ty := webgpu.Groups(bs.rows[b+1], ssim2PyrTile) - uint32(t0)
	bufs := append([]*webgpu.Buffer{bs.unpack[b], r.up.Raw, r.pyrTab}, r.pyr.xybOut(r.xyb)...)
	e.Dispatch(pl, webgpu.Groups(r.plan[0].W, ssim2PyrTile), ty, 1, bufs...)
	p := r.passes[0]
	for gi := range r.pyr.groups() {
		q := *p
		q.h4, q.h1 = bs.h4[b], bs.h1[b]
		r.encodeHBlur(e, k, &q, gi)
	}
}
