// Package dssim is DSSIM (kornelski/dssim, dssim-core 3.4.0) on WebGPU: the
// host code that drives wgsl/dssim_*.wgsl, written on the metric kit of
// package webgpu. Importing it registers the metric with every
// webgpu.Backend. The algorithm, every constant and the order of every
// float32 operation are those of the CPU reference cpu/dssim (its package
// doc describes them); this file says how they map onto the GPU.
//
// Per image and strip (a full image is one strip), all in one command
// buffer:
//
//	unpack   raw 8/16-bit bytes -> linear RGBA (vec4 per pixel)
//	per scale s (up to 5):
//	  lab      linear -> (L, a, b) with the alpha background pattern
//	  chroma   a and b replaced by their blur
//	  stats    (mu.xyz, sigma²) = blur(img), channel mean of blur(img²) - mu²
//	  down     linear -> scale s+1 (2×2 means)
//	and for the distorted image, per scale:
//	  ssim     the cross blur and the SSIM formula -> the owned map rows
//	  sums     per-workgroup sums of (m - 1)
//	then mean (per scale: the map mean and avg^(0.5^s)), devs (per-workgroup
//	sums of |avg - m| and counts), finish (per scale) and 8 floats per scale
//	read back; the host pools in float64 (dssim_reduce.wgsl says how the
//	f32 avg is corrected to the float64 one).
//
// The kernels keep dssim-core's float32 order exactly (dssim_common.wgsl:
// opaque intermediates, fused multiply-adds native where a probe finds
// fma() fused and emulated elsewhere, correctly rounded division), so the
// SSIM maps are cpu/dssim's bit for bit (measured on lavapipe).
//
// A prepared reference keeps its img and mu planes of every scale on the
// device (32 bytes per pixel × 4/3); a score computes only the distorted
// side, reusing the reference's scratch, and allocates nothing once the
// first score has taken its staging slot (whole images of at least
// webgpu.StagingMin bytes score through pipe.go's two slots, so that two
// callers overlap one's upload with the other's GPU work). With
// ModeStrip the same runs per band (plan.go says why the halo makes strip
// maps equal to the full map); when the reference planes of every band do
// not fit next to the scratch, the reference bands are recomputed per
// score from the host image instead (Strips reports which).
//
// Every value has one writer and every reduction a fixed order: scores are
// bit-identical run to run.
package dssim

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

func init() { webgpu.Register(zenmetrics.DSSIM, impl{}) }

// forceKeep, when not nil, forces the strip reference strategy (tests).
var forceKeep *bool

// params mirrors dssim_common.wgsl's Params (64 bytes).
type params struct {
	Width, Height, YOff, Alpha uint32
	Stride, Channels, BPS      uint32
	Row0, Row1, Slot, Scale    uint32
	Pad                        [5]uint32
}

// scaleInfo mirrors dssim_reduce.wgsl's Scale.
type scaleInfo struct {
	Slot, Count, N uint32
	Expo           float32
}

const kernelsName = "dssim"

// Workgroup shape of the per-pixel kernels (dssim_color's WG_X, WG_Y and
// dssim_blur's tile TX × TY).
const wgX, wgY = 16, 8

type kernels struct {
	unpack, down, lab        *webgpu.Pipeline
	chroma, stats, ssim      *webgpu.Pipeline
	sums, devs, mean, finish *webgpu.Pipeline
	kc                       *webgpu.Buffer // constants(), once per device
	// FMA says how fused multiply-adds are computed: "native" (the
	// device's fma() is fused), "emulated" (it is not; dssim_common.wgsl
	// emulates it) or "inexact" (neither gave the fused result; native is
	// used and scores may move in the last digits).
	FMA string
}

// FMAMode reports how the DSSIM kernels compute fused multiply-adds on b's
// device ("" before the first DSSIM reference there).
func FMAMode(b *webgpu.Backend) string {
	if k := webgpu.CompiledOn[kernels](b.Device(), kernelsName); k != nil {
		return k.FMA
	}
	return ""
}

// probeFMA runs dssim_fmaprobe.wgsl: a = b = 1 + 2^-12, c = -(1 + 2^-11),
// so a·b + c = 2^-24 when fused and 0 when the product is rounded first.
func probeFMA(g *webgpu.GPU, common string) (native, emulated bool, err error) {
	src, err := wgsl.Source("dssim_fmaprobe")
	if err != nil {
		return false, false, err
	}
	return webgpu.ProbeFMA(g, "dssim_fmaprobe", common+src)
}

func compile(g *webgpu.GPU) (*kernels, error) {
	return webgpu.Compiled(g, kernelsName, func(g *webgpu.GPU) (*kernels, error) {
		common, err := wgsl.Source("dssim_common")
		if err != nil {
			return nil, err
		}
		var k kernels
		native, emulated, err := probeFMA(g, common)
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
		if v := os.Getenv("ZENMETRICS_DSSIM_FMA"); v == "emulated" {
			k.FMA, fmaNative = "emulated (forced)", 0
		}
		wg := webgpu.Constants{"WG_X": wgX, "WG_Y": wgY, "FMA_NATIVE": fmaNative}
		fm := webgpu.Constants{"FMA_NATIVE": fmaNative}
		if err := webgpu.Compile(g, []webgpu.Kernel{
			{File: "dssim_color", Entry: "unpack", Prefix: common, Constants: wg, Dst: &k.unpack},
			{File: "dssim_color", Entry: "down", Prefix: common, Constants: wg, Dst: &k.down},
			{File: "dssim_color", Entry: "lab", Prefix: common, Constants: wg, Dst: &k.lab},
			{File: "dssim_blur", Entry: "chroma", Prefix: common, Constants: fm, Dst: &k.chroma},
			{File: "dssim_blur", Entry: "stats", Prefix: common, Constants: fm, Dst: &k.stats},
			{File: "dssim_blur", Entry: "ssim", Prefix: common, Constants: fm, Dst: &k.ssim},
			{File: "dssim_reduce", Entry: "sums", Prefix: common, Constants: fm, Dst: &k.sums},
			{File: "dssim_reduce", Entry: "devs", Prefix: common, Constants: fm, Dst: &k.devs},
			{File: "dssim_reduce", Entry: "mean", Prefix: common, Constants: fm, Dst: &k.mean},
			{File: "dssim_reduce", Entry: "finish", Prefix: common, Constants: fm, Dst: &k.finish},
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

// planes are one image's per-scale img and mu planes (vec4 per pixel).
type planes struct{ img, mu [maxScales]*webgpu.Buffer }

// bandBufs are one strip's buffers.
type bandBufs struct {
	ref   *planes                   // resident reference planes (kept), else nil
	maps  [maxScales]*webgpu.Buffer // owned SSIM map rows per scale
	refP  []*webgpu.Buffer          // reference params: unpack, per scale, per down
	distP []*webgpu.Buffer          // the same for the distorted image
}

// reference is a prepared DSSIM reference on a WebGPU device.
type reference struct {
	dev     *webgpu.Device
	name    string
	k       *kernels
	p       *plan
	keep    bool
	distMap bool
	refImg  *zenmetrics.Image // recomputed per score when !keep

	own        webgpu.Buffers
	up         webgpu.Upload
	linA, linB *webgpu.Buffer
	lab        *webgpu.Buffer
	dist       planes
	scratchRef *planes // !keep: the reference band being recomputed
	bands      []bandBufs
	slots      *webgpu.Buffer
	scales     *webgpu.Buffer
	res        *webgpu.Buffer

	// timed: every dispatch in its own timed pass (PassProfile).
	timed bool

	// pipe holds the staging slots of pipelined scores (pipe.go);
	// ringBytes is their size, for Bytes.
	pipe      webgpu.StagingRing
	ringBytes atomic.Int64

	mu       sync.Mutex
	released bool
}

// pass starts a timed pass labelled label when profiling.
func (r *reference) pass(e *webgpu.Encoder, format string, a ...any) {
	if r.timed {
		e.TimedPass(fmt.Sprintf(format, a...))
	}
}

// Strips reports the strip count and whether the reference planes stay
// resident (webgpu.StripInfo).
func (r *reference) Strips() (int, bool) { return len(r.p.bands), r.keep }

// Bytes is the device memory the reference holds (webgpu.ReferenceBytes).
func (r *reference) Bytes() int64 { return r.own.Bytes + r.ringBytes.Load() }

// levelParams are the parameters of scale s of band b for an image of
// format f and stride.
func levelParams(b *band, s int, im *zenmetrics.Image) params {
	l := b.lv[s]
	f := im.Format
	p := params{Width: uint32(l.w), Height: uint32(l.rows), YOff: uint32(b.C0 >> s),
		Stride: uint32(im.Stride), Channels: uint32(f.Channels()), BPS: uint32(f.BytesPerSample()),
		Row0: uint32(l.own0), Row1: uint32(l.own1), Slot: uint32(l.slot), Scale: uint32(s)}
	if f.HasAlpha() {
		p.Alpha = 1
	}
	return p
}

// sideParams fills a side's uniform buffers (unpack, per scale, per down).
func (r *reference) sideParams(g *webgpu.GPU, b *band, bufs []*webgpu.Buffer, im *zenmetrics.Image) {
	S := r.p.scales
	for s := 0; s < S; s++ {
		p := levelParams(b, s, im)
		if s == 0 {
			g.Write(bufs[0], 0, webgpu.Bytes(&p))
		}
		g.Write(bufs[1+s], 0, webgpu.Bytes(&p))
		if s > 0 {
			d := p
			d.Stride = uint32(b.lv[s-1].w) // down: the source width
			g.Write(bufs[S+s], 0, webgpu.Bytes(&d))
		}
	}
}

// encodeSide records the pyramid of the image whose crop is in r.up.Raw:
// img and mu planes of every scale into out.
func (r *reference) encodeSide(e *webgpu.Encoder, b *band, prm []*webgpu.Buffer, out *planes) {
	k, S := r.k, r.p.scales
	l0 := b.lv[0]
	r.pass(e, "unpack")
	e.Dispatch(k.unpack, webgpu.Groups(l0.w, wgX), webgpu.Groups(l0.rows, wgY), 1, prm[0], k.kc, r.up.Raw, r.linA)
	cur, next := r.linA, r.linB
	for s := 0; s < S; s++ {
		l := b.lv[s]
		if l.rows == 0 || l.w == 0 {
			break
		}
		gx, gy := webgpu.Groups(l.w, wgX), webgpu.Groups(l.rows, wgY)
		r.pass(e, "lab s%d", s)
		e.Dispatch(k.lab, gx, gy, 1, prm[1+s], k.kc, cur, r.lab)
		r.pass(e, "chroma s%d", s)
		e.Dispatch(k.chroma, gx, gy, 1, prm[1+s], r.lab, out.img[s])
		r.pass(e, "stats s%d", s)
		e.Dispatch(k.stats, gx, gy, 1, prm[1+s], out.img[s], out.mu[s])
		if s+1 < S && b.lv[s+1].rows > 0 && b.lv[s+1].w > 0 {
			n := b.lv[s+1]
			r.pass(e, "down s%d", s+1)
			e.Dispatch(k.down, webgpu.Groups(n.w, wgX), webgpu.Groups(n.rows, wgY), 1, prm[S+s+1], cur, next)
			cur, next = next, cur
		}
	}
}

// encodeMaps records the SSIM maps of band i (reference planes rp) and
// their first partial sums.
func (r *reference) encodeMaps(e *webgpu.Encoder, i int, rp *planes) {
	k, b, bb := r.k, &r.p.bands[i], &r.bands[i]
	for s := 0; s < r.p.scales; s++ {
		l := b.lv[s]
		if l.owned() == 0 {
			continue
		}
		prm := bb.distP[1+s]
		r.pass(e, "ssim s%d", s)
		e.Dispatch(k.ssim, webgpu.Groups(l.w, wgX), webgpu.Groups(l.own1-l.own0, wgY), 1,
			prm, k.kc, rp.img[s], rp.mu[s], r.dist.img[s], r.dist.mu[s], bb.maps[s])
		r.pass(e, "sums s%d", s)
		e.Dispatch(k.sums, uint32(l.slots), 1, 1, prm, bb.maps[s], r.slots)
	}
}

// encodePool records the pooling of every band's maps into r.res.
func (r *reference) encodePool(e *webgpu.Encoder) {
	k := r.k
	r.pass(e, "pool")
	e.Dispatch(k.mean, uint32(r.p.scales), 1, 1, r.scales, r.slots, r.res)
	for i := range r.p.bands {
		b, bb := &r.p.bands[i], &r.bands[i]
		for s := 0; s < r.p.scales; s++ {
			if b.lv[s].owned() == 0 {
				continue
			}
			e.Dispatch(k.devs, uint32(b.lv[s].slots), 1, 1, bb.distP[1+s], bb.maps[s], r.slots, r.res)
		}
	}
	e.Dispatch(k.finish, uint32(r.p.scales), 1, 1, r.scales, r.slots, r.res)
}

// pool finishes dssim-core's pooling in float64 from the read-back
// results (8 per scale, see dssim_reduce.wgsl).
func (r *reference) pool(res []float32) float64 {
	var sum, wsum float64
	for s := 0; s < r.p.scales; s++ {
		v := res[8*s : 8*s+8]
		n := float64(int64(r.p.w>>s) * int64(r.p.h>>s))
		mean := 1 + (float64(v[0])+float64(v[1]))/n
		avg := math.Pow(math.Max(mean, 0), math.Pow(0.5, float64(s)))
		avgF := float64(v[2])
		dev := float64(v[3]) + float64(v[4])
		lt, gt := float64(math.Float32bits(v[5])), float64(math.Float32bits(v[6]))
		d := avg - avgF
		dev += d*(lt-gt) + math.Abs(d)*(n-lt-gt)
		score := 1 - dev/n
		sum += score * scaleWeights[s]
		wsum += scaleWeights[s]
	}
	return 1/math.Max(sum/wsum, dssimEpsilon) - 1
}

// take takes every buffer of the plan into r.own (device thread).
func (r *reference) take(g *webgpu.GPU, raw int64) error {
	p, S := r.p, r.p.scales
	rows := p.maxRows
	o := &r.own
	r.linA = o.Storage(g, bytesVec4*scalePixels(p.w, rows, 0))
	r.linB = o.Storage(g, bytesVec4*max(1, scalePixels(p.w, rows, 1)))
	r.lab = o.Storage(g, bytesVec4*scalePixels(p.w, rows, 0))
	side := func() *planes {
		var pl planes
		for s := 0; s < S; s++ {
			n := bytesVec4 * max(1, scalePixels(p.w, rows, s))
			pl.img[s] = o.Storage(g, n)
			pl.mu[s] = o.Storage(g, n)
		}
		return &pl
	}
	r.dist = *side()
	if !r.keep {
		r.scratchRef = side()
	}
	r.bands = make([]bandBufs, len(p.bands))
	for i := range p.bands {
		b, bb := &p.bands[i], &r.bands[i]
		if r.keep {
			var pl planes
			for s := 0; s < S; s++ {
				n := bytesVec4 * max(1, int64(b.lv[s].w)*int64(b.lv[s].rows))
				pl.img[s] = o.Storage(g, n)
				pl.mu[s] = o.Storage(g, n)
			}
			bb.ref = &pl
		}
		for s := 0; s < S; s++ {
			bb.maps[s] = o.Storage(g, 4*max(1, int64(b.lv[s].owned())))
		}
		bb.refP = make([]*webgpu.Buffer, 2*S)
		bb.distP = make([]*webgpu.Buffer, 2*S)
		for j := range bb.refP {
			bb.refP[j] = o.Uniform(g, 64)
			bb.distP[j] = o.Uniform(g, 64)
		}
	}
	r.slots = o.Storage(g, int64(max(1, p.slots))*slotBytes)
	r.scales = o.Storage(g, int64(maxScales)*16)
	r.res = o.Storage(g, int64(maxScales)*32)
	if o.Err != nil {
		return o.Err
	}
	if err := r.up.Reserve(g, o, raw); err != nil {
		return err
	}
	var sc [maxScales]scaleInfo
	for s := 0; s < S; s++ {
		sc[s] = scaleInfo{Slot: uint32(p.slotBase[s]), Count: uint32(p.slotCount[s]),
			N: uint32(int64(p.w>>s) * int64(p.h>>s)), Expo: float32(math.Pow(0.5, float64(s)))}
	}
	g.Write(r.scales, 0, webgpu.Bytes(&sc))
	return o.Err
}

// computeRef records and submits the reference side of band i into out.
func (r *reference) computeRef(g *webgpu.GPU, i int, out *planes) error {
	b := &r.p.bands[i]
	e := g.Encoder()
	if err := r.up.Put(g, e, &r.own, webgpu.StripCrop(r.refImg, b.C0, b.C1)); err != nil {
		e.Discard()
		return err
	}
	r.encodeSide(e, b, r.bands[i].refP, out)
	return e.Submit()
}

// prepare builds a reference for ref with plan p (keep: reference planes
// resident for every band).
func prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, p *plan, keep, distMap bool) (*reference, error) {
	r := &reference{dev: b.Device(), name: b.Name(), p: p, keep: keep, distMap: distMap, refImg: ref}
	r.pipe.N = pipeSlots
	raw := cropRaw(ref.Width, p.maxRows, ref.Stride, ref.Format)
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := compile(g)
		if err != nil {
			return err
		}
		r.k = k
		if err := r.take(g, raw); err != nil {
			return err
		}
		for i := range p.bands {
			r.sideParams(g, &p.bands[i], r.bands[i].refP, ref)
		}
		if !keep {
			return nil
		}
		for i := range p.bands {
			if err := r.computeRef(g, i, r.bands[i].ref); err != nil {
				return err
			}
		}
		if len(p.bands) == 1 && r.up.Staging != nil {
			// Whole images score through the ring's slots (pipe.go): the
			// reference's staging buffer goes back to the pool (the copy
			// out of it already submitted is unaffected).
			r.own.Drop(r.up.Staging)
			r.up.Staging = nil
		}
		return nil
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
	defer zenmetrics.Recover(&err)
	if err := dist.Validate(); err != nil {
		return zenmetrics.Score{}, err
	}
	if dist.Width != r.p.w || dist.Height != r.p.h {
		return zenmetrics.Score{}, &zenmetrics.SizeMismatchError{RefWidth: r.p.w, RefHeight: r.p.h,
			DistWidth: dist.Width, DistHeight: dist.Height}
	}
	if r.ringable(dist) {
		return r.scoreRing(ctx, dist)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	sc, _, err = r.run(ctx, dist)
	return sc, err
}

// run scores dist (r.mu held); with r.timed it also returns the GPU time
// of every dispatch of the last band (all of a full image's).
func (r *reference) run(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, []webgpu.PassTime, error) {
	var times []webgpu.PassTime
	res := make([]float32, 8*maxScales)
	var m *zenmetrics.FloatPlane
	if r.distMap {
		m = &zenmetrics.FloatPlane{Width: r.p.w, Height: r.p.h, Pix: make([]float32, r.p.w*r.p.h)}
	}
	err := r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		for i := range r.p.bands {
			r.sideParams(g, &r.p.bands[i], r.bands[i].distP, dist)
		}
		var last *webgpu.Encoder
		for i := range r.p.bands {
			b := &r.p.bands[i]
			rp := r.bands[i].ref
			if !r.keep {
				if err := r.computeRef(g, i, r.scratchRef); err != nil {
					return err
				}
				rp = r.scratchRef
			}
			e := g.Encoder()
			if err := r.up.Put(g, e, &r.own, webgpu.StripCrop(dist, b.C0, b.C1)); err != nil {
				e.Discard()
				return err
			}
			r.encodeSide(e, b, r.bands[i].distP, &r.dist)
			r.encodeMaps(e, i, rp)
			if i+1 < len(r.p.bands) {
				if err := e.Submit(); err != nil {
					return err
				}
				continue
			}
			last = e
		}
		e := last
		r.encodePool(e)
		rb, err := e.ReadBack(r.res, 0, int64(len(res))*4)
		if err != nil {
			e.Discard()
			return err
		}
		var maps []*webgpu.Readback
		if m != nil {
			for i := range r.p.bands {
				n := int64(r.p.bands[i].lv[0].owned()) * 4
				if n == 0 {
					maps = append(maps, nil)
					continue
				}
				mb, err := e.ReadBack(r.bands[i].maps[0], 0, n)
				if err != nil {
					e.Discard()
					return err
				}
				maps = append(maps, mb)
			}
		}
		if err := e.Submit(); err != nil {
			return err
		}
		if err := webgpu.ReadSlice(rb, res); err != nil {
			return err
		}
		if r.timed {
			var err error
			if times, err = e.PassTimes(); err != nil {
				return err
			}
		}
		for i, mb := range maps {
			if mb == nil {
				continue
			}
			b := &r.p.bands[i]
			if err := webgpu.ReadSlice(mb, m.Pix[b.Y0*r.p.w:b.Y1*r.p.w]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return zenmetrics.Score{}, nil, err
	}
	return zenmetrics.Score{Metric: zenmetrics.DSSIM, Value: r.pool(res), DistMap: m}, times, nil
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

// impl is DSSIM's webgpu.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return int64(w) * int64(h) * 8 }

// Estimate is the plan's memory model (memory in plan.go, the same sizes
// the reference takes), for the worst case RGBA16.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if w <= 0 || h <= 0 {
		return 0, false
	}
	lim := b.Device().Limits()
	if mode == zenmetrics.ModeStrip {
		p, keep, err := stripPlan(w, h, w*8, zenmetrics.RGBA16, b.Available(), lim.MaxStorageBufferBindingSize, 0)
		if err != nil {
			return 0, false
		}
		return p.memory(cropRaw(w, p.maxRows, w*8, zenmetrics.RGBA16), keep).total(), true
	}
	p := newPlan(w, h, nil)
	bytes := p.memory(worstRaw(w, h), true).total()
	if uint64(p.maxPlane()) > lim.MaxStorageBufferBindingSize || uint64(worstRaw(w, h)) > lim.MaxStorageBufferBindingSize ||
		uint64(p.maxPlane()) > lim.MaxBufferSize || !p.dispatchable() {
		return bytes, false
	}
	return bytes, true
}

// Prepare prepares a whole image (refused above the VRAM budget or when a
// plane exceeds the binding limit) or, with ModeStrip, strips.
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	lim := b.Device().Limits()
	if opt.Mode == zenmetrics.ModeStrip {
		b.RefreshHeld(ctx)
		p, keep, err := stripPlan(ref.Width, ref.Height, ref.Stride, ref.Format, b.Available(), lim.MaxStorageBufferBindingSize, opt.StripHeight)
		if err != nil {
			return nil, err
		}
		if forceKeep != nil {
			keep = *forceKeep
		}
		r, err := prepare(ctx, b, ref, p, keep, opt.DistMap)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	p := newPlan(ref.Width, ref.Height, nil)
	raw := webgpu.RawBytes(ref)
	if err := b.CheckBudget(p.memory(raw, true).total()); err != nil {
		return nil, err
	}
	if uint64(p.maxPlane()) > lim.MaxStorageBufferBindingSize || uint64(raw) > lim.MaxStorageBufferBindingSize || !p.dispatchable() {
		return nil, &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: p.maxPlane(), Free: -1,
			Detail: fmt.Sprintf("a %d-byte plane exceeds maxStorageBufferBindingSize %d, or a dispatch %d workgroups (use strips)",
				p.maxPlane(), lim.MaxStorageBufferBindingSize, maxGroups)}
	}
	r, err := prepare(ctx, b, ref, p, true, opt.DistMap)
	if err != nil {
		return nil, err
	}
	return r, nil
}
