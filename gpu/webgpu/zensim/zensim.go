// Package zensim is zensim 0.2.7 (imazen/zensim, default profile
// zensim-preview-v0.2) on WebGPU: the host code that drives
// wgsl/zensim_*.wgsl, written on the metric kit of package webgpu.
// Importing it registers the metric with every webgpu.Backend.
//
// The kernels compute cpu/zensim's per-pixel values operation for
// operation (that package's doc is the algorithm): the XYB conversion with
// both of zensim's cube roots, the 2×2 pyramid, the box blur as zensim's
// running sums (horizontal per row; vertical per 16-row strip, restarting
// at each strip as zensim's does) and the SSIM, edge and high-frequency
// values. Only the sums differ in order: per column over a strip in
// float32, per workgroup in a fixed tree, then per scale and channel in a
// fixed tree (no atomics on floats), and the host pools the 20 sums of
// each scale and channel in float64 with cpu/zensim's own Finish (the 228
// weights and the score mapping live only there).
//
// One score, all in one command buffer per band:
//
//	xyb      raw 8/16-bit bytes -> X, Y, B planes (padded width)
//	down     scale s -> s+1 (three planes)
//	per scale, the three channels in one dispatch each:
//	  hblur  one invocation per row: mu1, mu2 (and ssq, s12 in full mode);
//	         at scale 0 also the identical-image flag
//	  vstats one partial slot per strip, 64 columns and channel
//	reduce   per scale and channel: 20 values; read back with the flag.
//
// The horizontal running sums are serial along a row (the CPU's rounding
// depends on the order), so hblur has only as many invocations as rows:
// that is why the three channels share its dispatch, and why a scale's
// three planes live in one buffer (12 bytes per pixel) and hblur binds
// the three channels' outputs (16 bytes per pixel each).
//
// # The cached-reference split
//
// A prepared reference keeps its XYB pyramid on the device; a score
// uploads and converts only the distorted image (whole images of at least
// webgpu.StagingMin bytes through pipe.go's staging slots, so that two
// callers overlap one's upload with the other's GPU work). With ModeStrip the bands'
// reference pyramids stay resident when they fit the memory budget, and
// are otherwise recomputed per score from the host image (Strips reports
// which). plan.go says why strips give the whole image's score bit for bit.
package zensim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuz "github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

func init() { webgpu.Register(zenmetrics.Zensim, impl{}) }

// forceKeep, when not nil, forces the strip reference strategy (tests).
var forceKeep *bool

// zp mirrors zensim_common.wgsl's ZP (64 bytes).
type zp struct {
	W, PW, Rows, Y0, GH   uint32
	Stride, Channels, BPS uint32
	Alpha, K0, Slot, GX   uint32
	Mode, Cmp, Aux, Zero  uint32
}

// kc layout (zensim_xyb.wgsl): opsin constants, then the tables.
const (
	kLUT8  = 16
	kLUT16 = kLUT8 + 256
	kBG    = kLUT16 + 65536
	kLen   = kBG + 4096
)

type kernels struct {
	xyb, down, hblur, vstats, reduce *webgpu.Pipeline
	kc                               *webgpu.Buffer // constants(), once per device
	// FMA is how fused multiply-adds are computed: "native" (the device's
	// fma() is fused) or "emulated" (dssim_common.wgsl's exact emulation);
	// "inexact" when neither is (native is used, last bits may move).
	FMA string
}

// FMAMode reports how the zensim kernels compute fused multiply-adds on
// b's device ("" before the first zensim reference there).
func FMAMode(b *webgpu.Backend) string {
	if k := webgpu.CompiledOn[kernels](b.Device(), "zensim"); k != nil {
		return k.FMA
	}
	return ""
}

// probeFMA runs dssim_fmaprobe.wgsl (io: a, b, c, fma(a, b, c), the
// emulation, the opq zero): a = b = 1 + 2^-12, c = -(1 + 2^-11), whose
// fused result is 2^-24 and unfused 0.
func probeFMA(g *webgpu.GPU, common string) (native, emulated bool, err error) {
	src, err := wgsl.Source("dssim_fmaprobe")
	if err != nil {
		return false, false, err
	}
	return webgpu.ProbeFMA(g, "zensim_fmaprobe", common+src)
}

// constants is the kc table: the opsin constants and cpu/zensim's tables.
func constants() []float32 {
	t := make([]float32, kLen)
	oc := cpuz.OpsinConstants()
	copy(t, oc[:])
	lut8, lut16, bg := cpuz.Tables()
	copy(t[kLUT8:], lut8)
	copy(t[kLUT16:], lut16)
	copy(t[kBG:], bg)
	return t
}

// scalarHblur (tests) compiles hblur without its 16-byte path, under its
// own name, for references prepared while it is set.
var scalarHblur bool

func compile(g *webgpu.GPU) (*kernels, error) {
	name, hbVec := "zensim", 1.0
	if scalarHblur {
		name, hbVec = "zensim/scalar-hblur", 0
	}
	return webgpu.Compiled(g, name, func(g *webgpu.GPU) (*kernels, error) {
		exact, err := wgsl.Source("dssim_common")
		if err != nil {
			return nil, err
		}
		common, err := wgsl.Source("zensim_common")
		if err != nil {
			return nil, err
		}
		var k kernels
		native, emulated, err := probeFMA(g, exact)
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
		pre := exact + common
		c := func(kv ...any) webgpu.Constants {
			m := webgpu.Constants{"FMA_NATIVE": fmaNative}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1].(float64)
			}
			return m
		}
		if err := webgpu.Compile(g, []webgpu.Kernel{
			{File: "zensim_xyb", Entry: "xyb", Prefix: pre, Constants: c("WG_X", float64(wgXY), "WG_Y", float64(wgXY)), Dst: &k.xyb},
			{File: "zensim_xyb", Entry: "down", Prefix: pre, Constants: c("WG_X", float64(wgXY), "WG_Y", float64(wgXY)), Dst: &k.down},
			{File: "zensim_blur", Entry: "hblur", Prefix: pre, Constants: c("WG", float64(wgRow), "HB_VEC", hbVec), Dst: &k.hblur},
			{File: "zensim_blur", Entry: "vstats", Prefix: pre, Constants: c("WG", float64(wgCol)), Dst: &k.vstats},
			{File: "zensim_reduce", Entry: "reduce", Prefix: pre, Constants: c("WG", float64(wgRed)), Dst: &k.reduce},
		}); err != nil {
			return nil, err
		}
		t := constants()
		b, err := g.Storage(int64(len(t)) * 4)
		if err != nil {
			return nil, err
		}
		webgpu.WriteSlice(g, b, 0, t)
		k.kc = b
		return &k, nil
	})
}

// pyramid is one image's X, Y, B planes per scale, the three planes of a
// scale in one buffer.
type pyramid [4]*webgpu.Buffer

// bandBufs are one band's buffers.
type bandBufs struct {
	ref     *pyramid          // resident reference pyramid (kept), else nil
	xybRef  *webgpu.Buffer    // xyb params of the reference
	xybDist *webgpu.Buffer    // xyb params of the distorted image (per score)
	down    []*webgpu.Buffer  // per scale s ≥ 1
	scales  [4]*webgpu.Buffer // per scale: hblur and vstats
}

// reference is a prepared zensim reference on a WebGPU device.
type reference struct {
	dev    *webgpu.Device
	l      *layout
	keep   bool
	k      *kernels
	refImg *zenmetrics.Image // recomputed per score when !keep

	own        webgpu.Buffers
	up         webgpu.Upload
	dist       pyramid
	scratchRef *pyramid          // !keep: the band's reference pyramid, recomputed
	hb         [3]*webgpu.Buffer // per channel: (mu1, mu2, ssq, s12) per pixel, vec4
	part       *webgpu.Buffer
	meta       *webgpu.Buffer
	res        *webgpu.Buffer
	flag       *webgpu.Buffer
	bands      []bandBufs

	// timed: every dispatch in its own timed pass (PassProfile).
	timed bool

	// pipe holds the staging slots of pipelined scores (pipe.go);
	// ringBytes is their size, for Bytes.
	pipe      webgpu.StagingRing
	ringBytes atomic.Int64

	mu       sync.Mutex
	released bool
}

// Strips reports the strip count and whether the reference pyramids stay
// resident (webgpu.StripInfo).
func (r *reference) Strips() (int, bool) { return len(r.l.bands), r.keep }

// Bytes is the device memory the reference holds (webgpu.ReferenceBytes).
func (r *reference) Bytes() int64 { return r.own.Bytes + r.ringBytes.Load() }

// pass starts a timed pass named label when profiling.
func (r *reference) pass(e *webgpu.Encoder, label string, s int) {
	if r.timed {
		e.TimedPass(fmt.Sprintf("%s s%d", label, s))
	}
}

// takePyramid takes the three planes of every scale of a crop of rows rows.
func (r *reference) takePyramid(g *webgpu.GPU, rows int) *pyramid {
	var p pyramid
	for s := 0; s < r.l.g.S; s++ {
		p[s] = r.own.Storage(g, r.l.scaleBytes(s, rows))
	}
	return &p
}

// xybParams are the xyb kernel's parameters for band b of image im.
func (r *reference) xybParams(b *band, im *zenmetrics.Image) zp {
	f := im.Format
	p := zp{W: uint32(r.l.g.w), PW: uint32(r.l.g.pw[0]), Rows: uint32(b.rows[0]), Y0: uint32(b.C0),
		GH: uint32(r.l.g.h), Stride: uint32(im.Stride), Channels: uint32(f.Channels()), BPS: uint32(f.BytesPerSample())}
	if f.HasAlpha() {
		p.Alpha = 1
	}
	return p
}

// take takes every buffer of the layout (device thread) and writes the
// parameters that do not depend on the images.
func (r *reference) take(g *webgpu.GPU, raw int64) error {
	l, o := r.l, &r.own
	r.dist = *r.takePyramid(g, l.maxRows)
	if !r.keep {
		r.scratchRef = r.takePyramid(g, l.maxRows)
	}
	for c := range r.hb {
		r.hb[c] = o.Storage(g, l.hbBytes())
	}
	r.part = o.Storage(g, int64(max(l.g.slots, 1))*nq*4)
	r.meta = o.Storage(g, 8*3*4)
	r.res = o.Storage(g, 4*(nq*3*4+1))
	r.flag = o.Storage(g, 4)
	r.bands = make([]bandBufs, len(l.bands))
	for i := range l.bands {
		b, bb := &l.bands[i], &r.bands[i]
		if r.keep {
			bb.ref = r.takePyramid(g, b.Rows())
		}
		bb.xybRef = o.Uniform(g, 64)
		bb.xybDist = o.Uniform(g, 64)
		for s := 1; s < l.g.S; s++ {
			bb.down = append(bb.down, o.Uniform(g, 64))
		}
		for s := 0; s < l.g.S; s++ {
			bb.scales[s] = o.Uniform(g, 64)
		}
	}
	if o.Err != nil {
		return o.Err
	}
	if err := r.up.Reserve(g, o, raw); err != nil {
		return err
	}
	var meta [24]uint32
	for i := range r.bands {
		b, bb := &l.bands[i], &r.bands[i]
		for s := 1; s < l.g.S; s++ {
			p := zp{PW: uint32(l.g.pw[s]), Rows: uint32(b.rows[s]), Aux: uint32(b.rows[s-1])}
			g.Write(bb.down[s-1], 0, webgpu.Bytes(&p))
		}
		for s := 0; s < l.g.S; s++ {
			p := zp{PW: uint32(l.g.pw[s]), Rows: uint32(b.rows[s]), Y0: uint32(b.C0 >> s), GH: uint32(l.g.gh[s]),
				K0: uint32(b.k0[s]), Slot: uint32(l.g.slot[s]), GX: uint32(l.g.gx[s]), Mode: l.g.packedModes(s),
				Aux: uint32(l.g.ns[s] * l.g.gx[s])}
			if s == 0 {
				p.Cmp = 1 // every scale-0 plane is compared (identical images)
			}
			g.Write(bb.scales[s], 0, webgpu.Bytes(&p))
		}
	}
	for s := 0; s < l.g.S; s++ {
		for c := 0; c < 3; c++ {
			i := 3*s + c
			meta[2*i] = uint32(l.g.slot[s] + c*l.g.ns[s]*l.g.gx[s])
			if l.g.mode[s][c] != cpuz.ModeNone {
				meta[2*i+1] = uint32(l.g.ns[s] * l.g.gx[s])
			}
		}
	}
	g.Write(r.meta, 0, webgpu.Bytes(&meta))
	return o.Err
}

// encodePyramid records the pyramid of the image whose crop is in r.up.Raw.
func (r *reference) encodePyramid(e *webgpu.Encoder, b *band, prm *webgpu.Buffer, bb *bandBufs, out *pyramid) {
	k, g := r.k, &r.l.g
	r.pass(e, "xyb", 0)
	e.Dispatch(k.xyb, webgpu.Groups(g.pw[0], wgXY), webgpu.Groups(b.rows[0], wgXY), 1, prm, k.kc, r.up.Raw, out[0])
	for s := 1; s < g.S; s++ {
		r.pass(e, "down", s)
		e.Dispatch(k.down, webgpu.Groups(g.pw[s], wgXY), webgpu.Groups(max(b.rows[s], 1), wgXY), 1,
			bb.down[s-1], out[s-1], out[s])
	}
}

// encodeStats records the blurs and partial sums of every scale of band i
// against reference pyramid rp, the three channels in each dispatch.
func (r *reference) encodeStats(e *webgpu.Encoder, i int, rp *pyramid) {
	k, g, b, bb := r.k, &r.l.g, &r.l.bands[i], &r.bands[i]
	for s := 0; s < g.S; s++ {
		blur, any := s == 0, false
		for c := 0; c < 3; c++ {
			blur = blur || g.mode[s][c] >= cpuz.ModeEdge
			any = any || g.mode[s][c] != cpuz.ModeNone
		}
		prm := bb.scales[s]
		if blur {
			r.pass(e, "hblur", s)
			e.Dispatch(k.hblur, webgpu.Groups(b.rows[s], wgRow), 3, 1, prm, rp[s], r.dist[s], r.hb[0], r.hb[1], r.hb[2], r.flag)
		}
		if any && b.k1[s] > b.k0[s] {
			r.pass(e, "vstats", s)
			e.Dispatch(k.vstats, uint32(g.gx[s]), uint32(b.k1[s]-b.k0[s]), 3, prm, rp[s], r.dist[s], r.hb[0], r.hb[1], r.hb[2], r.part)
		}
	}
}

// computeRef records and submits the reference pyramid of band i into out.
func (r *reference) computeRef(g *webgpu.GPU, i int, out *pyramid) error {
	b := &r.l.bands[i]
	e := g.Encoder()
	if err := r.up.Put(g, e, &r.own, webgpu.StripCrop(r.refImg, b.C0, b.C1)); err != nil {
		e.Discard()
		return err
	}
	r.encodePyramid(e, b, r.bands[i].xybRef, &r.bands[i], out)
	return e.Submit()
}

// prepare builds a reference for ref with layout l.
func prepare(ctx context.Context, be *webgpu.Backend, ref *zenmetrics.Image, l *layout, keep bool) (*reference, error) {
	r := &reference{dev: be.Device(), l: l, keep: keep, refImg: ref}
	r.pipe.N = pipeSlots
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := compile(g)
		if err != nil {
			return err
		}
		r.k = k
		if err := r.take(g, worstRaw(l.g.w, l.maxRows)); err != nil {
			return err
		}
		for i := range l.bands {
			p := r.xybParams(&l.bands[i], ref)
			g.Write(r.bands[i].xybRef, 0, webgpu.Bytes(&p))
		}
		if !keep {
			return nil
		}
		for i := range l.bands {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := r.computeRef(g, i, r.bands[i].ref); err != nil {
				return err
			}
		}
		if r.piped() && r.up.Staging != nil {
			// Whole images score through the ring's slots (pipe.go): the
			// reference's staging buffer goes back to the pool (the copy
			// out of it already submitted is unaffected).
			r.own.Drop(r.up.Staging)
			r.up.Staging = nil
		}
		return g.Encoder().SubmitAndWait()
	})
	if err != nil {
		r.dev.Free(r.own.Take())
		return nil, err
	}
	if keep {
		r.refImg = nil // not needed again
	}
	return r, nil
}

// Score implements zenmetrics.Reference.
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	res, err := r.ScoreDetail(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.Zensim, Value: res.Score}, nil
}

// ScoreDetail is Score with cpu/zensim's Result: the distance and the 228
// features (tests compare them with the CPU's feature by feature).
func (r *reference) ScoreDetail(ctx context.Context, dist *zenmetrics.Image) (res *cpuz.Result, err error) {
	defer zenmetrics.Recover(&err)
	if err := dist.Validate(); err != nil {
		return nil, err
	}
	if err := webgpu.SizeMismatch(r.l.g.w, r.l.g.h, dist); err != nil {
		return nil, err
	}
	if r.piped() && webgpu.RawBytes(dist) >= webgpu.StagingMin {
		return r.scoreRing(ctx, dist)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	res, _, err = r.run(ctx, dist)
	return res, err
}

// run scores dist (r.mu held); with r.timed it also returns the GPU time
// of every dispatch of the last band (all of a whole image's).
func (r *reference) run(ctx context.Context, dist *zenmetrics.Image) (*cpuz.Result, []webgpu.PassTime, error) {
	var times []webgpu.PassTime
	out := make([]float32, nq*3*4+1)
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		for i := range r.l.bands {
			p := r.xybParams(&r.l.bands[i], dist)
			g.Write(r.bands[i].xybDist, 0, webgpu.Bytes(&p))
		}
		for i := range r.l.bands {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, bb := &r.l.bands[i], &r.bands[i]
			rp := bb.ref
			if !r.keep {
				if err := r.computeRef(g, i, r.scratchRef); err != nil {
					return err
				}
				rp = r.scratchRef
			}
			e := g.Encoder()
			if i == 0 {
				e.Clear(r.flag)
			}
			// A piped reference has no staging buffer of its own (its
			// large uploads go through the ring): here (small images,
			// PassProfile) the bytes go by writeBuffer.
			enc := e
			if r.piped() {
				enc = nil
			}
			if err := r.up.Put(g, enc, &r.own, webgpu.StripCrop(dist, b.C0, b.C1)); err != nil {
				e.Discard()
				return err
			}
			r.encodePyramid(e, b, bb.xybDist, bb, &r.dist)
			r.encodeStats(e, i, rp)
			if i+1 < len(r.l.bands) {
				if err := e.Submit(); err != nil {
					return err
				}
				continue
			}
			r.pass(e, "reduce", 0)
			e.Dispatch(r.k.reduce, uint32(3*r.l.g.S), 1, 1, r.meta, r.part, r.res)
			e.Copy(r.flag, 0, r.res, int64(nq*3*4)*4, 4)
			if err := webgpu.SubmitRead(e, r.res, 0, out); err != nil {
				return err
			}
			if r.timed {
				var err error
				times, err = e.PassTimes()
				return err
			}
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return r.pool(out), times, nil
}

// PassProfile scores dist against a zensim reference of this package with
// every dispatch in its own timed pass and returns the GPU time of each
// ("xyb s0", "down s1", ..., "hblur s0", "vstats s0", ..., "reduce s0");
// nil without TimestampQuery. Timing each dispatch alone serialises
// them, so their sum exceeds a plain score's GPU time a little. Whole
// images only.
func PassProfile(ctx context.Context, ref zenmetrics.Reference, dist *zenmetrics.Image) (times []webgpu.PassTime, err error) {
	defer zenmetrics.Recover(&err)
	r, ok := ref.(*reference)
	if !ok {
		return nil, fmt.Errorf("webgpu: zensim.PassProfile: not a zensim reference of this backend: %w", zenmetrics.ErrBadInput)
	}
	if len(r.l.bands) != 1 {
		return nil, fmt.Errorf("webgpu: zensim.PassProfile: whole-image references only (this one has %d strips): %w", len(r.l.bands), zenmetrics.ErrUnsupported)
	}
	if err := dist.Validate(); err != nil {
		return nil, err
	}
	if err := webgpu.SizeMismatch(r.l.g.w, r.l.g.h, dist); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	r.timed = true
	defer func() { r.timed = false }()
	_, times, err = r.run(ctx, dist)
	return times, err
}

// pool turns the read-back values into cpu/zensim's Result.
func (r *reference) pool(out []float32) *cpuz.Result {
	if math.Float32bits(out[nq*3*4]) == 0 {
		return cpuz.Identical()
	}
	g := &r.l.g
	sums := make([][3]cpuz.Sums, g.S)
	for s := 0; s < g.S; s++ {
		for c := 0; c < 3; c++ {
			v := out[(3*s+c)*nq:]
			f := func(i int) float64 { return float64(v[i]) }
			sums[s][c] = cpuz.Sums{
				SSIM: f(0), SSIM2: f(1), SSIM4: f(2), SSIM8: f(3),
				Art: f(4), Art2: f(5), Art4: f(6), Art8: f(7),
				Det: f(8), Det2: f(9), Det4: f(10), Det8: f(11),
				MSE: f(12), HFSqSrc: f(13), HFSqDst: f(14), HFAbsSrc: f(15), HFAbsDst: f(16),
				SSIMMax: v[17], ArtMax: v[18], DetMax: v[19],
			}
		}
	}
	return cpuz.Finish(g.w, g.h, sums)
}

// Release implements zenmetrics.Reference.
func (r *reference) Release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	r.refImg = nil
	bufs := r.own.Take()
	r.mu.Unlock()
	// Pipelined scores in flight hold slots (not r.mu): Close waits for them.
	bufs = append(bufs, r.pipe.Close(r.dev)...)
	r.dev.Free(bufs)
}

// impl is zensim's webgpu.MetricImpl.
type impl struct{}

// Estimate is the layout's memory model (plan.go: exactly the buffers a
// reference takes) for the worst-case RGBA16 upload; ok is false below
// zensim's 8×8 minimum, for modes other than full and strips, and when a
// buffer or dispatch exceeds the device's limits.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w < cpuz.MinSize || h < cpuz.MinSize {
		return 0, false
	}
	switch mode {
	case zenmetrics.ModeFull:
		_, _, t, err := plan(b, w, h, h, -1)
		return t, err == nil
	case zenmetrics.ModeStrip:
		_, _, t, err := plan(b, w, h, 0, b.Available())
		return t, err == nil
	}
	return 0, false
}

// Prepare converts the reference to its XYB pyramid on the device (whole
// images, refused above the VRAM budget or the limits) or, with ModeStrip,
// per band (resident when every band fits the budget).
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	w, h := ref.Width, ref.Height
	if w < cpuz.MinSize || h < cpuz.MinSize {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.Zensim, Width: w, Height: h, MinWidth: cpuz.MinSize, MinHeight: cpuz.MinSize}
	}
	var (
		l    *layout
		keep bool
		need int64
		err  error
	)
	switch opt.Mode {
	case zenmetrics.ModeFull:
		b.RefreshHeld(ctx)
		l, keep, need, err = plan(b, w, h, h, -1)
	case zenmetrics.ModeStrip:
		b.RefreshHeld(ctx)
		l, keep, need, err = plan(b, w, h, opt.StripHeight, b.Available())
	default:
		return nil, fmt.Errorf("%w: zensim on WebGPU: mode %v", zenmetrics.ErrUnsupported, opt.Mode)
	}
	if err != nil {
		return nil, err
	}
	if err := b.CheckBudget(need); err != nil {
		return nil, err
	}
	return prepare(ctx, b, ref, l, keep)
}
