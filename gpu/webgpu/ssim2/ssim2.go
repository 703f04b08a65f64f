package ssim2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/upband"
)

// SSIMULACRA2 on WebGPU.
//
// Passes (all in one command buffer per score; "pass" p is one alpha
// background, 1 without alpha, 2 when the reference has alpha):
//
//	unpack      raw 8/16-bit sRGB words -> linear RGB (3 planes) + XYB (3 planes)
//	downsample  scale s-1 linear -> scale s linear + XYB        (s = 1..5)
//	hblur       every scale and channel in one dispatch (jobs.go): libjxl's
//	            horizontal recursive Gaussian of img1, img2, img1², img2²,
//	            img1·img2 (thread per row and quantity; hblur4, the same with
//	            16-byte accesses, for the scales whose width % 4 == 0: by
//	            default hblur4t, a workgroup per 32 rows and all quantities,
//	            inputs and outputs staged in tiles; ZENMETRICS_SSIM2_HBLUR)
//	vstate      every scale and channel with more than one row band: the vertical
//	            recursion down every column, leaving its state at band starts
//	vmaps       every scale and channel: the vertical recursion (thread per column
//	            and quantity, one workgroup per column block and row band,
//	            rows in chunks through workgroup memory) fused with the SSIM
//	            and edge maps; compensated sums, one per workgroup and term
//	reduce      every (pass, scale, channel, term): compensated sum of the
//	            workgroups' sums
//
// and 2 × 108 (or 2 × 216) floats read back; the norms, weights and the
// final polynomial are float64 on the host (math.go). unpack and the
// downsamples are one dispatch by default (pyramid, pyrfuse.go). Large
// pipelined scores upload in row bands, each band's pyramid tiles and
// horizontal blurs in a command buffer of its own that overlaps the fill
// of the next band (band.go, bandwork.go).
//
// Buffer layout (jobs.go). The XYB planes, the horizontal blurs and the
// kept blurs are pyramids: every scale (and, where the binding limit
// allows, every channel) of one quantity in one buffer, at offsets one
// layout shares, so that one dispatch runs all (scale, channel) jobs; a
// device whose binding limit is below three channels' pyramid (lavapipe's
// 128 MiB above ~8 MP) gets one buffer per channel and one dispatch per
// channel. No kernel needs more than 8 storage bindings (lavapipe allows
// 10). Prepare keeps, per pass, the reference's XYB pyramid resident
// (16 B/px over the pyramid) and, for a whole image whose extra
// planes fit (ssim2Ref.keep), its finished blurs mu1 = blur(img1) and
// sigma11 = blur(img1²) per channel (6 more planes per scale, 32 B/px):
// hblur with quantity map 0x20, then the vblur entry point (the vmaps
// recursion in the same operations) at Prepare. A Score then blurs only
// mu2, sigma22 and sigma12 (hblur map 0x431) and vmaps reads mu1 and
// sigma11 from those planes: the same f32 values as computing them next to
// the distorted image's, so scores are bit-identical to the path without
// them (identical images still score exactly 100), with 3/5 of the blur
// work. Strips, and references whose extra planes do not fit, blur all
// five quantities at every Score as before. Off by default
// (ssim2KeepBlurs): no faster on an H200, see SSIM2_PERF.md.
// Scoring a distorted image uploads only its raw bytes and reuses
// per-reference scratch planes (linear RGB per scale, the XYB and five
// horizontal-blur pyramids), so a cached reference scores with
// no allocation at all. Buffers come from the device pool, so one-shot
// scoring of same-sized images reuses them too.

// Workgroup geometry (override constants).
const (
	ssim2WG         = 16 // unpack/downsample: ssim2WG × ssim2WG threads
	ssim2VCols      = 32 // vmaps: columns per workgroup (VX in ssim2_vmaps.wgsl; see ssim2Tuning)
	ssim2VSlots     = 5  // vmaps: threads (quantities) per column
	ssim2RedWG      = 256
	ssim2ParamBytes = 96 // bytes of the WGSL Params struct
	// ssim2BandRowsDefault is the height of vmaps' row bands (a multiple
	// of gen.VMapsRows; 0: one band, no vstate pass); see ssim2_vmaps.wgsl
	// and ssim2Tuning. Bands (240 rows) paid while each (scale, channel)
	// was its own dispatch: one column walk had too few threads. With all
	// jobs in one dispatch (jobs.go) the columns of every scale and channel
	// walk side by side, and the vstate pass that bands need cost more than
	// it saved: H200, same call, 20 scores each, cached 1 / 4 / 16 MP 0.76 /
	// 1.59 / 4.90 ms with one band vs 0.68–0.75 / 1.67–1.71 / 5.48–5.53 ms
	// with 240-row bands (SSIM2_PERF.md). Tall images (over 4096 rows) were
	// not measured.
	ssim2BandRowsDefault = 0
	// ssim2BandRowsEstimate is the band height the memory estimate allows
	// for (the band-start states), should the environment turn bands on.
	ssim2BandRowsEstimate = 240
)

// ssim2HRows is hblur's threads (rows) per workgroup; the environment may
// set 32, 64, 128 or 256 for measurements (ZENMETRICS_SSIM2_HROWS; nothing
// computed depends on it).
var ssim2HRows = func() int {
	switch n := upband.EnvInt("ZENMETRICS_SSIM2_HROWS", 64); n {
	case 32, 128, 256:
		return n
	}
	return 64
}()

// ssim2HBlurMode is the environment variable that selects the kernel for
// the widths that are a multiple of 4 (read when the kernels compile, so
// that go test's cache sees it):
//
//	old     hblur4: a thread per row and quantity, each loading its own row
//	new     hblur4t: a workgroup per 32 rows and all their quantities, the
//	        inputs loaded once per 64-column tile with whole cache lines and
//	        staged through workgroup memory, the next tile's loads in flight
//	        during the walk; outputs stored by the walkers as in hblur4
//	newout  hblur4t with 32-column tiles whose outputs are staged too and
//	        stored in whole lines (28 KiB of workgroup memory; new where the
//	        device allows less)
//
// All give the same bits. newout is the default (unset or any other
// value): on the H200 (session 8, one binary, alternated) it took hblur
// at 16 MP from 1.635 to 1.363 ms and the cached score from 4.87–4.98 to
// 4.68–4.73 ms; new, whose walkers store their own outputs, was slower
// than old (2.110 ms), and stays as newout's fallback on devices with
// less than 28 KiB of workgroup memory.
const ssim2HBlurMode = "ZENMETRICS_SSIM2_HBLUR"

// ssim2HTRows is hblur4t's rows per workgroup (its override HT_ROWS; the
// workgroup is 5 × that many threads).
const ssim2HTRows = 32

// ssim2Kernels are the compiled pipelines, made once per device.
type ssim2Kernels struct {
	// unpack and downsample write XYB into three buffers (a pyramid split
	// by channel); unpack1 and downsample1 into one (ssim2XYBOut).
	unpack, downsample, unpack1, downsample1 *webgpu.Pipeline
	hblur, vmaps, reduce                     *webgpu.Pipeline
	// vstate stores the vertical recursion's state at row-band starts
	// (ssim2_vstate.wgsl), so that vmaps' bands run side by side.
	vstate *webgpu.Pipeline
	// hblur4 is hblur with 16-byte accesses, for widths that are a multiple
	// of 4 (nil when disabled by ssim2Tuning).
	hblur4 *webgpu.Pipeline
	// hblur4t replaces hblur4 where set (ssim2HBlurMode): the same
	// values, the inputs staged per workgroup; dispatched as
	// hblur4Dispatch says.
	hblur4t *webgpu.Pipeline
	// vblur is ssim2_hblur.wgsl's vertical recursion into planes (a cached
	// reference's mu1 and sigma11).
	vblur *webgpu.Pipeline
	// pyramid is unpack and every downsample in one dispatch (pyrfuse.go;
	// nil when the environment turns it off); pyramid1 writes one buffer.
	pyramid, pyramid1 *webgpu.Pipeline
	vx                int // vmaps columns per workgroup
	band              int // vmaps row-band height (0: one band)
	// FMA says how fused multiply-adds are computed: "native" (the device's
	// fma() is fused), "emulated" (it is not; ssim2_color.wgsl emulates it)
	// or "inexact" (neither gave the fused result: scores may differ from
	// libjxl's by more than usual).
	FMA string
}

// kernelsName is the name the kernels are compiled under (once per device,
// webgpu.Compiled).
const kernelsName = "ssim2"

// kernels returns the device's SSIMULACRA2 kernels, compiling them the first
// time (device thread).
func kernels(g *webgpu.GPU) (*ssim2Kernels, error) {
	return webgpu.Compiled(g, kernelsName, compileSSIM2)
}

func compileSSIM2(g *webgpu.GPU) (*ssim2Kernels, error) {
	shared, err := webgpu.Sources("ssim2_color", "ssim2_iir")
	if err != nil {
		return nil, err
	}
	color, iir := shared[0], shared[1]
	var k ssim2Kernels
	var useH4 bool
	k.vx, useH4, k.band = ssim2Tuning()
	native, emulated, err := probeFMA(g, color)
	if err != nil {
		return nil, err
	}
	fmaNative := 0.0
	switch {
	case native:
		k.FMA, fmaNative = "native", 1
	case emulated:
		k.FMA = "emulated"
	default:
		k.FMA, fmaNative = "inexact", 1
	}
	// The blurs and maps read the colour and recursion helpers, unpack and
	// downsample the colour ones only.
	blur := color + "\n" + iir + "\n"
	col := color + "\n"
	cst := webgpu.Constants{"WG_X": ssim2WG, "WG_Y": ssim2WG, "FMA_NATIVE": fmaNative}
	ks := []webgpu.Kernel{
		{File: "ssim2_unpack", Entry: "unpack", Prefix: col + ssim2XYBOut(5, true), Constants: cst, Dst: &k.unpack},
		{File: "ssim2_downsample", Entry: "downsample", Prefix: col + ssim2XYBOut(7, true), Constants: cst, Dst: &k.downsample},
		{File: "ssim2_unpack", Entry: "unpack", Prefix: col + ssim2XYBOut(5, false), Constants: cst, Dst: &k.unpack1},
		{File: "ssim2_downsample", Entry: "downsample", Prefix: col + ssim2XYBOut(7, false), Constants: cst, Dst: &k.downsample1},
		{File: "ssim2_hblur", Entry: "hblur", Prefix: blur, Constants: webgpu.Constants{"WG": float64(ssim2HRows), "FMA_NATIVE": fmaNative}, Dst: &k.hblur},
		{File: "ssim2_hblur", Entry: "vblur", Prefix: blur, Constants: webgpu.Constants{"WG": float64(ssim2HRows), "FMA_NATIVE": fmaNative}, Dst: &k.vblur},
		{File: "ssim2_vmaps", Entry: "vmaps", Prefix: blur, Constants: webgpu.Constants{"VX": float64(k.vx), "FMA_NATIVE": fmaNative}, Dst: &k.vmaps},
		{File: "ssim2_vstate", Entry: "vstate", Prefix: blur, Constants: webgpu.Constants{"VX": float64(k.vx), "FMA_NATIVE": fmaNative}, Dst: &k.vstate},
		{File: "ssim2_reduce", Entry: "reduce", Constants: webgpu.Constants{"WG": ssim2RedWG}, Dst: &k.reduce},
	}
	if useH4 {
		pair := 0.0
		if ssim2HBlurPair {
			pair = 1
		}
		ks = append(ks, webgpu.Kernel{File: "ssim2_hblur4", Entry: "hblur4", Prefix: blur,
			Constants: webgpu.Constants{"WG": float64(ssim2HRows), "FMA_NATIVE": fmaNative, "PAIR": pair}, Dst: &k.hblur4})
	}
	if err := webgpu.Compile(g, ks); err != nil {
		return nil, err
	}
	if err := k.compilePyramid(g, color, fmaNative); err != nil {
		return nil, err
	}
	if mode := os.Getenv(ssim2HBlurMode); useH4 && mode != "old" {
		if k.hblur4t, err = k.compileHBlur4t(g, mode != "new"); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

// ssim2Params mirrors the WGSL struct Params (96 bytes).
type ssim2Params struct {
	Width, Height       uint32
	SrcWidth, SrcHeight uint32
	Stride              uint32
	Channels            uint32
	BytesPerSample      uint32
	Blend               uint32
	Scale, Bg           float32
	WinLo, WinHi        uint32 // vmaps: rows [WinLo, WinHi) of this scale are summed
	PartialBase         uint32
	PartialCount        uint32
	Pad0                uint32
	Carry               uint32 // vmaps: offset of the carried recursion state (strips; 0: none)
	BandRows            uint32 // vmaps/vstate: rows per band (0: one band)
	BandBase            uint32 // vmaps/vstate: offset of the band-start states in partials
	Pad1                uint32
	TileY               uint32 // pyramid: first row of 32×32 tiles built (bandwork.go; 0: the whole image)
	Base                uint32 // blurs/maps: the job's plane in every pyramid buffer; unpack/downsample: the X plane
	Base1, Base2        uint32 // unpack/downsample: the Y and B planes
	Pad3                uint32
}

func (p *ssim2Params) bytes() []byte { return webgpu.Bytes(p) }

// ssim2Term is one entry of the reduce kernel's term table (WGSL Term).
type ssim2Term struct{ Base, Count, Pad0, Pad1 uint32 }

// ssim2PassState is what one alpha background needs: its parameter blocks
// and the reference's resident planes.
type ssim2PassState struct {
	bg         float32
	unpackRef  *webgpu.Buffer // uniform: the reference's layout, this bg
	unpackDist *webgpu.Buffer // uniform: the distorted image's layout, this bg
	// Job tables per channel group (jobs.go): hblur4 (widths % 4 == 0)
	// and hblur (the others), vstate and vmaps (all jobs; dims, partial
	// slots, band states).
	h4, h1, vm []ssim2Jobs
	img        []*webgpu.Buffer // reference XYB pyramid (ssim2Scratch.pyr)
	// With ssim2Ref.keep: the reference's finished blurs (pyramids), and
	// the job tables that use them (vm's Params plus the quantity map
	// 0x431 and the kept flag).
	mu1, s11               []*webgpu.Buffer
	keepH4, keepH1, keepVM []ssim2Jobs
}

// ssim2KeepBlurs makes whole-image references keep mu1 and sigma11
// (ssim2Ref.keep). Off: measured on an H200 (SSIM2_PERF.md, "Kept
// reference blurs") the cached score did not get faster (hblur and vmaps
// are latency bound, and fewer quantities only mean fewer threads), while
// Prepare (vblur) and the memory grew. The tests turn it on to check that
// it stays bit-identical.
var ssim2KeepBlurs = false

// Quantity maps of the hblur kernels (Params.stride, 4 bits per dispatch
// row): the reference's img1 and img1² (Prepare), and the distorted
// image's img2, img2², img1·img2 (Score).
const (
	ssim2QRef  = 0x20
	ssim2QDist = 0x431
)

// ssim2Ref is a prepared SSIMULACRA2 reference on the GPU: a whole image,
// or the crop of one strip (strip.go).
type ssim2Ref struct {
	dev    *webgpu.Device
	w, h   int
	plan   []ssim2Scale
	passes []*ssim2PassState
	// win is the row window summed at each scale, [lo, hi) in rows of
	// that scale: [0, H) for a whole image, the interior for a strip.
	win [][2]int
	// planeRows, when larger than h, is the height the resident planes are
	// sized for (strips: the tallest crop, so that every strip's planes
	// are the same pooled buffers).
	planeRows int
	dsParams  []*webgpu.Buffer // uniform per scale (index 0 unused)
	pyrTab    *webgpu.Buffer   // uniform: the fused pyramid's scales (pyrfuse.go)
	distKey   ssim2Layout      // layout the unpackDist blocks were written for
	// keep: the passes hold mu1 and sigma11 (whole images only).
	keep bool
	// Job tables of Prepare's kept blurs: hblur4/hblur of img1 and img1²
	// (dims and ssim2QRef), vblur (all jobs).
	keepPrep4, keepPrep1, keepAll []ssim2Jobs

	// The scoring scratch: the reference's own (ownScratch), or one that
	// the strips of a strip reference share.
	*ssim2Scratch
	ownScratch bool

	mu       sync.Mutex
	released bool
	pipe     webgpu.StagingRing // staging buffers of pipelined scores (pipe.go)
	next     nextCmds           // scores recorded ahead, per slot (prerec.go)
	pending  *webgpu.Readback   // a pipelined run's read-back, handed to its caller
	// Banded pipelined scores (band.go): a staging ring per band, the
	// band layouts made so far (by band count and band work), and seq,
	// held by a banded score from its first submit to its last (and by
	// any other pipelined score around its submit) so that no other
	// score's commands land between its bands on the shared scratch.
	bandRings [ssim2MaxBands]webgpu.StagingRing
	bandSets  map[ssim2BandKey]*ssim2BandSet
	seq       sync.Mutex
	own       webgpu.Buffers // the reference's own buffers (not a shared scratch)
}

// ssim2Scratch is the per-score working set, reused by every Score. It
// fits any reference of the same width, number of passes and scales whose
// planes are at most as tall as the plan it was made for (strips share one
// made for their tallest crop).
type ssim2Scratch struct {
	plan     []ssim2Scale        // the scales it was made for
	pyr      ssim2Pyr            // layout of every pyramid (jobs.go)
	lin      [][3]*webgpu.Buffer // linear RGB per scale
	xyb      []*webgpu.Buffer    // distorted XYB pyramid
	hb       [5][]*webgpu.Buffer // horizontal blurs, one pyramid per quantity
	coef     *webgpu.Buffer      // uniform: the blur constants
	up       webgpu.Upload       // raw sample words (and the staging buffer of large images)
	partials *webgpu.Buffer
	terms    *webgpu.Buffer
	sums     *webgpu.Buffer
	nTerms   int
	sumsHost []float32
	// carry is the offset in partials of the recursion state carried from
	// strip to strip (ssim2_vmaps.wgsl), after the column sums; 0: none.
	carry uint32
	lay   ssim2Sums // the layout of partials

	held webgpu.Buffers // every buffer of the scratch
}

// ssim2Layout is what the unpack kernel needs to know about an image.
type ssim2Layout struct {
	format zenmetrics.PixelFormat
	stride int
	blend  bool
}

func ssim2RawBytes(im *zenmetrics.Image) int64 { return webgpu.RawBytes(im) }

// ssim2Bgs returns the alpha backgrounds libjxl's tool uses: 0.1 and 0.9
// (lower score reported) when the reference has alpha, else 0.5 (which
// only matters if the distorted image has alpha).
func ssim2Bgs(ref *zenmetrics.Image) []float32 {
	if ref.Format.HasAlpha() {
		return []float32{0.1, 0.9}
	}
	return []float32{0.5}
}

// ssim2Estimate is the bytes-per-pixel model of one prepared reference plus
// one score: the resident reference XYB pyramid per pass (and the kept
// blurs' two pyramids when ssim2KeepBlurs), scratch linear planes (3 per
// scale), the distorted XYB pyramid and the five horizontal-blur pyramids
// (every scale and channel at once, jobs.go), the raw upload and the
// partial sums.
func ssim2Estimate(w, h, passes, rawBytes int) int64 {
	n := ssim2EstimateBase(w, h, passes, rawBytes)
	if ssim2KeepBlurs {
		n += ssim2KeepBytes(w, h, passes)
	}
	return n
}

// ssim2EstimateBase is ssim2Estimate without the kept blurs.
func ssim2EstimateBase(w, h, passes, rawBytes int) int64 {
	plan := ssim2Plan(w, h)
	var pyr int64
	for _, s := range plan {
		pyr += int64(s.W) * int64(s.H)
	}
	ch := ssim2ChannelFloats(plan)
	// The partials at the narrowest vmaps workgroups (the most slots).
	part := int64(newSSIM2Sums(plan, passes, 8, ssim2BandRowsEstimate, false).total)
	return 4*(int64(passes)*3*ch+3*pyr+18*ch+part) + int64(rawBytes) + 64<<10
}

// ssim2KeepBytes is what a cached reference's mu1 and sigma11 pyramids
// take: 2 × 3 channels per pass (≈ 32 B/px per pass).
func ssim2KeepBytes(w, h, passes int) int64 {
	return 4 * 6 * int64(passes) * ssim2ChannelFloats(ssim2Plan(w, h))
}

// ssim2BindingBytes is the largest binding of a whole w×h image: one
// channel's pyramid (the pyramids of all three share one buffer only
// where that fits; ssim2PyrBuffers).
func ssim2BindingBytes(w, h int) uint64 {
	return uint64(4 * ssim2ChannelFloats(ssim2Plan(w, h)))
}

func ssim2Check(im *zenmetrics.Image) error {
	if err := im.Validate(); err != nil {
		return err
	}
	if im.Width < ssim2MinSide || im.Height < ssim2MinSide {
		return &zenmetrics.TooSmallError{Metric: zenmetrics.SSIMULACRA2, Width: im.Width, Height: im.Height,
			MinWidth: ssim2MinSide, MinHeight: ssim2MinSide}
	}
	return nil
}

// prepareSSIM2 builds the reference state on the device. With sc the
// reference scores on that (shared) scratch instead of its own, with win
// (one [lo, hi) per scale) it sums only those rows, and its planes are
// sized for planeRows rows when that is more: a strip's crop.
func prepareSSIM2(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, sc *ssim2Scratch, win [][2]int, planeRows int) (*ssim2Ref, error) {
	if err := ssim2Check(ref); err != nil {
		return nil, err
	}
	r := &ssim2Ref{dev: b.Device(), pipe: webgpu.StagingRing{N: ssim2PipeSlots}, w: ref.Width, h: ref.Height, plan: ssim2Plan(ref.Width, ref.Height), ssim2Scratch: sc, win: win,
		planeRows: planeRows}
	for i := range r.bandRings {
		r.bandRings[i].N = ssim2BandSlots
	}
	if win != nil && len(win) != len(r.plan) {
		return nil, fmt.Errorf("webgpu: %d row windows for %d scales", len(win), len(r.plan))
	}
	// Whole images keep mu1 and sigma11 when they fit what is available
	// (unknown: try; allocate falls back when the planes cannot be had).
	if sc == nil && win == nil && planeRows <= ref.Height && ssim2KeepBlurs {
		passes := len(ssim2Bgs(ref))
		need := ssim2Estimate(ref.Width, ref.Height, passes, int(ssim2RawBytes(ref)))
		avail := b.Available()
		r.keep = avail < 0 || need <= avail
	}
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		k, err := kernels(g)
		if err != nil {
			return err
		}
		if err := r.allocate(g, k, ssim2Bgs(ref)); err != nil {
			return err
		}
		e := g.Encoder()
		if err := r.up.Put(g, e, &r.held, ref); err != nil {
			e.Discard()
			return err
		}
		lay := ssim2Layout{format: ref.Format, stride: ref.Stride}
		for _, p := range r.passes {
			lay.blend = ref.Format.HasAlpha()
			g.Write(p.unpackRef, 0, r.unpackParams(lay, p.bg).bytes())
			r.encodeChain(e, k, p, true, false)
		}
		return e.SubmitAndWait()
	})
	if err != nil {
		r.free()
		return nil, err
	}
	return r, nil
}

func (r *ssim2Ref) unpackParams(l ssim2Layout, bg float32) *ssim2Params {
	p := &ssim2Params{Width: uint32(r.w), Height: uint32(r.h), Stride: uint32(l.stride),
		Channels: uint32(l.format.Channels()), BytesPerSample: uint32(l.format.BytesPerSample()), Bg: bg}
	if l.format.BytesPerSample() == 2 {
		p.Scale = float32(1) / float32(65535)
	} else {
		p.Scale = float32(1) / float32(255)
	}
	if l.blend {
		p.Blend = 1
	}
	return r.pyr.withBases(p, 0)
}

// allocate takes the reference's buffers from the pool (and its own
// scratch when it shares none) and writes the constant parameter blocks.
// On error the caller frees what was taken.
func (r *ssim2Ref) allocate(g *webgpu.GPU, k *ssim2Kernels, bgs []float32) error {
	if r.ssim2Scratch == nil {
		sc, err := newSSIM2Scratch(g, r.plan, len(bgs), false, k)
		r.ssim2Scratch, r.ownScratch = sc, true
		if err != nil {
			return err
		}
	} else if !r.fits(r.plan, len(bgs)) {
		return fmt.Errorf("webgpu: SSIMULACRA2 scratch does not fit a %dx%d reference", r.w, r.h)
	}
	if r.win == nil {
		for _, sc := range r.plan {
			r.win = append(r.win, [2]int{0, sc.H})
		}
	}
	t := &r.own
	r.dsParams = make([]*webgpu.Buffer, len(r.plan))
	for s, sc := range r.plan {
		if s > 0 {
			r.dsParams[s] = t.Uniform(g, ssim2ParamBytes)
			if t.Err == nil {
				prev := r.plan[s-1]
				g.Write(r.dsParams[s], 0, r.pyr.withBases(&ssim2Params{Width: uint32(sc.W), Height: uint32(sc.H),
					SrcWidth: uint32(prev.W), SrcHeight: uint32(prev.H)}, s).bytes())
			}
		}
	}
	r.allocPyrTab(g, t)
	for pi, bg := range bgs {
		p := &ssim2PassState{bg: bg}
		r.passes = append(r.passes, p)
		p.unpackRef = t.Uniform(g, ssim2ParamBytes)
		p.unpackDist = t.Uniform(g, ssim2ParamBytes)
		p.img = r.pyr.take(g, t)
		maps := func(s, c int) *ssim2Params { return r.lay.vmapsParams(r.plan, pi, s, c, r.win[s]) }
		p.h4 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.wide(k), maps)
		p.h1 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.narrow(k), maps)
		p.vm = ssim2JobTables(g, t, &r.pyr, r.plan, r.lay.bands, nil, maps)
	}
	if t.Err != nil || !r.keep {
		return t.Err
	}
	return r.allocateKeep(g, k)
}

// wide selects the scales hblur4 blurs (width a multiple of 4), narrow the
// others (the row kernel).
func (r *ssim2Ref) wide(k *ssim2Kernels) func(s int) bool {
	return func(s int) bool { return k.hblur4 != nil && r.plan[s].W%4 == 0 }
}

func (r *ssim2Ref) narrow(k *ssim2Kernels) func(s int) bool {
	w := r.wide(k)
	return func(s int) bool { return !w(s) }
}

// allocateKeep takes the kept planes and their parameter blocks. When they
// cannot be had (out of memory), it gives back what it took and leaves the
// reference on the path that blurs all five quantities at every Score.
func (r *ssim2Ref) allocateKeep(g *webgpu.GPU, k *ssim2Kernels) error {
	var kept webgpu.Buffers
	t := &kept
	prep := func(s, c int) *ssim2Params {
		sc := r.plan[s]
		return &ssim2Params{Width: uint32(sc.W), Height: uint32(sc.H), Stride: ssim2QRef}
	}
	r.keepPrep4 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.wide(k), prep)
	r.keepPrep1 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.narrow(k), prep)
	r.keepAll = ssim2JobTables(g, t, &r.pyr, r.plan, nil, nil, prep)
	for pi, p := range r.passes {
		p.mu1 = r.pyr.take(g, t)
		p.s11 = r.pyr.take(g, t)
		maps := func(s, c int) *ssim2Params {
			mp := r.lay.vmapsParams(r.plan, pi, s, c, r.win[s])
			mp.Stride, mp.Channels = ssim2QDist, 1
			return mp
		}
		p.keepH4 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.wide(k), maps)
		p.keepH1 = ssim2JobTables(g, t, &r.pyr, r.plan, nil, r.narrow(k), maps)
		p.keepVM = ssim2JobTables(g, t, &r.pyr, r.plan, r.lay.bands, nil, maps)
	}
	if t.Err != nil {
		for _, b := range kept.Take() {
			b.Release()
		}
		r.keep, r.keepPrep4, r.keepPrep1, r.keepAll = false, nil, nil, nil
		for _, p := range r.passes {
			p.mu1, p.s11, p.keepH4, p.keepH1, p.keepVM = nil, nil, nil, nil, nil
		}
		var oom *zenmetrics.OutOfMemoryError
		if errors.As(t.Err, &oom) {
			return nil
		}
		return t.Err
	}
	for _, b := range kept.List {
		r.own.Add(b)
	}
	return nil
}

// encodeChain records unpack and downsample (and for a distorted image the
// blurs and maps) for one pass: for the reference (ref = true) the XYB
// pyramid goes to the pass's resident img buffers (and, with keep, its
// mu1 and sigma11 are blurred once); for the distorted image to the
// scratch's xyb, then hblur, vstate and vmaps run every (scale, channel)
// job of a channel group in one dispatch each (jobs.go).
//
// With timed set, every dispatch goes into its own timed pass (labelled
// kernel, scale or channel group) for PassProfile.
func (r *ssim2Ref) encodeChain(e *webgpu.Encoder, k *ssim2Kernels, p *ssim2PassState, ref, timed bool) {
	mark := func(format string, a ...any) {
		if timed {
			e.TimedPass(fmt.Sprintf(format, a...))
		}
	}
	out := r.xyb
	if ref {
		out = p.img
	}
	xo := r.pyr.xybOut(out)
	unpack, down := k.unpack, k.downsample
	if r.pyr.nb == 1 {
		unpack, down = k.unpack1, k.downsample1
	}
	u := p.unpackDist
	if ref {
		u = p.unpackRef
	}
	fused := r.fusedPyramid(k)
	if fused {
		mark("pyramid")
		r.encodePyramid(e, k, u, out)
	}
	for s, sc := range r.plan {
		if fused {
			break
		}
		gx, gy := webgpu.Groups(sc.W, ssim2WG), webgpu.Groups(sc.H, ssim2WG)
		var bufs []*webgpu.Buffer
		pl := down
		if s == 0 {
			mark("unpack s0")
			pl = unpack
			bufs = append(bufs, u, r.up.Raw)
		} else {
			mark("downsample s%d", s)
			in := r.lin[s-1]
			bufs = append(bufs, r.dsParams[s], in[0], in[1], in[2])
		}
		bufs = append(bufs, r.lin[s][0], r.lin[s][1], r.lin[s][2])
		e.Dispatch(pl, gx, gy, 1, append(bufs, xo...)...)
	}
	for gi := range r.pyr.groups() {
		if ref {
			if r.keep {
				r.encodeKeepRef(e, k, p, gi)
			}
			continue
		}
		mark("hblur g%d", gi)
		r.encodeHBlur(e, k, p, gi)
		mark("vstate g%d", gi)
		r.encodeVState(e, k, p, gi)
		mark("vmaps g%d", gi)
		r.encodeVMaps(e, k, p, gi)
	}
}

// hbOf is quantity q's horizontal-blur pyramid buffer of channel group gi.
func (r *ssim2Ref) hbOf(gi int) [5]*webgpu.Buffer {
	var hb [5]*webgpu.Buffer
	for q := range hb {
		hb[q] = r.hb[q][gi]
	}
	return hb
}

// hblur4Dispatch is the pipeline and workgroup grid (x, y) that blur nq
// quantities of rows up to maxH tall with the 16-byte kernel: hblur4, a
// thread per (row, quantity); hblur4t, a workgroup per ssim2HTRows rows
// with every quantity (the quantity map says which).
func (k *ssim2Kernels) hblur4Dispatch(maxH int, nq uint32) (*webgpu.Pipeline, uint32, uint32) {
	if k.hblur4t != nil {
		return k.hblur4t, webgpu.Groups(maxH, ssim2HTRows), 1
	}
	return k.hblur4, webgpu.Groups(maxH, ssim2HRows), nq
}

// encodeHBlur records the horizontal blurs of every job of channel group
// gi (reference pyramid of pass p, distorted r.xyb) into r.hb: the five
// quantities, or with keep the distorted image's three (map ssim2QDist).
// hblur4 takes the jobs whose width is a multiple of 4, the row kernel the
// others.
func (r *ssim2Ref) encodeHBlur(e *webgpu.Encoder, k *ssim2Kernels, p *ssim2PassState, gi int) {
	hb := r.hbOf(gi)
	h4, h1, nq := p.h4[gi], p.h1[gi], uint32(5)
	if r.keep {
		h4, h1, nq = p.keepH4[gi], p.keepH1[gi], 3
	}
	for i, j := range []ssim2Jobs{h4, h1} {
		if j.n == 0 {
			continue
		}
		pl, gx, gy := k.hblur, webgpu.Groups(j.maxH, ssim2HRows), nq
		if i == 0 {
			pl, gx, gy = k.hblur4Dispatch(j.maxH, nq)
		}
		e.Dispatch(pl, gx, gy, uint32(j.n), j.buf, r.coef, p.img[gi], r.xyb[gi],
			hb[0], hb[1], hb[2], hb[3], hb[4])
	}
}

// blurIn is what vstate and vmaps read for the five quantities of group
// gi: the horizontal blurs, with keep mu1 and sigma11 (finished) in the
// places of quantities 0 and 2; and the job table.
func (r *ssim2Ref) blurIn(p *ssim2PassState, gi int) ([5]*webgpu.Buffer, ssim2Jobs) {
	hb := r.hbOf(gi)
	if r.keep {
		hb[0], hb[2] = p.mu1[gi], p.s11[gi]
		return hb, p.keepVM[gi]
	}
	return hb, p.vm[gi]
}

// encodeVState records the band-start states of every job of group gi
// with more than one row band (nothing when none has).
func (r *ssim2Ref) encodeVState(e *webgpu.Encoder, k *ssim2Kernels, p *ssim2PassState, gi int) {
	b, j := r.blurIn(p, gi)
	if !j.bands {
		return
	}
	e.Dispatch(k.vstate, webgpu.Groups(j.maxW, k.vx), 1, uint32(j.n), j.buf, r.coef,
		b[0], b[1], b[2], b[3], b[4], r.partials)
}

// encodeVMaps records the vertical blurs and maps of every job of group gi
// into their partial sums.
func (r *ssim2Ref) encodeVMaps(e *webgpu.Encoder, k *ssim2Kernels, p *ssim2PassState, gi int) {
	b, j := r.blurIn(p, gi)
	e.Dispatch(k.vmaps, webgpu.Groups(j.maxW, k.vx), uint32(j.maxBands), uint32(j.n), j.buf, r.coef,
		b[0], b[1], b[2], b[3], b[4], p.img[gi], r.xyb[gi], r.partials)
}

// encodeKeepRef records, at Prepare, the reference's mu1 and sigma11 of
// channel group gi: hblur of img1 and img1² (map ssim2QRef, into r.hb[0]
// and r.hb[2]), then vblur into the kept pyramids.
func (r *ssim2Ref) encodeKeepRef(e *webgpu.Encoder, k *ssim2Kernels, p *ssim2PassState, gi int) {
	hb := r.hbOf(gi)
	img := p.img[gi]
	for i, j := range []ssim2Jobs{r.keepPrep4[gi], r.keepPrep1[gi]} {
		if j.n == 0 {
			continue
		}
		pl, gx, gy := k.hblur, webgpu.Groups(j.maxH, ssim2HRows), uint32(2)
		if i == 0 {
			pl, gx, gy = k.hblur4Dispatch(j.maxH, 2)
		}
		e.Dispatch(pl, gx, gy, uint32(j.n), j.buf, r.coef, img, img,
			hb[0], hb[1], hb[2], hb[3], hb[4])
	}
	j := r.keepAll[gi]
	e.Dispatch(k.vblur, webgpu.Groups(j.maxW, ssim2HRows), 2, uint32(j.n), j.buf, r.coef, hb[0], hb[2],
		p.mu1[gi], p.s11[gi])
}

// Score implements zenmetrics.Reference.
func (r *ssim2Ref) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	v, err := r.score(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: v}, nil
}

func (r *ssim2Ref) score(ctx context.Context, dist *zenmetrics.Image) (float64, error) {
	if err := dist.Validate(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return 0, zenmetrics.ErrReleased
	}
	if err := webgpu.SizeMismatch(r.w, r.h, dist); err != nil {
		return 0, err
	}
	if r.pipelined(dist) {
		r.mu.Unlock()
		v, err := r.scorePipelined(ctx, dist)
		r.mu.Lock()
		return v, err
	}
	// A banded score of another image may be between its bands (r.seq,
	// taken before r.mu as the pipelined paths do).
	r.mu.Unlock()
	r.seq.Lock()
	defer r.seq.Unlock()
	r.mu.Lock()
	if r.released {
		return 0, zenmetrics.ErrReleased
	}
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		_, err := r.run(g, dist, false, nil)
		return err
	})
	if err != nil {
		return 0, err
	}
	return r.finish(), nil
}

// run uploads dist and records, submits and reads back one score's work
// into r.sumsHost. With timed set, every dispatch is its own timed pass and
// their GPU times are returned (the reduction is the timed pass "reduce";
// the upload copy is outside any pass and not timed).
//
// With pre (a pipelined score, pipe.go) dist's bytes are already in that
// filled staging buffer: it is unmapped and copied instead, and the
// read-back is left in r.pending for the caller to wait on.
func (r *ssim2Ref) run(g *webgpu.GPU, dist *zenmetrics.Image, timed bool, pre *filled) ([]webgpu.PassTime, error) {
	c, err := r.record(g, dist, timed, pre)
	if err != nil {
		return nil, err
	}
	if err := r.submit(g, c, pre); err != nil {
		return nil, err
	}
	if pre != nil {
		r.pending = c.rb
		return nil, nil
	}
	if err := webgpu.ReadSlice(c.rb, r.sumsHost); err != nil {
		return nil, err
	}
	if !timed {
		return nil, nil
	}
	return c.e.PassTimes()
}

// encodeReduce records the final reduction: every (pass, scale, channel,
// term) entry of r.terms sums its slots of r.partials (the per-column,
// per-row-phase compensated sums vmaps writes) into r.sums, two f32 each.
// It turns the per-column partial sums into the per-scale sums the host
// reads back; the row window of a strip is applied earlier, in vmaps.
func (r *ssim2Ref) encodeReduce(e *webgpu.Encoder, k *ssim2Kernels) {
	e.Dispatch(k.reduce, uint32(r.nTerms), 1, 1, r.terms, r.partials, r.sums)
}

// finish turns the read-back sums into the score: per pass the libjxl
// formula, and the lower score over the passes (alpha backgrounds).
func (r *ssim2Ref) finish() float64 {
	return ssim2Finish(r.plan, r.addSums(nil))
}

// finishFrom is finish for sums read into host instead of r.sumsHost.
func (r *ssim2Ref) finishFrom(host []float32) float64 {
	return ssim2Finish(r.plan, r.addSumsFrom(host, nil))
}

// addSums adds the read-back sums (per pass, scale, channel and term) to
// acc, allocating it when nil, and returns it.
func (r *ssim2Ref) addSums(acc [][]ssim2ScaleSums) [][]ssim2ScaleSums {
	return r.addSumsFrom(r.sumsHost, acc)
}

// addSumsFrom is addSums reading host.
func (r *ssim2Ref) addSumsFrom(host []float32, acc [][]ssim2ScaleSums) [][]ssim2ScaleSums {
	if acc == nil {
		acc = make([][]ssim2ScaleSums, len(r.passes))
		for p := range acc {
			acc[p] = make([]ssim2ScaleSums, len(r.plan))
		}
	}
	i := 0
	for p := range r.passes {
		for s := range r.plan {
			for c := 0; c < 3; c++ {
				for q := 0; q < ssim2Terms; q++ {
					acc[p][s][c][q] += float64(host[2*i]) + float64(host[2*i+1])
					i++
				}
			}
		}
	}
	return acc
}

// ssim2Finish is the score from per-pass sums over the image of plan: the
// lower of the passes' libjxl formulas.
func ssim2Finish(plan []ssim2Scale, sums [][]ssim2ScaleSums) float64 {
	best := math.Inf(1)
	for _, ps := range sums {
		best = math.Min(best, ssim2Final(plan, ps))
	}
	return best
}

// Release implements zenmetrics.Reference; it gives the buffers back to the
// device pool. It is idempotent.
func (r *ssim2Ref) Release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	r.mu.Unlock()
	// Pipelined scores may be filling a staging buffer right now: Close
	// waits for them to hand it back before anything is freed.
	bufs := r.pipe.Close(r.dev)
	for i := range r.bandRings {
		bufs = append(bufs, r.bandRings[i].Close(r.dev)...)
	}
	r.dropNext()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.free(bufs...)
}

func (r *ssim2Ref) free(extra ...*webgpu.Buffer) {
	owned := append(r.own.Take(), extra...)
	if r.ownScratch && r.ssim2Scratch != nil {
		owned = append(owned, r.held.Take()...)
	}
	// On a closed or lost device the buffers went with it: nothing to do.
	r.dev.Free(owned)
}

// Bytes is the device memory the reference holds (resident planes plus its
// scoring scratch, unless that is shared).
func (r *ssim2Ref) Bytes() int64 {
	if r.ownScratch && r.ssim2Scratch != nil {
		return r.own.Bytes + r.held.Bytes
	}
	return r.own.Bytes
}
