package butteraugli

import (
	"context"
	"fmt"
	"math"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Butteraugli on WebGPU, mirroring the CPU reference cpu/butteraugli stage
// by stage (which matches libjxl v0.12.0 butteraugli_main).
//
// Passes for one image at one resolution level ("decompose"), all in one
// compute pass:
//
//	opsin      linear RGB -> XYB; the 5-tap mirrored blur is done in the tile
//	rows+col_lf   33-tap blur of X, Y, B -> LF (scaled), XYB -= blur (lf.go)
//	rows+col_mf   15-tap blur of the rest -> MF, HF (X suppressed by Y)
//	rows+col_uhf  7-tap blur of HF X, Y -> new HF, UHF
//	mask_pre, rows+col_plain  masking activity, 13-tap blur
//	erode      reference only: fuzzy erosion -> AC and DC mask weights
//
// and for a distorted image against the reference level ("diff"):
//
//	malta_x    Malta filters on the X differences + HF/MF terms of X, MF of B
//	malta_y    the same for Y + masking-activity term
//	dc         LF terms, weighted by the DC mask
//	combine    sqrt of the masked sum; at full resolution the half-resolution
//	           map is blended in (and with alpha the max of two backgrounds)
//
// then reduce_map / reduce_partials turn the map into its max and the power
// sums of the 3-norm (and the optional p-norm), 8 floats read back; the
// norms themselves are float64 on the host.
//
// Blurs are separable FIRs in two passes (rows, then columns) over tiles in
// workgroup memory; the column pass carries the pointwise step of its stage,
// so no plane is written only to be read once. Borders follow the CPU
// reference: the 5-tap opsin blur mirrors the image, the others cut the
// kernel off at the edge and renormalise.
//
// Buffer layout: every plane is its own buffer of w·h f32 (a 16 MP plane is
// 64 MiB, below lavapipe's 128 MiB binding limit), and no kernel binds more
// than 10 storage buffers. A prepared reference keeps, per alpha background
// and level, its 13 planes resident (LF×3, MF×3, HF×2, UHF×2, masking
// activity, AC and DC mask weights). Scoring uploads only the distorted
// image's raw 8/16-bit bytes and reuses per-reference scratch planes (16
// per level), so a cached reference scores without any allocation.
// Whole-image scores of large images take the pipelined host path of
// pipe.go (the upload filled outside the device thread while the score
// is recorded, large images in row bands).
//
// Precision: f32 throughout like libjxl; where the CPU reference uses
// double (Malta half-open terms, mask curves, alpha blending, sub-level mix)
// the kernels stay in f32, which moves results by a few ulps. The p-norm
// power sums are f32 partial sums in a fixed tree (relative error ~1e-6),
// finished in float64. Every value has one writer and every reduction a
// fixed order: scores are bit-identical run to run.

// bfMinSize is the smallest side libjxl computes a distance map for.
const bfMinSize = 8

// bfReducePer is the number of map values each reduce thread sums.
const bfReducePer = 16

// Tile geometry of the one-output-per-thread blurs (blur.go's old).
const (
	bfRowTX, bfRowTY = 64, 4
	bfColTX, bfColTY = 32, 8
)

// bfParams mirrors the WGSL struct Params (64 bytes).
type bfParams struct {
	Width, Height    uint32
	Stride, Channels uint32
	BPS, Blend       uint32
	Bg               float32
	Mode             uint32
	SrcWidth         uint32
	SrcHeight        uint32
	PNorm            float32
	Intensity        float32
	Row0, RowEnd     uint32 // a row window (win_end in butteraugli_common.wgsl)
	Pad3, Pad4       uint32
}

const bfParamBytes = 64

func (p *bfParams) bytes() []byte { return webgpu.Bytes(p) }

// bfKernels are the compiled pipelines (kernels.go says which versions).
type bfKernels struct {
	unpack, subsample, opsin    *webgpu.Pipeline
	lf                          *bfLF  // the LF pair (lf.go: ZENMETRICS_BA_LF)
	hf, uhf, mask               bfBlur // the other blurs (blur.go: ZENMETRICS_BA_BLUR)
	blur                        string // their version
	maskPre, erode              *webgpu.Pipeline
	maltaX, maltaY, dc, combine *webgpu.Pipeline
	reduceMap, reducePartials   *webgpu.Pipeline

	// malta16: the Malta pair is the 16×16 fallback; maltaBX×maltaBY are
	// the outputs per workgroup of the Malta pair compiled.
	malta16          bool
	maltaBX, maltaBY int
}

func compileButteraugli(g *webgpu.GPU, malta16 bool, lfVariant, blurVariant string) (*bfKernels, error) {
	shared, err := webgpu.Sources("butteraugli_common", "butteraugli_fir", "butteraugli_malta", "butteraugli_malta_cols")
	if err != nil {
		return nil, err
	}
	common, fir, malta, maltaCols := shared[0], shared[1], shared[2], shared[3]
	k := bfKernels{malta16: malta16, blur: blurVariant}
	// Every kernel reads the derived constants and the common helpers; the
	// blurs the FIR helpers, the Malta kernels theirs.
	base := bfPrelude + common
	// The 16×16 fallback is the same column kernels with one row per
	// thread on 16×16 threads (6,912 bytes of workgroup memory).
	mw, mh, mr := bfMaltaW, bfMaltaH, bfMaltaR
	if malta16 {
		mw, mh, mr = 16, 16, 1
	}
	k.maltaBX, k.maltaBY = mw, mh*mr
	maltaPrefix := base + fmt.Sprintf("const MW = %du;\nconst MH = %du;\nconst MR = %du;\n", mw, mh, mr) +
		bfMaltaTile(k.maltaBX, k.maltaBY) + malta + maltaCols
	lf, lfk, err := lfKernels(lfVariant, base, fir)
	if err != nil {
		return nil, err
	}
	k.lf = lf
	blurs, err := compileBlurs(&k, base, fir)
	if err != nil {
		return nil, err
	}
	ks := []webgpu.Kernel{
		{File: "butteraugli_unpack", Entry: "unpack", Prefix: base, Dst: &k.unpack},
		{File: "butteraugli_subsample", Entry: "subsample", Prefix: base, Dst: &k.subsample},
		{File: "butteraugli_opsin", Entry: "opsin", Prefix: base, Dst: &k.opsin},
		{File: "butteraugli_mask", Entry: "mask_pre", Prefix: base, Dst: &k.maskPre},
		{File: "butteraugli_erode", Entry: "erode", Prefix: base, Dst: &k.erode},
		{File: "butteraugli_malta_x", Entry: "malta", Prefix: maltaPrefix, Dst: &k.maltaX},
		{File: "butteraugli_malta_y", Entry: "malta", Prefix: maltaPrefix, Dst: &k.maltaY},
		{File: "butteraugli_dc", Entry: "dc_terms", Prefix: base, Dst: &k.dc},
		{File: "butteraugli_combine", Entry: "combine", Prefix: base, Dst: &k.combine},
		{File: "butteraugli_reduce", Entry: "reduce_map", Prefix: base, Dst: &k.reduceMap},
		{File: "butteraugli_reduce", Entry: "reduce_partials", Prefix: base, Dst: &k.reducePartials},
	}
	if err := webgpu.Compile(g, append(append(ks, lfk...), blurs...)); err != nil {
		return nil, err
	}
	return &k, nil
}

// bfSet is the frequency decomposition of one image at one level.
type bfSet struct {
	lf, mf   [3]*webgpu.Buffer
	hf, uhf  [2]*webgpu.Buffer
	act      *webgpu.Buffer
	mac, mdc *webgpu.Buffer // reference only
}

// bfLevel is one resolution level of a prepared reference.
type bfLevel struct {
	w, h    int
	tag     string            // "s0" full, "s1" half resolution (profile labels)
	params  *webgpu.Buffer    // uniform: size and intensity
	combine [2]*webgpu.Buffer // uniform: combine modes of background 0 and 1
	lin     [3]*webgpu.Buffer // scratch: linear RGB, then blur temporaries, then AC terms
	res2    *webgpu.Buffer    // scratch: B residual, then the DC terms
	dist    bfSet             // scratch: the distorted image's decomposition
	dm      *webgpu.Buffer    // this level's distance map
	refs    []bfSet           // resident: the reference's decomposition per background
}

// butteraugliRef is a prepared Butteraugli reference on a WebGPU device.
type butteraugliRef struct {
	dev       *webgpu.Device
	k         *bfKernels
	w, h      int
	intensity float32
	pnorm     float64
	distMap   bool

	levels  []*bfLevel        // full, then half resolution (when ≥ 8 px)
	kern    [5]*webgpu.Buffer // uniform: opsin, LF, HF, UHF, mask kernels
	subP    *webgpu.Buffer    // uniform: subsample parameters
	unpackP [2]*webgpu.Buffer // uniform: unpack parameters per background (rewritten per layout)
	reduceP [2]*webgpu.Buffer // uniform: reduce_map, reduce_partials
	luts    [3]*webgpu.Buffer // by bytes per sample
	up      webgpu.Upload     // raw sample words (and the staging buffer of large images)
	partial *webgpu.Buffer
	result  *webgpu.Buffer
	groups  uint32

	// What the reduce and unpack uniforms hold, so that a cached score of
	// the same window and layout writes none (each queue write is a staging
	// copy and a device-thread call into Dawn).
	win      [2]int
	winSet   bool
	unpacked [2]bfParams
	unpSet   [2]bool

	shared  bool // scratch is taken from the pool per score (kept strips)
	timed   bool // record a GPU timestamp around each score (benchmarks)
	perPass bool // with timed: one timestamp pair per dispatch (profiling)
	passes  []webgpu.PassTime
	lastGPU float64 // GPU time of the last timed score, ns (0: unknown)

	mu       sync.Mutex
	released bool
	own      webgpu.Buffers

	// pipe is the pipelined host path of whole-image scores (pipe.go);
	// its seq is taken before mu by every score.
	pipe bfPipe
}

// bfCheckOptions validates opt as the CPU reference does and returns the
// intensity target (0 or negative means 80).
func bfCheckOptions(opt zenmetrics.Options) (float64, error) {
	it := opt.IntensityTarget
	if math.IsNaN(it) || math.IsInf(it, 0) {
		return 0, fmt.Errorf("%w: butteraugli intensity target %v", zenmetrics.ErrBadInput, it)
	}
	if it <= 0 {
		it = 80
	}
	if p := opt.PNorm; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return 0, fmt.Errorf("%w: butteraugli p-norm %v", zenmetrics.ErrBadInput, p)
	}
	return it, nil
}

// bfLevels returns the level sizes computed for a w×h image: none below
// 8 px, the half-resolution level only when it is at least 8 px.
func bfLevels(w, h int) [][2]int {
	if w < bfMinSize || h < bfMinSize {
		return nil
	}
	out := [][2]int{{w, h}}
	if sw, sh := (w+1)/2, (h+1)/2; sw >= bfMinSize && sh >= bfMinSize {
		out = append(out, [2]int{sw, sh})
	}
	return out
}

// bfEstimate is the device memory of a prepared reference with the given
// number of backgrounds plus its scoring scratch and a raw upload.
func bfEstimate(w, h, variants int, rawBytes int64) int64 {
	var planes int64
	for _, l := range bfLevels(w, h) {
		n := int64(l[0]) * int64(l[1])
		planes += n * int64(13*variants+16)
	}
	groups := (int64(w)*int64(h) + 256*bfReducePer - 1) / (256 * bfReducePer)
	return 4*planes + rawBytes + 32*groups + 256<<10 + 64<<10
}

// EstimateButteraugli is the device memory in bytes a prepared w×h
// Butteraugli reference plus one Score use, in the worst case (16-bit RGBA
// with alpha: two backgrounds, 8 bytes per pixel uploaded). An opaque 8-bit
// RGB image needs about 37% less (bfEstimate(w, h, 1, 3·w·h)).
func EstimateButteraugli(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return 0
	}
	return bfEstimate(w, h, 2, 8*int64(w)*int64(h))
}

// butteraugliFits reports whether every buffer of a w×h comparison fits
// the device's binding and buffer limits (worst-case raw size).
func butteraugliFits(dev *webgpu.Device, w, h int, rawBytes int64) error {
	lim := dev.Limits()
	plane := int64(w) * int64(h) * 4
	for _, n := range []int64{plane, rawBytes} {
		if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
			return &zenmetrics.OutOfMemoryError{Backend: dev.Name(), Requested: n, Free: -1,
				Detail: fmt.Sprintf("a %d-byte buffer exceeds maxStorageBufferBindingSize %d", n, lim.MaxStorageBufferBindingSize)}
		}
	}
	return nil
}

func bfRawBytes(im *zenmetrics.Image) int64 { return webgpu.RawBytes(im) }

// prepareButteraugli does the reference half of Butteraugli on dev: the
// reference's decomposition stays resident until Release.
func prepareButteraugli(ctx context.Context, dev *webgpu.Device, ref *zenmetrics.Image, opt zenmetrics.Options) (r *butteraugliRef, err error) {
	defer zenmetrics.Recover(&err)
	it, err := bfCheckOptions(opt)
	if err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r = &butteraugliRef{dev: dev, up: webgpu.Upload{Exact: true}, w: ref.Width, h: ref.Height, intensity: float32(it),
		pnorm: opt.PNorm, distMap: opt.DistMap}
	sizes := bfLevels(r.w, r.h)
	if len(sizes) == 0 {
		return r, nil // the map is all zeros: nothing to keep
	}
	if err := butteraugliFits(dev, r.w, r.h, bfRawBytes(ref)); err != nil {
		return nil, err
	}
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	err = dev.Do(ctx, func(g *webgpu.GPU) error {
		k, err := kernels(g)
		if err != nil {
			return err
		}
		r.k = k
		if err := r.allocate(g, sizes, variants); err != nil {
			return err
		}
		e := g.Encoder()
		if err := r.upload(g, e, ref); err != nil {
			e.Discard()
			return err
		}
		for v := 0; v < variants; v++ {
			r.encodeUnpack(g, e, ref, v)
			for li := len(r.levels) - 1; li >= 0; li-- {
				lv := r.levels[li]
				set := lv.refs[v]
				r.encodeDecompose(e, lv, set, true)
				gx, gy := webgpu.Groups(lv.w, 16), webgpu.Groups(lv.h, 16)
				r.mark(e, "erode", lv)
				e.Dispatch(k.erode, gx, gy, 1, lv.params, set.act, set.mac, set.mdc)
			}
		}
		return e.SubmitAndWait()
	})
	if err != nil {
		r.free()
		return nil, err
	}
	return r, nil
}

// allocate takes every buffer from the device pool; on error the caller
// frees what was taken.
func (r *butteraugliRef) allocate(g *webgpu.GPU, sizes [][2]int, variants int) error {
	t := &r.own
	get := func(size int64, uniform bool) *webgpu.Buffer {
		if uniform {
			return t.Uniform(g, size)
		}
		return t.Storage(g, size)
	}
	uniform := func(p *bfParams) *webgpu.Buffer { return webgpu.UniformOf(g, t, p) }
	for i, kn := range []bfKernel{bfKernOpsin, bfKernLF, bfKernHF, bfKernUHF, bfKernMask} {
		r.kern[i] = get(bfKernelBytes, true)
		if r.kern[i] != nil {
			g.Write(r.kern[i], 0, kn.block())
		}
	}
	for li, sz := range sizes {
		n := 4 * int64(sz[0]) * int64(sz[1])
		lv := &bfLevel{w: sz[0], h: sz[1], tag: fmt.Sprintf("s%d", li)}
		base := r.levelParams(sz[0], sz[1])
		lv.params = uniform(&base)
		for v := 0; v < 2; v++ {
			c := base
			if li == 0 && len(sizes) > 1 {
				c.Mode |= 1
				c.SrcWidth = uint32(sizes[1][0])
			}
			if v > 0 {
				c.Mode |= 2
			}
			lv.combine[v] = uniform(&c)
		}
		plane := func() *webgpu.Buffer { return get(n, false) }
		planes3 := func() [3]*webgpu.Buffer { return [3]*webgpu.Buffer{plane(), plane(), plane()} }
		planes2 := func() [2]*webgpu.Buffer { return [2]*webgpu.Buffer{plane(), plane()} }
		for v := 0; v < variants; v++ {
			lv.refs = append(lv.refs, bfSet{lf: planes3(), mf: planes3(), hf: planes2(), uhf: planes2(),
				act: plane(), mac: plane(), mdc: plane()})
		}
		r.levels = append(r.levels, lv)
	}
	if len(sizes) > 1 {
		r.subP = uniform(&bfParams{Width: uint32(sizes[1][0]), Height: uint32(sizes[1][1]),
			SrcWidth: uint32(sizes[0][0]), SrcHeight: uint32(sizes[0][1])})
	}
	r.reduceP[0] = get(bfParamBytes, true)
	r.reduceP[1] = get(bfParamBytes, true)
	r.result = get(32, false)
	r.unpackP[0] = get(bfParamBytes, true)
	r.unpackP[1] = get(bfParamBytes, true)
	if t.Err != nil {
		return t.Err
	}
	r.setWindow(g, 0, r.h)
	return r.allocScratch(g)
}

// setWindow points the reduction at map rows [lo, hi) (a strip's
// interior; the whole map otherwise).
func (r *butteraugliRef) setWindow(g *webgpu.GPU, lo, hi int) {
	n := uint32((hi - lo) * r.w)
	r.groups = (n + 256*bfReducePer - 1) / (256 * bfReducePer)
	if r.winSet && r.win == [2]int{lo, hi} {
		return
	}
	r.win, r.winSet = [2]int{lo, hi}, true
	p0 := bfParams{Stride: uint32(lo * r.w), SrcWidth: bfReducePer, SrcHeight: n, PNorm: float32(r.pnorm)}
	p1 := bfParams{SrcHeight: r.groups, PNorm: float32(r.pnorm)}
	g.Write(r.reduceP[0], 0, p0.bytes())
	g.Write(r.reduceP[1], 0, p1.bytes())
}

// allocScratch takes the per-score planes (linear planes and blur
// temporaries, the distorted decomposition, the map, the reduce partials)
// from the pool. Strips of equal height share them: a kept strip drops
// them after each use (dropScratch) and the next strip gets the same
// buffers back.
func (r *butteraugliRef) allocScratch(g *webgpu.GPU) error {
	// A shared strip's earlier failed take must not fail this one.
	t := &r.own
	t.Err = nil
	get := func(size int64) *webgpu.Buffer { return t.Storage(g, size) }
	for _, lv := range r.levels {
		n := 4 * int64(lv.w) * int64(lv.h)
		plane := func() *webgpu.Buffer { return get(n) }
		planes3 := func() [3]*webgpu.Buffer { return [3]*webgpu.Buffer{plane(), plane(), plane()} }
		planes2 := func() [2]*webgpu.Buffer { return [2]*webgpu.Buffer{plane(), plane()} }
		lv.lin = planes3()
		lv.res2 = plane()
		lv.dist = bfSet{lf: planes3(), mf: planes3(), hf: planes2(), uhf: planes2(), act: plane()}
		lv.dm = plane()
	}
	groups := (int64(r.w)*int64(r.h) + 256*bfReducePer - 1) / (256 * bfReducePer)
	r.partial = get(32 * groups)
	return t.Err
}

// dropScratch gives the per-score buffers (and the upload buffers) back to
// the pool (device thread only).
func (r *butteraugliRef) dropScratch() {
	var bufs []*webgpu.Buffer
	for _, lv := range r.levels {
		bufs = append(bufs, lv.lin[:]...)
		bufs = append(bufs, lv.res2, lv.dm, lv.dist.act)
		bufs = append(bufs, lv.dist.lf[:]...)
		bufs = append(bufs, lv.dist.mf[:]...)
		bufs = append(bufs, lv.dist.hf[:]...)
		bufs = append(bufs, lv.dist.uhf[:]...)
		lv.lin, lv.res2, lv.dm, lv.dist = [3]*webgpu.Buffer{}, nil, nil, bfSet{}
	}
	bufs = append(bufs, r.partial)
	r.partial = nil
	for _, b := range bufs {
		if b != nil {
			r.own.Drop(b)
		}
	}
	r.up.Drop(&r.own)
}

// lut returns the decoding table for bytes-per-sample bps, uploading it the
// first time.
func (r *butteraugliRef) lut(g *webgpu.GPU, bps int) (*webgpu.Buffer, error) {
	if b := r.luts[bps]; b != nil {
		return b, nil
	}
	t := bfLUT(bps)
	b, err := g.Storage(int64(4 * len(t)))
	if err != nil {
		return nil, err
	}
	webgpu.WriteSlice(g, b, 0, t)
	r.own.Add(b)
	r.luts[bps] = b
	return b, nil
}

// upload makes r.up.Raw hold im's raw sample bytes (webgpu.Upload: large
// images through a persistent mappable staging buffer filled in place by
// several goroutines and copied on the GPU at the start of e; queue
// writeBuffer stages through fresh memory and was 3-4× slower on NVIDIA),
// and makes sure the decoding table for its depth exists.
func (r *butteraugliRef) upload(g *webgpu.GPU, e *webgpu.Encoder, im *zenmetrics.Image) error {
	if _, err := r.lut(g, im.Format.BytesPerSample()); err != nil {
		return err
	}
	return r.up.Put(g, e, &r.own, im)
}

// unpackParams is the unpack block of im composited onto background v.
func (r *butteraugliRef) unpackParams(im *zenmetrics.Image, v int) bfParams {
	p := bfParams{Width: uint32(r.w), Height: uint32(r.h), Stride: uint32(im.Stride),
		Channels: uint32(im.Format.Channels()), BPS: uint32(im.Format.BytesPerSample()), Bg: float32(v)}
	if im.Format.HasAlpha() {
		p.Blend = 1
	}
	return p
}

// writeUnpack writes background v's unpack block for im's layout: 64
// bytes through the queue, ahead of the next submit; each background has
// its own block, written only when the layout changes.
func (r *butteraugliRef) writeUnpack(g *webgpu.GPU, im *zenmetrics.Image, v int) {
	if p := r.unpackParams(im, v); !r.unpSet[v] || r.unpacked[v] != p {
		g.Write(r.unpackP[v], 0, p.bytes())
		r.unpacked[v], r.unpSet[v] = p, true
	}
}

// encodeUnpack records the conversion of the uploaded image (composited
// onto background v when it has alpha) into the full level's linear planes
// and, when there is one, the half level's. It writes the unpack block
// first, except with g nil: a pipelined score records without the
// reference's lock and writes the block when it submits (pipe.go).
func (r *butteraugliRef) encodeUnpack(g *webgpu.GPU, e *webgpu.Encoder, im *zenmetrics.Image, v int) {
	if g != nil {
		r.writeUnpack(g, im, v)
	}
	full := r.levels[0]
	lut := r.luts[im.Format.BytesPerSample()]
	r.mark(e, "unpack", full)
	e.Dispatch(r.k.unpack, webgpu.Groups(r.w, 16), webgpu.Groups(r.h, 16), 1, r.unpackP[v], lut, r.up.Raw,
		full.lin[0], full.lin[1], full.lin[2])
	if len(r.levels) > 1 {
		sub := r.levels[1]
		r.mark(e, "subsample", sub)
		e.Dispatch(r.k.subsample, webgpu.Groups(sub.w, 16), webgpu.Groups(sub.h, 16), 1, r.subP,
			full.lin[0], full.lin[1], full.lin[2], sub.lin[0], sub.lin[1], sub.lin[2])
	}
}

// encodeDecompose records the decomposition of the image in lv.lin into
// set (its UHF planes double as the X and Y working planes): with head,
// all of it; without, from the LF column blur on (a banded score's band
// submits recorded the head in row windows: window.go).
func (r *butteraugliRef) encodeDecompose(e *webgpu.Encoder, lv *bfLevel, set bfSet, head bool) {
	k := r.k
	w, h := lv.w, lv.h
	x := set.xyb(lv)
	t := lv.lin
	if head {
		r.encodeHead(e, lv, x, lv.whole())
	}
	r.encodeBlurCols(e, &k.lf.bfBlur, lv, r.kern[1], t[:], x[0], x[1], x[2], set.lf[0], set.lf[1], set.lf[2])
	r.encodeBlur(e, &k.hf, lv, r.kern[2], x[:], t[:], x[0], x[1], set.mf[0], set.mf[1], set.mf[2])
	r.encodeBlur(e, &k.uhf, lv, r.kern[3], x[:2], t[:2], x[0], x[1], set.hf[0], set.hf[1])
	r.mark(e, "maskPre", lv)
	e.Dispatch(k.maskPre, webgpu.Groups(w, 16), webgpu.Groups(h, 16), 1, lv.params, set.hf[0], set.hf[1], set.uhf[0], set.uhf[1], t[2])
	r.encodeBlur(e, &k.mask, lv, r.kern[4], t[2:], t[:1], set.act)
}

// encodeDiff records the distance map of lv.dist against reference
// background v into lv.dm (combine block cv).
func (r *butteraugliRef) encodeDiff(e *webgpu.Encoder, lv *bfLevel, ref bfSet, cv int, sub *webgpu.Buffer) {
	k := r.k
	d := lv.dist
	t := lv.lin
	mx, my := webgpu.Groups(lv.w, k.maltaBX), webgpu.Groups(lv.h, k.maltaBY)
	r.mark(e, "maltaX", lv)
	e.Dispatch(k.maltaX, mx, my, 1, lv.params, ref.uhf[0], d.uhf[0], ref.hf[0], d.hf[0], ref.mf[0], d.mf[0],
		ref.mf[2], d.mf[2], t[0], t[1])
	r.mark(e, "maltaY", lv)
	e.Dispatch(k.maltaY, mx, my, 1, lv.params, ref.uhf[1], d.uhf[1], ref.hf[1], d.hf[1], ref.mf[1], d.mf[1],
		ref.act, d.act, t[2])
	gx, gy := webgpu.Groups(lv.w, 16), webgpu.Groups(lv.h, 16)
	r.mark(e, "dc", lv)
	e.Dispatch(k.dc, gx, gy, 1, lv.params, ref.lf[0], ref.lf[1], ref.lf[2], d.lf[0], d.lf[1], d.lf[2], ref.mdc, lv.res2)
	if sub == nil {
		sub = t[0] // unread (mode bit 0 clear); any read-only binding will do
	}
	r.mark(e, "combine", lv)
	e.Dispatch(k.combine, gx, gy, 1, lv.combine[cv], t[0], t[1], t[2], lv.res2, ref.mac, sub, lv.dm)
}

// mark starts a new timed pass per dispatch when profiling, labelled
// "kernel level" ("opsin s0", "maltaX s1"; the reductions have no level),
// the form cmd/zmbench's -profile table groups by.
func (r *butteraugliRef) mark(e *webgpu.Encoder, kernel string, lv *bfLevel) {
	if r.timed && r.perPass {
		if lv != nil {
			kernel += " " + lv.tag
		}
		e.TimedPass(kernel)
	}
}

// bfResult is one comparison's numbers.
type bfResult struct {
	max, pnorm3, pnorm float64
	dm                 []float32
}

// Score implements zenmetrics.Reference: Value is the maximum of the
// distance map, Extras["pnorm3"] the 3-norm, Extras["pnorm"] the
// Options.PNorm-norm when asked for, DistMap the map when asked for.
func (r *butteraugliRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	res, err := r.score(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	sc = zenmetrics.Score{Metric: zenmetrics.Butteraugli, Value: res.max,
		Extras: map[string]float64{"pnorm3": res.pnorm3}}
	if r.pnorm > 0 {
		sc.Extras["pnorm"] = res.pnorm
	}
	if r.distMap {
		sc.DistMap = &zenmetrics.FloatPlane{Width: r.w, Height: r.h, Pix: res.dm}
	}
	return sc, nil
}

func (r *butteraugliRef) score(ctx context.Context, dist *zenmetrics.Image) (bfResult, error) {
	ws, err := r.scoreWindow(ctx, dist, 0, r.h)
	if err != nil {
		return bfResult{}, err
	}
	return ws.result(r.pnorm), nil
}

// bfSums is the reduction of a window of the distance map: its maximum
// and the power sums of ComputeDistanceP (d^3, d^6, d^12, then d^p, d^2p,
// d^4p) over n values. Windows add (strips).
type bfSums struct {
	max float64
	s   [6]float64
	n   float64
	dm  []float32 // the window's rows of the map, when asked for
}

func (a *bfSums) add(b bfSums) {
	a.max = max(a.max, b.max)
	for i := range a.s {
		a.s[i] += b.s[i]
	}
	a.n += b.n
}

// result turns the sums into the scores (libjxl's ComputeDistanceP).
func (a *bfSums) result(pnorm float64) bfResult {
	res := bfResult{max: a.max, dm: a.dm}
	if a.n == 0 {
		return res
	}
	res.pnorm3 = bfNorm64(a.s[0:3], a.n, 3)
	if pnorm > 0 {
		res.pnorm = bfNorm64(a.s[3:6], a.n, pnorm)
	}
	return res
}

// scoreWindow scores dist against the reference and reduces map rows
// [lo, hi) only (a strip's interior; 0, h for the whole image).
func (r *butteraugliRef) scoreWindow(ctx context.Context, dist *zenmetrics.Image, lo, hi int) (bfSums, error) {
	if err := dist.Validate(); err != nil {
		return bfSums{}, err
	}
	if r.pipelined(dist, lo, hi) {
		return r.scorePipelined(ctx, dist)
	}
	// A banded score may be between its bands (pipe.go's seq, taken
	// before mu as the pipelined paths do).
	r.pipe.seq.Lock()
	defer r.pipe.seq.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return bfSums{}, zenmetrics.ErrReleased
	}
	if err := webgpu.SizeMismatch(r.w, r.h, dist); err != nil {
		return bfSums{}, err
	}
	if err := ctx.Err(); err != nil {
		return bfSums{}, err
	}
	if lo < 0 || hi > r.h || lo >= hi {
		return bfSums{}, fmt.Errorf("webgpu: butteraugli window [%d, %d) of %d rows", lo, hi, r.h)
	}
	n := (hi - lo) * r.w
	if len(r.levels) == 0 {
		ws := bfSums{n: float64(n)}
		if r.distMap {
			ws.dm = make([]float32, n)
		}
		return ws, nil
	}
	if err := butteraugliFits(r.dev, r.w, r.h, bfRawBytes(dist)); err != nil {
		return bfSums{}, err
	}
	var sums [8]float32
	var dm []float32
	if r.distMap {
		dm = make([]float32, n)
	}
	ph := newPhases()
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		ph.lap(&ph.take)
		if r.shared {
			if err := r.allocScratch(g); err != nil {
				r.dropScratch()
				return err
			}
			defer r.dropScratch()
		}
		r.setWindow(g, lo, hi)
		e := g.Encoder()
		if err := r.upload(g, e, dist); err != nil {
			e.Discard()
			return err
		}
		ph.lap(&ph.fill)
		if r.timed && !r.perPass {
			e.TimedPass("butteraugli")
		}
		r.encodeScore(g, e, dist)
		rb, err := e.ReadBack(r.result, 0, 32)
		if err != nil {
			e.Discard()
			return err
		}
		var rdm *webgpu.Readback
		if dm != nil {
			if rdm, err = e.ReadBack(r.levels[0].dm, 4*int64(lo)*int64(r.w), int64(4*len(dm))); err != nil {
				e.Discard()
				return err
			}
		}
		if err := e.Submit(); err != nil {
			return err
		}
		ph.lap(&ph.submit)
		if err := webgpu.ReadSlice(rb, sums[:]); err != nil {
			return err
		}
		ph.lap(&ph.wait)
		if r.timed {
			r.lastGPU = 0
			if pt, err := e.PassTimes(); err == nil && len(pt) > 0 {
				r.lastGPU = float64(pt[len(pt)-1].EndNS - pt[0].BeginNS)
				r.passes = pt
			}
		}
		if rdm != nil {
			return webgpu.ReadSlice(rdm, dm)
		}
		return nil
	})
	if err != nil {
		return bfSums{}, err
	}
	ph.print(r.w, r.h, lo, hi)
	ws := bfSums{max: float64(sums[0]), n: float64(n), dm: dm}
	for i := range ws.s {
		ws.s[i] = float64(sums[1+i])
	}
	return ws, nil
}

// variants is how many backgrounds a score of dist composites onto.
func (r *butteraugliRef) variants(dist *zenmetrics.Image) int {
	if dist.Format.HasAlpha() {
		return 2
	}
	return len(r.levels[0].refs)
}

// encodeScore records everything one distorted image needs after its
// upload: per background the unpack, both levels' decomposition and
// distance maps, then the reduction into r.result (g nil: encodeUnpack).
func (r *butteraugliRef) encodeScore(g *webgpu.GPU, e *webgpu.Encoder, dist *zenmetrics.Image) {
	for v := 0; v < r.variants(dist); v++ {
		r.encodeUnpack(g, e, dist, v)
		r.encodeLevels(e, v, true)
	}
	r.encodeReduce(e)
}

// encodeLevels records, for background v, both levels' decomposition of
// the unpacked image (without head: from the LF column blur on, see
// encodeDecompose) and their distance maps.
func (r *butteraugliRef) encodeLevels(e *webgpu.Encoder, v int, head bool) {
	var sub *webgpu.Buffer
	for li := len(r.levels) - 1; li >= 0; li-- {
		lv := r.levels[li]
		r.encodeDecompose(e, lv, lv.dist, head)
		ref := lv.refs[min(v, len(lv.refs)-1)]
		cv := 0
		if li == 0 && v > 0 {
			cv = 1
		}
		if li == 0 {
			r.encodeDiff(e, lv, ref, cv, sub)
		} else {
			r.encodeDiff(e, lv, ref, 0, nil)
			sub = lv.dm
		}
	}
}

// encodeReduce records the reduction of the map into r.result.
func (r *butteraugliRef) encodeReduce(e *webgpu.Encoder) {
	r.mark(e, "reduceMap", nil)
	e.Dispatch(r.k.reduceMap, r.groups, 1, 1, r.reduceP[0], r.levels[0].dm, r.partial)
	r.mark(e, "reducePartials", nil)
	e.Dispatch(r.k.reducePartials, 1, 1, 1, r.reduceP[1], r.partial, r.result)
}

// bfNorm64 is libjxl's ComputeDistanceP from the power sums of d^p, d^2p
// and d^4p over n values.
func bfNorm64(s []float64, n, p float64) float64 {
	v := 0.0
	for i := 0; i < 3; i++ {
		v += math.Pow(s[i]/n, 1.0/(p*float64(int(1)<<i)))
	}
	return v / 3
}

// Release implements zenmetrics.Reference; it gives the buffers back to the
// device pool. It is idempotent.
func (r *butteraugliRef) Release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	r.mu.Unlock()
	// Pipelined scores may be filling a staging slot right now (without
	// the lock): the rings' Close waits for them to hand it back.
	bufs := r.pipe.close(r.dev)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dev.Free(append(r.own.Take(), bufs...))
}

func (r *butteraugliRef) free() { r.dev.Free(append(r.own.Take(), r.pipe.close(r.dev)...)) }

// Bytes is the device memory the reference holds.
func (r *butteraugliRef) Bytes() int64 { return r.own.Bytes }
