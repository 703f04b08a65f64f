// Package cvvdp is ColorVideoVDP (pycvvdp 0.5.4 on still images) on
// WebGPU: the host code that drives wgsl/cvvdp_*.wgsl, written on the
// metric kit of package webgpu. Importing it registers the metric with
// every webgpu.Backend. The algorithm, the constants and the order of the
// float32 operations are those of the CPU reference cpu/cvvdp (its package
// doc describes the pipeline); the pyramid layout, the castleCSF rows, the
// display's sample tables and the final pooling come from that package
// (cvvdp.Plan, cvvdp.KernelConstants), so the two cannot drift apart.
//
// Per image, all in one command buffer:
//
//	unpack      raw 8/16-bit samples -> DKL planes of level 0 (display table, matrix)
//	per level   reduce_v, reduce_h: the next Gaussian level (3 channels in z)
//	per band    expand_v, expand_h: the coarser level enlarged (the background)
//	            ref_band (Prepare): S from the CSF, R·S·gain
//	            dist_band (Score):  |T_p − R_p| and the mutual masker
//	            blur_h, then rows:  masking, soft clamp, per-row sums of D²
//	base band   base_ref / base_dist: one workgroup (mean background, |T − R|·S)
//	map         rows_map, base_dist_map, then expand and heat_add per level (DistMap)
//
// The host reads back three float32 sums per band row, adds each band's
// rows in order in float64 and pools them with cvvdp.Plan.JOD (the CPU
// path's poolBand and poolJOD). Every value has one writer and every sum
// a fixed order: scores are bit-identical run to run.
//
// # The cached-reference split
//
// Prepare runs the reference through the same kernels on the device and
// keeps, per band, R·S·gain and S per channel (and the base band's R and
// S): 6 floats per pixel of the pyramid, about 32 bytes per image pixel
// (TestEstimate: 16.7 MB in all at 420×390 with the scoring scratch and
// the largest upload, ~100 bytes a pixel).
// A score computes only the distorted side, with the reference's scratch
// (its Gaussian pyramid, three full-size plane triples, the row sums);
// images of at least webgpu.StagingMin bytes upload through two staging
// slots filled outside the device thread, so that two callers overlap
// one's upload with the other's GPU work (pipe.go).
//
// # Precision
//
// cpu/cvvdp computes in float32 in pycvvdp's order, with correctly
// rounded powers, logarithms and exponentials. Here the same float32
// operations run in the same order, but the device's pow, log2 and exp2
// are accurate to a few ulp only, and the shader compiler may fuse
// multiply-adds; so the per-pixel values differ from the CPU's in the last
// bits, which averages out in the pooling (tests: 1e-4 JOD, the issue's
// aim; measured far below it).
//
// # Strips
//
// With zenmetrics.ModeStrip the Gaussian pyramids stay whole on the device
// but each band's per-pixel work runs on windows of its rows, and the
// reference's bands wait on the host (strip.go says why that gives the
// whole image's row sums bit for bit). With zenmetrics.ModeStripPair the
// finest level is only ever a window too, unpacked from crops uploaded
// per window, so neither image's pyramid is ever whole on the device
// (pair.go).
//
// # Limits
//
// A level's three channels share one buffer, bound whole, so a whole
// image needs 12·w·h bytes within the device's storage-binding limit
// (lavapipe's 128 MiB: 11.1 MP), and so do strips (level 0 is whole
// there); strip pairs need it only of level 1 and of a window, four times
// the pixels. Estimate declines what exceeds the limits, and the ladder
// moves on.
//
// # The distortion map
//
// With Options.DistMap the last kernels of a score also write each band's
// distortion-map values (rows_map, base_dist_map) into planes of their
// own, and cvvdp_heat.wgsl rebuilds pycvvdp's raw heatmap from them as
// cpu/cvvdp does (expand and add, level by level, then 1 − JOD/10); the
// map is read back with the sums. In strips and strip pairs the bands'
// planes are read back instead and cpu/cvvdp rebuilds the map
// (Plan.Heatmap: the device keeps no full-size planes to do it in). Those planes (4 bytes a pixel of the
// pyramid) are not in Estimate, which has no Options, but Prepare checks
// them against the budget.
package cvvdp

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpucv "github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

func init() { webgpu.Register(zenmetrics.CVVDP, impl{}) }

// nCh is the number of channels of a still image (achromatic, RG, YV).
const nCh = 3

// params mirrors cvvdp_common.wgsl's Params (96 bytes).
type params struct {
	W, H, WN, HN                uint32
	Band                        uint32
	Mul                         float32
	Blur, RowOff                uint32
	Stride, Channels, BPS, LUT0 uint32
	Gray, HLG                   uint32
	Win0, WinH, Own0, NOwn      uint32
	G0, GH                      uint32
	RSrc0, RSrcH, ROut0, ROutH  uint32
}

// paramsSize is params' size in bytes (a uniform buffer's).
const paramsSize = 96

// window is the rows of a band one pass computes, [w0, w1), and those
// whose sums it writes, [o0, o1) (within the first: the masker's vertical
// blur reads 6 rows either side). A whole image's band is one window.
type window struct{ w0, w1, o0, o1 int }

func whole(h int) window { return window{0, h, 0, h} }

// K layout (cvvdp_common.wgsl).
const (
	kEps, kMaskP, kEpsP, kMaskQ, kEpsQ, kXcm, kGain = 0, 1, 2, 3, 6, 9, 18
	kMaskC, kDMax, kSens, kCMax, kLMin, kLogL0      = 21, 22, 23, 24, 25, 26
	kLogL1, kRed, kExp, kPU, kDKL, kHLGG1           = 27, 28, 31, 34, 47, 56
	kHLGLuma, kHLGSpan, kHLGBlack, kHLGRefl         = 57, 60, 61, 62
	kHLGExpo                                        = 63
	kJodA, kJodExp, kJodLin, kMetQt                 = 66, 67, 68, 69 // 64, 65 unused
	kHeatW, kHeatWB, kCSF                           = 70, 73, 80
)

// lutLen is the sample tables' length: 8-bit at 0, 16-bit at 256.
const lutLen = 256 + 65536

// Workgroup shapes: 16×16 for the per-pixel kernels, wgRows (a power of
// two) for the row and base-band sums.
const (
	wg2    = 16
	wgRows = 256
)

type kernels struct {
	unpack, reduceV, reduceH, expandV, expandH *webgpu.Pipeline
	refBand, distBand, blurH, rows             *webgpu.Pipeline
	baseRef, baseDist                          *webgpu.Pipeline
	rowsMap, baseDistMap, heatAdd, heatFinal   *webgpu.Pipeline
}

func compile(g *webgpu.GPU) (*kernels, error) {
	return webgpu.Compiled(g, "cvvdp", func(g *webgpu.GPU) (*kernels, error) {
		src, err := webgpu.Sources("cvvdp_common", "cvvdp_csf")
		if err != nil {
			return nil, err
		}
		common, csf := src[0], src[0]+src[1]
		var k kernels
		sq := webgpu.Constants{"WG_X": wg2, "WG_Y": wg2}
		wg := webgpu.Constants{"WG": wgRows}
		return &k, webgpu.Compile(g, []webgpu.Kernel{
			{File: "cvvdp_unpack", Entry: "unpack", Prefix: common, Constants: sq, Dst: &k.unpack},
			{File: "cvvdp_pyramid", Entry: "reduce_v", Prefix: common, Constants: sq, Dst: &k.reduceV},
			{File: "cvvdp_pyramid", Entry: "reduce_h", Prefix: common, Constants: sq, Dst: &k.reduceH},
			{File: "cvvdp_pyramid", Entry: "expand_v", Prefix: common, Constants: sq, Dst: &k.expandV},
			{File: "cvvdp_pyramid", Entry: "expand_h", Prefix: common, Constants: sq, Dst: &k.expandH},
			{File: "cvvdp_band", Entry: "ref_band", Prefix: csf, Constants: sq, Dst: &k.refBand},
			{File: "cvvdp_band", Entry: "dist_band", Prefix: csf, Constants: sq, Dst: &k.distBand},
			{File: "cvvdp_blur", Entry: "blur_h", Prefix: common, Constants: sq, Dst: &k.blurH},
			{File: "cvvdp_rows", Entry: "rows", Prefix: common, Constants: wg, Dst: &k.rows},
			{File: "cvvdp_base", Entry: "base_ref", Prefix: csf, Constants: wg, Dst: &k.baseRef},
			{File: "cvvdp_base", Entry: "base_dist", Prefix: csf, Constants: wg, Dst: &k.baseDist},
			{File: "cvvdp_rows", Entry: "rows_map", Prefix: common, Constants: wg, Dst: &k.rowsMap},
			{File: "cvvdp_base", Entry: "base_dist_map", Prefix: csf, Constants: wg, Dst: &k.baseDistMap},
			{File: "cvvdp_heat", Entry: "heat_add", Prefix: common, Constants: sq, Dst: &k.heatAdd},
			{File: "cvvdp_heat", Entry: "heat_final", Prefix: common, Constants: sq, Dst: &k.heatFinal},
		})
	})
}

// constants is the K buffer for plan p.
func constants(p *cpucv.Plan) []float32 {
	c := cpucv.KernelConstants()
	k := make([]float32, kCSF+nCh*32*p.Levels)
	k[kEps], k[kMaskP], k[kEpsP] = c.Eps, c.MaskP, c.EpsP
	for j := 0; j < nCh; j++ {
		k[kMaskQ+j], k[kEpsQ+j], k[kGain+j] = c.MaskQ[j], c.EpsQ[j], c.ChGain[j]
		for i := 0; i < nCh; i++ {
			k[kXcm+3*j+i] = c.Xcm[j][i]
		}
	}
	k[kMaskC], k[kDMax], k[kSens] = c.MaskCMul, c.DMax, c.SensCorr
	k[kCMax], k[kLMin], k[kLogL0], k[kLogL1] = c.ContrastMax, c.LBkgMin, c.LogL0, c.LogL1
	copy(k[kRed:kRed+3], c.Reduce[:])
	copy(k[kExp:kExp+3], c.Expand[:])
	copy(k[kPU:kPU+13], c.PU[:])
	ph := &p.Photometry
	for i := 0; i < 3; i++ {
		copy(k[kDKL+3*i:kDKL+3*i+3], ph.ToDKL[i][:])
	}
	k[kHLGG1] = ph.Gamma1
	copy(k[kHLGLuma:kHLGLuma+3], ph.Luma[:])
	k[kHLGSpan], k[kHLGBlack], k[kHLGRefl], k[kHLGExpo] = ph.Span, ph.Black, ph.Refl, ph.Expo
	k[kJodA], k[kJodExp], k[kJodLin], k[kMetQt] = c.JodA, c.JodExp, c.JodLin, c.MetQt
	copy(k[kHeatW:kHeatW+3], p.HeatW[0][:])
	copy(k[kHeatWB:kHeatWB+3], p.HeatW[p.Levels-1][:])
	for b := 0; b < p.Levels; b++ {
		for ch := 0; ch < nCh; ch++ {
			copy(k[kCSF+(3*b+ch)*32:], p.CSF[b][ch][:])
		}
	}
	return k
}

// sumRows is the number of row sums: every row of every band below the
// base band, and one for the base band.
func sumRows(hs []int) int {
	n := 1
	for _, h := range hs[:len(hs)-1] {
		n += h
	}
	return n
}

// bufferSizes lists the device buffers of a reference whose pyramid has
// levels ws×hs, in take's order, and their total with the uniforms, the
// upload of raw bytes and its staging buffer (from webgpu.StagingMin).
func bufferSizes(ws, hs []int, raw int64) (list []int64, total int64) {
	n := len(ws)
	add := func(v int64) {
		v = max(v, 4)
		list = append(list, v)
		total += v
	}
	px := func(l int) int64 { return int64(ws[l]) * int64(hs[l]) }
	add(4 * int64(kCSF+nCh*32*n)) // K
	add(4 * lutLen)               // LUT
	for l := 0; l < n; l++ {
		add(4 * nCh * px(l)) // g
	}
	for b := 0; b < n-1; b++ {
		add(4 * nCh * px(b)) // rp
		add(4 * nCh * px(b)) // s
	}
	add(4 * (4 + nCh*px(n-1))) // rb
	for i := 0; i < 3; i++ {
		add(4 * nCh * px(0)) // ex, mm, hb
	}
	add(4 * nCh * int64(sumRows(hs))) // sums
	total += int64(n) * paramsSize    // uniforms
	total += (raw + 3) &^ 3           // raw upload
	if raw >= webgpu.StagingMin {
		// The staging slots of pipelined scores (pipe.go).
		total += pipeSlots * ((raw + 3) &^ 3)
	}
	return list, total
}

// mapBytes is what the distortion map adds: a plane per level.
func mapBytes(ws, hs []int) int64 {
	var n int64
	for l := range ws {
		n += max(4, 4*int64(ws[l])*int64(hs[l]))
	}
	return n
}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return int64(w) * int64(h) * 8 }

// reference is a prepared CVVDP reference on a WebGPU device.
type reference struct {
	dev  *webgpu.Device
	plan *cpucv.Plan
	w, h int
	k    *kernels
	// rowOff[b] is where band b's row sums start (the base band's single
	// "row" last).
	rowOff []int

	own        webgpu.Buffers
	up         webgpu.Upload
	kb, lut    *webgpu.Buffer
	g, rp, s   []*webgpu.Buffer
	rb         *webgpu.Buffer
	ex, mm, hb *webgpu.Buffer
	sums       *webgpu.Buffer
	pu         []*webgpu.Buffer
	// rtmp is the reduce passes' intermediate: hb for a whole image, a
	// buffer of its own in strips (where hb is a window's).
	rtmp *webgpu.Buffer
	// st is the strip state (nil for a whole image).
	st *strips
	// heat[l] is level l's distortion-map plane, with Options.DistMap.
	heat []*webgpu.Buffer
	// pipe holds the staging slots of pipelined scores (pipe.go);
	// ringBytes is their size, for Bytes.
	pipe      webgpu.StagingRing
	ringBytes atomic.Int64

	mu       sync.Mutex
	released bool
}

// Bytes is the device memory the reference holds (webgpu.ReferenceBytes).
func (r *reference) Bytes() int64 { return r.own.Bytes + r.ringBytes.Load() }

// take takes every buffer (device thread) and writes the constants, the
// tables and the per-level parameters.
func (r *reference) take(g *webgpu.GPU, raw int64) error {
	p := r.plan
	n := p.Levels
	o := &r.own
	sizes, _ := bufferSizes(p.W, p.H, raw)
	next := func() int64 { v := sizes[0]; sizes = sizes[1:]; return v }
	r.kb = o.Storage(g, next())
	r.lut = o.Storage(g, next())
	r.g = make([]*webgpu.Buffer, n)
	for l := range r.g {
		r.g[l] = o.Storage(g, next())
	}
	r.rp, r.s = make([]*webgpu.Buffer, n-1), make([]*webgpu.Buffer, n-1)
	for b := 0; b < n-1; b++ {
		r.rp[b] = o.Storage(g, next())
		r.s[b] = o.Storage(g, next())
	}
	r.rb = o.Storage(g, next())
	r.ex = o.Storage(g, next())
	r.mm = o.Storage(g, next())
	r.hb = o.Storage(g, next())
	r.sums = o.Storage(g, next())
	r.rtmp = r.hb
	if err := r.takeCommon(g); err != nil {
		return err
	}
	return r.up.Ensure(g, o, raw)
}

// takeCommon takes the distortion map's planes (with Options.DistMap) and
// the uniforms (after the buffers taken before it), and writes the
// constants, the tables and every level's parameters (whole bands).
func (r *reference) takeCommon(g *webgpu.GPU) error {
	p := r.plan
	n := p.Levels
	o := &r.own
	if r.heat != nil {
		for l := range r.heat {
			r.heat[l] = o.Storage(g, max(4, 4*int64(p.W[l])*int64(p.H[l])))
		}
	}
	r.pu = make([]*webgpu.Buffer, n)
	for l := range r.pu {
		r.pu[l] = o.Uniform(g, paramsSize)
	}
	if o.Err != nil {
		return o.Err
	}
	webgpu.WriteSlice(g, r.kb, 0, constants(p))
	webgpu.WriteSlice(g, r.lut, 0, p.LUT(255))
	webgpu.WriteSlice(g, r.lut, 4*256, p.LUT(65535))
	r.rowOff = make([]int, n)
	off := 0
	for l := 0; l < n; l++ {
		r.rowOff[l] = off
		off += p.H[l]
	}
	for l := 0; l < n; l++ {
		r.setLevel(g, l, whole(p.H[l]), nil)
	}
	return nil
}

// setLevel writes level l's parameters for window win and, with im not
// nil, level 0's for unpacking im.
func (r *reference) setLevel(g *webgpu.GPU, l int, win window, im *zenmetrics.Image) {
	pr := r.levelParams(l, win, im)
	g.Write(r.pu[l], 0, webgpu.Bytes(&pr))
}

// levelParams is level l's parameters for window win (whole levels) and,
// with im not nil, for unpacking im.
func (r *reference) levelParams(l int, win window, im *zenmetrics.Image) params {
	p := r.plan
	pr := params{W: uint32(p.W[l]), H: uint32(p.H[l]), Band: uint32(l), Mul: p.Mul[l], RowOff: uint32(r.rowOff[l]),
		Win0: uint32(win.w0), WinH: uint32(win.w1 - win.w0), Own0: uint32(win.o0), NOwn: uint32(win.o1 - win.o0)}
	pr.GH, pr.RSrcH = pr.H, pr.H
	if l+1 < p.Levels {
		pr.WN, pr.HN = uint32(p.W[l+1]), uint32(p.H[l+1])
		pr.ROutH = pr.HN
	}
	if r.blurs(l) {
		pr.Blur = 1
	}
	if im != nil {
		f := im.Format
		pr.Stride, pr.Channels, pr.BPS = uint32(im.Stride), uint32(f.Channels()), uint32(f.BytesPerSample())
		if f.BytesPerSample() == 2 {
			pr.LUT0 = 256
		}
		if f.IsGray() {
			pr.Gray = 1
		}
		if p.Photometry.HLG {
			pr.HLG = 1
		}
	}
	return pr
}

// setImage writes level 0's parameters for unpacking im (the whole band
// as its window).
func (r *reference) setImage(g *webgpu.GPU, im *zenmetrics.Image) {
	r.setLevel(g, 0, whole(r.plan.H[0]), im)
}

// encodePyramid records the unpacking of the image in r.up.Raw and its
// Gaussian pyramid into r.g.
func (r *reference) encodePyramid(e *webgpu.Encoder) {
	p, k := r.plan, r.k
	e.Dispatch(k.unpack, webgpu.Groups(p.W[0], wg2), webgpu.Groups(p.H[0], wg2), 1, r.pu[0], r.kb, r.lut, r.up.Raw, r.g[0])
	for l := 0; l+1 < p.Levels; l++ {
		e.Dispatch(k.reduceV, webgpu.Groups(p.W[l], wg2), webgpu.Groups(p.H[l+1], wg2), nCh, r.pu[l], r.kb, r.g[l], r.rtmp)
		e.Dispatch(k.reduceH, webgpu.Groups(p.W[l+1], wg2), webgpu.Groups(p.H[l+1], wg2), nCh, r.pu[l], r.kb, r.rtmp, r.g[l+1])
	}
}

// encodeExpand records window win of band b's enlarged coarser level
// into r.ex (r.hb holds the vertical pass).
func (r *reference) encodeExpand(e *webgpu.Encoder, b int, win window) {
	p, k := r.plan, r.k
	rows := win.w1 - win.w0
	e.Dispatch(k.expandV, webgpu.Groups(p.W[b+1], wg2), webgpu.Groups(rows, wg2), nCh, r.pu[b], r.kb, r.g[b+1], r.hb)
	e.Dispatch(k.expandH, webgpu.Groups(p.W[b], wg2), webgpu.Groups(rows, wg2), nCh, r.pu[b], r.kb, r.hb, r.ex)
}

// encodeRefBand records the reference's R·S·gain and S of window win of
// band b into rp and s (window planes).
func (r *reference) encodeRefBand(e *webgpu.Encoder, b int, win window, rp, s *webgpu.Buffer) {
	p, k := r.plan, r.k
	r.encodeExpand(e, b, win)
	e.Dispatch(k.refBand, webgpu.Groups(p.W[b], wg2), webgpu.Groups(win.w1-win.w0, wg2), 1, r.pu[b], r.kb, r.g[b], r.ex, rp, s)
}

// encodeDistBand records the distorted image's window win of band b with
// the reference's rp and s of that window, and the sums of its owned rows.
func (r *reference) encodeDistBand(e *webgpu.Encoder, b int, win window, rp, s *webgpu.Buffer) {
	p, k := r.plan, r.k
	r.encodeExpand(e, b, win)
	gx, gy := webgpu.Groups(p.W[b], wg2), webgpu.Groups(win.w1-win.w0, wg2)
	e.Dispatch(k.distBand, gx, gy, 1, r.pu[b], r.kb, r.g[b], r.ex, rp, s, r.mm)
	mb := r.mm
	if r.blurs(b) {
		e.Dispatch(k.blurH, gx, gy, nCh, r.pu[b], r.kb, r.mm, r.hb)
		mb = r.hb
	}
	if r.heat != nil {
		e.Dispatch(k.rowsMap, uint32(win.o1-win.o0), 1, 1, r.pu[b], r.kb, mb, r.ex, r.sums, r.heat[b])
		return
	}
	e.Dispatch(k.rows, uint32(win.o1-win.o0), 1, 1, r.pu[b], r.kb, mb, r.ex, r.sums)
}

// encodeRef records the reference's bands (Prepare of a whole image).
func (r *reference) encodeRef(e *webgpu.Encoder) {
	p, k := r.plan, r.k
	r.encodePyramid(e)
	n := p.Levels
	for b := 0; b+1 < n; b++ {
		r.encodeRefBand(e, b, whole(p.H[b]), r.rp[b], r.s[b])
	}
	e.Dispatch(k.baseRef, 1, 1, 1, r.pu[n-1], r.kb, r.g[n-1], r.rb)
}

// encodeDist records the distorted image's bands and their row sums
// (a whole image).
func (r *reference) encodeDist(e *webgpu.Encoder) {
	p, k := r.plan, r.k
	r.encodePyramid(e)
	n := p.Levels
	for b := 0; b+1 < n; b++ {
		r.encodeDistBand(e, b, whole(p.H[b]), r.rp[b], r.s[b])
	}
	if r.heat == nil {
		e.Dispatch(k.baseDist, 1, 1, 1, r.pu[n-1], r.kb, r.g[n-1], r.rb, r.sums)
		return
	}
	e.Dispatch(k.baseDistMap, 1, 1, 1, r.pu[n-1], r.kb, r.g[n-1], r.rb, r.sums, r.heat[n-1])
}

// encodeMap records the distortion map's reconstruction from the bands'
// planes (cpu/cvvdp heatmap): each finer level is the coarser one
// enlarged plus its own plane, alternating between ex and mm (plane 0),
// the finest one mapped to 1 − JOD/10. It returns the buffer holding the
// map (w×h at offset 0).
func (r *reference) encodeMap(e *webgpu.Encoder) *webgpu.Buffer {
	p, k := r.plan, r.k
	n := p.Levels
	cur := r.heat[n-1]
	if n == 1 {
		e.Clear(r.ex)
		e.Dispatch(k.heatFinal, webgpu.Groups(p.W[0], wg2), webgpu.Groups(p.H[0], wg2), 1, r.pu[0], r.heat[0], r.ex, r.kb)
		return r.ex
	}
	for i := n - 2; i >= 0; i-- {
		dst := r.ex
		if (n-2-i)%2 == 1 {
			dst = r.mm
		}
		gx, gy := webgpu.Groups(p.W[i], wg2), webgpu.Groups(p.H[i], wg2)
		e.Dispatch(k.expandV, webgpu.Groups(p.W[i+1], wg2), gy, 1, r.pu[i], r.kb, cur, r.hb)
		e.Dispatch(k.expandH, gx, gy, 1, r.pu[i], r.kb, r.hb, dst)
		if i > 0 {
			e.Dispatch(k.heatAdd, gx, gy, 1, r.pu[i], r.heat[i], dst)
		} else {
			e.Dispatch(k.heatFinal, gx, gy, 1, r.pu[i], r.heat[i], dst, r.kb)
		}
		cur = dst
	}
	return cur
}

// blurs reports whether band b's masker is blurred (pycvvdp blurs bands
// larger than pu_padsize in both directions).
func (r *reference) blurs(b int) bool {
	pad := cpucv.KernelConstants().PUPad
	return r.plan.W[b] > pad && r.plan.H[b] > pad
}

// pool adds each band's row sums in row order (float64) and maps them to
// JOD with the CPU path's pooling.
func (r *reference) pool(out []float32) float64 {
	p := r.plan
	sums := make([][nCh]float64, p.Levels)
	for b := 0; b < p.Levels; b++ {
		rows := p.H[b]
		if b == p.Levels-1 {
			rows = 1
		}
		for y := 0; y < rows; y++ {
			o := nCh * (r.rowOff[b] + y)
			for c := 0; c < nCh; c++ {
				sums[b][c] += float64(out[o+c])
			}
		}
	}
	return p.JOD(sums)
}

// Score implements zenmetrics.Reference.
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	out, dm, err := r.run(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	sc = zenmetrics.Score{Metric: zenmetrics.CVVDP, Value: r.pool(out)}
	if dm != nil {
		sc.DistMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: dm}
	}
	return sc, nil
}

// rowSums runs a score on the device and returns the row sums it reads
// back (three per band row, the base band's last).
func (r *reference) rowSums(ctx context.Context, dist *zenmetrics.Image) ([]float32, error) {
	out, _, err := r.run(ctx, dist)
	return out, err
}

// run runs a score on the device and returns the row sums and, when the
// reference was prepared with Options.DistMap, the distortion map.
func (r *reference) run(ctx context.Context, dist *zenmetrics.Image) ([]float32, []float32, error) {
	if err := dist.Validate(); err != nil {
		return nil, nil, err
	}
	if err := webgpu.SizeMismatch(r.w, r.h, dist); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if r.ringable(dist) {
		return r.runRing(ctx, dist)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, nil, zenmetrics.ErrReleased
	}
	out := make([]float32, nCh*sumRows(r.plan.H))
	var dm []float32
	var bands [][]float32 // strips: the map's band values, rebuilt on the host
	if r.heat != nil {
		if r.st != nil {
			bands = make([][]float32, r.plan.Levels)
			for l := range bands {
				bands[l] = make([]float32, r.plan.W[l]*r.plan.H[l])
			}
		} else {
			dm = make([]float32, r.w*r.h)
		}
	}
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		if r.st != nil {
			return r.scoreStrip(g, dist, out, bands)
		}
		// Below webgpu.StagingMin bytes (ringable otherwise), Put writes
		// through the queue: no staging buffer.
		r.setImage(g, dist)
		e := g.Encoder()
		if err := r.up.Put(g, e, &r.own, dist); err != nil {
			e.Discard()
			return err
		}
		r.encodeDist(e)
		if r.heat == nil {
			return webgpu.SubmitRead(e, r.sums, 0, out)
		}
		mb := r.encodeMap(e)
		rbSums, err := e.ReadBack(r.sums, 0, 4*int64(len(out)))
		if err != nil {
			e.Discard()
			return err
		}
		rbMap, err := e.ReadBack(mb, 0, 4*int64(len(dm)))
		if err != nil {
			e.Discard()
			return err
		}
		if err := e.Submit(); err != nil {
			return err
		}
		if err := webgpu.ReadSlice(rbSums, out); err != nil {
			return err
		}
		return webgpu.ReadSlice(rbMap, dm)
	})
	if err != nil {
		return nil, nil, err
	}
	if bands != nil {
		dm = r.plan.Heatmap(bands, runtime.GOMAXPROCS(0))
	}
	return out, dm, nil
}

// Release implements zenmetrics.Reference.
func (r *reference) Release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	bufs := r.own.Take()
	if r.st != nil {
		r.st.rp, r.st.s = nil, nil
	}
	r.mu.Unlock()
	// The ring waits for scores still using a slot.
	bufs = append(bufs, r.pipe.Close(r.dev)...)
	r.ringBytes.Store(0)
	r.dev.Free(bufs)
}

// impl is CVVDP's webgpu.MetricImpl.
type impl struct{}

// fits reports whether the buffers of a pyramid with levels ws×hs and
// the dispatches over it stay within the device's limits, and their
// total bytes.
func fits(b *webgpu.Backend, ws, hs []int) (int64, bool) {
	lim := b.Device().Limits()
	raw := worstRaw(ws[0], hs[0])
	list, total := bufferSizes(ws, hs, raw)
	for _, n := range append(list, raw) {
		if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
			return total, false
		}
	}
	return total, dispatchOK(b, ws[0], hs[0])
}

// Estimate is the device memory of a reference and its scoring scratch
// for the worst-case RGBA16 upload, with the deepest pyramid any display
// model gives a w×h image (cvvdp.WorstLevels): exact for the display
// models whose band count the image's size limits (pycvvdp's default
// below about 1000 pixels a side), an upper bound otherwise (a few small
// levels fewer). For ModeStrip and ModeStripPair it is the plan's at the
// memory available now (strip.go, pair.go). ok is false below 2×2, when a
// buffer or a dispatch exceeds the device's limits, and for strips when
// not even the smallest windows fit.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	ws, hs, ok := cpucv.WorstLevels(w, h)
	if !ok {
		return 0, false
	}
	switch mode {
	case zenmetrics.ModeFull:
		return fits(b, ws, hs)
	case zenmetrics.ModeStrip:
		if !dispatchOK(b, ws[0], hs[0]) {
			return 0, false
		}
		_, t, err := planStrips(b, ws, hs, 0, 0)
		return t, err == nil
	case zenmetrics.ModeStripPair:
		if !dispatchOK(b, ws[0], hs[0]) {
			return 0, false
		}
		plan := planPairs
		if len(ws) < 2 {
			plan = planStrips
		}
		_, t, err := plan(b, ws, hs, 0, 0)
		return t, err == nil
	}
	return 0, false
}

// dispatchOK reports whether a w×h image's dispatches stay within the
// device's workgroup-count limit.
func dispatchOK(b *webgpu.Backend, w, h int) bool {
	maxG := b.Device().Limits().MaxComputeWorkgroupsPerDimension
	return webgpu.Groups(w, wg2) <= maxG && webgpu.Groups(h, wg2) <= maxG && uint32(h) <= maxG
}

// Prepare runs the reference through the kernels and keeps its bands on
// the device (a whole image) or on the host (ModeStrip, ModeStripPair:
// opt.StripHeight owned rows per window of the finest band, 0: as many
// as the memory available allows); refused above the VRAM budget and
// where Estimate declines.
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if opt.Mode != zenmetrics.ModeFull && opt.Mode != zenmetrics.ModeStrip && opt.Mode != zenmetrics.ModeStripPair {
		return nil, fmt.Errorf("%w: CVVDP on WebGPU: mode %v", zenmetrics.ErrUnsupported, opt.Mode)
	}
	w, h := ref.Width, ref.Height
	plan, err := cpucv.NewPlan(w, h, opt.Display)
	if err != nil {
		return nil, err
	}
	if !dispatchOK(b, w, h) {
		return nil, fmt.Errorf("%w: CVVDP on WebGPU: a %d×%d image exceeds the device's dispatch limits", zenmetrics.ErrUnsupported, w, h)
	}
	b.RefreshHeld(ctx)
	r := &reference{dev: b.Device(), plan: plan, w: w, h: h}
	r.pipe.N = pipeSlots
	var need int64
	if opt.Mode != zenmetrics.ModeFull {
		pair := opt.Mode == zenmetrics.ModeStripPair && plan.Levels > 1
		planner := planStrips
		if pair {
			planner = planPairs
		}
		// The distortion map's planes come out of the same memory.
		var reserve int64
		if opt.DistMap {
			reserve = mapBytes(plan.W, plan.H)
		}
		winRows, t, err := planner(b, plan.W, plan.H, max(0, opt.StripHeight), reserve)
		if err != nil {
			return nil, err
		}
		r.st, need = &strips{winRows: winRows, pair: pair}, t
	} else {
		t, ok := fits(b, plan.W, plan.H)
		if !ok {
			return nil, fmt.Errorf("%w: CVVDP on WebGPU: a %d×%d image exceeds the device's limits", zenmetrics.ErrUnsupported, w, h)
		}
		need = t
	}
	if opt.DistMap {
		r.heat = make([]*webgpu.Buffer, plan.Levels)
		need += mapBytes(plan.W, plan.H)
	}
	if err := b.CheckBudget(need); err != nil {
		return nil, err
	}
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := compile(g)
		if err != nil {
			return err
		}
		r.k = k
		if r.st != nil {
			take := func() error { return r.takeStrip(g, worstRaw(w, h)) }
			if r.st.pair {
				take = func() error { return r.takePair(g) }
			}
			if err := take(); err != nil {
				return err
			}
			return r.prepareStrip(g, ref)
		}
		if err := r.take(g, worstRaw(w, h)); err != nil {
			return err
		}
		r.setImage(g, ref)
		e := g.Encoder()
		if err := r.up.Put(g, e, &r.own, ref); err != nil {
			e.Discard()
			return err
		}
		r.encodeRef(e)
		if err := e.SubmitAndWait(); err != nil {
			return err
		}
		if r.up.Staging != nil {
			// Scores upload through the ring's slots (pipe.go): the
			// staging buffer the reference went through goes back to
			// the pool (its copy has finished).
			r.own.Drop(r.up.Staging)
			r.up.Staging = nil
		}
		return nil
	})
	if err != nil {
		r.dev.Free(r.own.Take())
		return nil, err
	}
	return r, nil
}
