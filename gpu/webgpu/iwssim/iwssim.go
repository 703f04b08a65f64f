// Package iwssim is IW-SSIM (piq 0.8.0's information_weighted_ssim) on
// WebGPU: the host code that drives wgsl/iwssim_*.wgsl, written on the
// metric kit of package webgpu. Importing it registers the metric with
// every webgpu.Backend.
//
// # The cached-reference split
//
// The reference's side (its Laplacian pyramid, its local statistics, the
// neighbourhood covariance of every scale, its eigen-decomposition and
// vᵀC⁻¹v per block) is prepared by the float64 CPU reference cpu/iwssim,
// once per reference, and uploaded as float32 planes: the eigen-problems are
// tiny (10×10) and the covariance needs a float64 sum over every block,
// which float32 on the GPU would not reproduce. A score then runs entirely
// on the device, in one command buffer, and reads back two float32 sums per
// region row:
//
//	unpack       raw 8/16-bit samples -> luminance (v/max·255, rgb2yiq's Y)
//	4 × pyramid  down_x, down_y, up_x, up_y: band k and low-pass k+1
//	per scale    hpass: Gaussian (11) and 3-sums along x of a, a², a·b
//	             pix:   along y; cs, piq's information weight iw
//	             rows:  Σ cs·iw and Σ iw per region row (fixed tree)
//
// and the host adds the rows in order in float64 and takes piq's product.
// Every value has one writer and every sum a fixed order: scores are
// bit-identical run to run. Only whole images are scored (ModeStrip is
// not offered: Estimate declines it).
package iwssim

import (
	"context"
	"fmt"
	"math"
	"sync"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuiw "github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/wgsl"
)

func init() { webgpu.Register(zenmetrics.IWSSIM, impl{}) }

const nScales = cpuiw.NumScales

// params mirrors iwssim_common.wgsl's Params (64 bytes).
type params struct {
	W, H, WL, HL, RW, RH  uint32
	Stride, Channels, BPS uint32
	NLam, LamOff, RowOff  uint32
	MaxV, Shift           float32
	Pad1, Pad2            uint32
}

// K layout (iwssim_common.wgsl): 32 constants, then 16 per scale.
const (
	kPyr, kGauss, kBox, kC1, kC2, kNsq, kInvNsq2, kEps = 0, 5, 16, 17, 18, 19, 20, 21
	kLam                                               = 32
	kLen                                               = kLam + 16*nScales
)

// lowShift is subtracted from both images before the statistics of the
// last (low-pass) scale, whose values reach 255·16 (each of the four
// pyramid steps has gain 2): the midpoint keeps E[a²] − E[a]² from losing
// float32 digits to the mean. Bands are centred on zero and need none.
const lowShift = 255 * 16 / 2

type kernels struct {
	unpack, downX, downY, upX, upY, hpass, pix, rows *webgpu.Pipeline
}

const (
	wg2 = 16 // unpack and pyramid: 16×16
	wgX = 64 // hpass, pix: 64×4
	wgY = 4
	// wgRows is the rows kernel's workgroup (a power of two).
	wgRows = 256
)

func compile(g *webgpu.GPU) (*kernels, error) {
	return webgpu.Compiled(g, "iwssim", func(g *webgpu.GPU) (*kernels, error) {
		common, err := wgsl.Source("iwssim_common")
		if err != nil {
			return nil, err
		}
		var k kernels
		sq := webgpu.Constants{"WG_X": wg2, "WG_Y": wg2}
		st := webgpu.Constants{"WG_X": wgX, "WG_Y": wgY}
		return &k, webgpu.Compile(g, []webgpu.Kernel{
			{File: "iwssim_unpack", Entry: "unpack", Prefix: common, Constants: sq, Dst: &k.unpack},
			{File: "iwssim_down_x", Entry: "down_x", Prefix: common, Constants: sq, Dst: &k.downX},
			{File: "iwssim_down_y", Entry: "down_y", Prefix: common, Constants: sq, Dst: &k.downY},
			{File: "iwssim_up_x", Entry: "up_x", Prefix: common, Constants: sq, Dst: &k.upX},
			{File: "iwssim_up_y", Entry: "up_y", Prefix: common, Constants: sq, Dst: &k.upY},
			{File: "iwssim_hpass", Entry: "hpass", Prefix: common, Constants: st, Dst: &k.hpass},
			{File: "iwssim_pix", Entry: "pix", Prefix: common, Constants: st, Dst: &k.pix},
			{File: "iwssim_rows", Entry: "rows", Prefix: common, Constants: webgpu.Constants{"WG": wgRows}, Dst: &k.rows},
		})
	})
}

// geometry is the size of every scale.
type geometry struct {
	w, h   int
	s      [nScales]struct{ w, h, rw, rh int }
	rowOff [nScales]int // offset of each scale's row sums
	rows   int          // Σ rh
}

func newGeometry(w, h int) geometry {
	gm := geometry{w: w, h: h}
	cw, ch := w, h
	for k := 0; k < nScales; k++ {
		gm.s[k].w, gm.s[k].h = cw, ch
		gm.s[k].rw, gm.s[k].rh = cw-10, ch-10
		gm.rowOff[k] = gm.rows
		gm.rows += ch - 10
		cw, ch = (cw+1)/2, (ch+1)/2
	}
	return gm
}

// memory is the device bytes of a reference (and its scoring scratch) with
// an upload of raw bytes: the per-buffer sizes, in take's order.
func (gm *geometry) sizes(raw int64) (list []int64, total int64) {
	add := func(n int64) {
		n = max(n, 4)
		list = append(list, n)
		total += n
	}
	add(4 * kLen)
	for k := 0; k < nScales; k++ {
		s := gm.s[k]
		n, rn := int64(s.w)*int64(s.h), int64(s.rw)*int64(s.rh)
		planes := int64(5)
		if k == nScales-1 {
			planes = 2
		}
		add(4 * n)           // y
		add(4 * planes * rn) // refm
		add(4 * n)           // x
	}
	s0 := gm.s[0]
	add(4 * max(int64(s0.h)*int64((s0.w+1)/2), int64((s0.h+1)/2)*int64(s0.w))) // tmp
	add(4 * 3 * int64(s0.h) * int64(s0.rw))                                    // g
	add(4 * 3 * int64(s0.h) * int64(s0.rw))                                    // bx
	add(4 * 2 * int64(s0.rw) * int64(s0.rh))                                   // out
	add(4 * 2 * int64(gm.rows))                                                // sums
	total += 10 * 64                                                           // uniforms
	total += (raw + 3) &^ 3                                                    // raw upload
	if raw >= webgpu.StagingMin {
		total += (raw + 3) &^ 3 // its mapped staging buffer (Upload.Reserve)
	}
	return list, total
}

// reference is a prepared IW-SSIM reference on a WebGPU device.
type reference struct {
	dev *webgpu.Device
	gm  geometry
	k   *kernels

	own        webgpu.Buffers
	up         webgpu.Upload
	kb         *webgpu.Buffer
	y, refm, x [nScales]*webgpu.Buffer
	tmp, g, bx *webgpu.Buffer
	out, sums  *webgpu.Buffer
	pUnpack    *webgpu.Buffer
	pPyr       [nScales - 1]*webgpu.Buffer
	pScale     [nScales]*webgpu.Buffer

	mu       sync.Mutex
	released bool
}

// Bytes is the device memory the reference holds (webgpu.ReferenceBytes).
func (r *reference) Bytes() int64 { return r.own.Bytes }

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// constants is the K buffer: the kernel constants and every scale's λ/σ².
func constants(data []cpuiw.ScaleData) []float32 {
	c := cpuiw.KernelConstants()
	k := make([]float32, kLen)
	for i, v := range c.Pyr {
		k[kPyr+i] = float32(v)
	}
	for i, v := range c.Gauss {
		k[kGauss+i] = float32(v)
	}
	k[kBox], k[kC1], k[kC2] = float32(c.Box), float32(c.C1), float32(c.C2)
	k[kNsq], k[kInvNsq2], k[kEps] = float32(c.SigmaNsq), float32(c.InvNsq2), float32(c.Eps)
	for s, d := range data {
		for i, l := range d.LamScaled {
			k[kLam+16*s+i] = float32(l)
		}
	}
	return k
}

// upload takes every buffer and writes the reference's data (device
// thread).
func (r *reference) upload(g *webgpu.GPU, data []cpuiw.ScaleData, raw int64) error {
	o := &r.own
	gm := &r.gm
	sizes, _ := gm.sizes(raw)
	next := func() int64 { n := sizes[0]; sizes = sizes[1:]; return n }
	r.kb = o.Storage(g, next())
	for k := 0; k < nScales; k++ {
		r.y[k] = o.Storage(g, next())
		r.refm[k] = o.Storage(g, next())
		r.x[k] = o.Storage(g, next())
	}
	r.tmp = o.Storage(g, next())
	r.g = o.Storage(g, next())
	r.bx = o.Storage(g, next())
	r.out = o.Storage(g, next())
	r.sums = o.Storage(g, next())
	r.pUnpack = o.Uniform(g, 64)
	for k := range r.pPyr {
		r.pPyr[k] = o.Uniform(g, 64)
	}
	for k := range r.pScale {
		r.pScale[k] = o.Uniform(g, 64)
	}
	if o.Err != nil {
		return o.Err
	}
	if err := r.up.Reserve(g, o, raw); err != nil {
		return err
	}
	webgpu.WriteSlice(g, r.kb, 0, constants(data))
	for k, d := range data {
		webgpu.WriteSlice(g, r.y[k], 0, f32s(d.Y))
		maps := [][]float64{d.Mu, d.Vr}
		if d.SS != nil {
			maps = append(maps, d.Bm, d.Bv, d.SS)
		}
		rn := int64(d.RW * d.RH)
		for m, p := range maps {
			webgpu.WriteSlice(g, r.refm[k], int64(m)*rn*4, f32s(p))
		}
		s := gm.s[k]
		if k < nScales-1 {
			n := gm.s[k+1]
			p := params{W: uint32(s.w), H: uint32(s.h), WL: uint32(n.w), HL: uint32(n.h)}
			g.Write(r.pPyr[k], 0, webgpu.Bytes(&p))
		}
		p := params{W: uint32(s.w), H: uint32(s.h), RW: uint32(s.rw), RH: uint32(s.rh),
			NLam: uint32(len(d.LamScaled)), LamOff: uint32(kLam + 16*k), RowOff: uint32(gm.rowOff[k])}
		if d.SS == nil {
			p.NLam, p.Shift = 0, lowShift
		}
		g.Write(r.pScale[k], 0, webgpu.Bytes(&p))
	}
	return o.Err
}

// encode records a whole score of the image uploaded to r.up.Raw.
func (r *reference) encode(e *webgpu.Encoder) {
	k, gm := r.k, &r.gm
	s0 := gm.s[0]
	e.Dispatch(k.unpack, webgpu.Groups(s0.w, wg2), webgpu.Groups(s0.h, wg2), 1, r.pUnpack, r.up.Raw, r.x[0])
	for l := 0; l < nScales-1; l++ {
		s, n := gm.s[l], gm.s[l+1]
		p := r.pPyr[l]
		e.Dispatch(k.downX, webgpu.Groups(n.w, wg2), webgpu.Groups(s.h, wg2), 1, p, r.kb, r.x[l], r.tmp)
		e.Dispatch(k.downY, webgpu.Groups(n.w, wg2), webgpu.Groups(n.h, wg2), 1, p, r.kb, r.tmp, r.x[l+1])
		e.Dispatch(k.upX, webgpu.Groups(s.w, wg2), webgpu.Groups(n.h, wg2), 1, p, r.kb, r.x[l+1], r.tmp)
		e.Dispatch(k.upY, webgpu.Groups(s.w, wg2), webgpu.Groups(s.h, wg2), 1, p, r.kb, r.tmp, r.x[l])
	}
	for l := 0; l < nScales; l++ {
		s := gm.s[l]
		p := r.pScale[l]
		e.Dispatch(k.hpass, webgpu.Groups(s.rw, wgX), webgpu.Groups(s.h, wgY), 1, p, r.kb, r.x[l], r.y[l], r.g, r.bx)
		e.Dispatch(k.pix, webgpu.Groups(s.rw, wgX), webgpu.Groups(s.rh, wgY), 1, p, r.kb, r.g, r.bx, r.refm[l], r.out)
		e.Dispatch(k.rows, uint32(s.rh), 1, 1, p, r.out, r.sums)
	}
}

// pool adds each scale's row sums in row order (float64) and takes piq's
// product Π |Σ cs·iw / Σ iw|^w_k.
func (r *reference) pool(sums []float32) (float64, error) {
	w := cpuiw.KernelConstants().Weights
	score := 1.0
	for k := 0; k < nScales; k++ {
		s := r.gm.s[k]
		var num, den float64
		for i := 0; i < s.rh; i++ {
			j := 2 * (r.gm.rowOff[k] + i)
			num += float64(sums[j])
			den += float64(sums[j+1])
		}
		if den == 0 {
			return 0, fmt.Errorf("%w: IW-SSIM is undefined: every information-content weight is zero at scale %d (flat images; piq returns NaN)", zenmetrics.ErrBadInput, k)
		}
		score *= math.Pow(math.Abs(num/den), w[k])
	}
	return score, nil
}

// Score implements zenmetrics.Reference.
func (r *reference) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	if err := dist.Validate(); err != nil {
		return zenmetrics.Score{}, err
	}
	if err := webgpu.SizeMismatch(r.gm.w, r.gm.h, dist); err != nil {
		return zenmetrics.Score{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	sums := make([]float32, 2*r.gm.rows)
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		f := dist.Format
		p := params{W: uint32(dist.Width), H: uint32(dist.Height), Stride: uint32(dist.Stride),
			Channels: uint32(f.Channels()), BPS: uint32(f.BytesPerSample()), MaxV: float32(f.MaxValue())}
		g.Write(r.pUnpack, 0, webgpu.Bytes(&p))
		e := g.Encoder()
		if err := r.up.Put(g, e, &r.own, dist); err != nil {
			e.Discard()
			return err
		}
		r.encode(e)
		return webgpu.SubmitRead(e, r.sums, 0, sums)
	})
	if err != nil {
		return zenmetrics.Score{}, err
	}
	v, err := r.pool(sums)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.IWSSIM, Value: v}, nil
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
	r.mu.Unlock()
	r.dev.Free(bufs)
}

// impl is IW-SSIM's webgpu.MetricImpl.
type impl struct{}

// worstRaw is the upload of a w×h RGBA16 image, the largest format.
func worstRaw(w, h int) int64 { return int64(w) * int64(h) * 8 }

// Estimate is the device memory of a reference and its scoring scratch
// for the worst case RGBA16 upload; ok is false below piq's minimum size,
// for ModeStrip (not offered) and when a buffer exceeds the device's
// binding limits.
func (impl) Estimate(b *webgpu.Backend, w, h int, mode zenmetrics.Mode) (int64, bool) {
	mw, mh := cpuiw.MinSize()
	if w < mw || h < mh || mode != zenmetrics.ModeFull {
		return 0, false
	}
	gm := newGeometry(w, h)
	list, total := gm.sizes(worstRaw(w, h))
	lim := b.Device().Limits()
	for _, n := range append(list, worstRaw(w, h)) {
		if uint64(n) > lim.MaxStorageBufferBindingSize || uint64(n) > lim.MaxBufferSize {
			return total, false
		}
	}
	// Workgroup counts per dimension (65535 at least on every device):
	// rows runs one workgroup per region row, hpass h/4 along y.
	s0 := gm.s[0]
	if s0.rh > 65535 || webgpu.Groups(s0.h, wgY) > 65535 || webgpu.Groups(s0.w, wg2) > 65535 {
		return total, false
	}
	return total, true
}

// Prepare prepares the reference on the CPU (cpu/iwssim, float64) and
// uploads it; refused above the VRAM budget and where Estimate declines.
func (impl) Prepare(ctx context.Context, b *webgpu.Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	if opt.Mode != zenmetrics.ModeFull {
		return nil, fmt.Errorf("%w: IW-SSIM on WebGPU scores whole images only (mode %v)", zenmetrics.ErrUnsupported, opt.Mode)
	}
	mw, mh := cpuiw.MinSize()
	if ref.Width < mw || ref.Height < mh {
		return nil, &zenmetrics.TooSmallError{Metric: zenmetrics.IWSSIM, Width: ref.Width, Height: ref.Height, MinWidth: mw, MinHeight: mh}
	}
	need, ok := impl{}.Estimate(b, ref.Width, ref.Height, zenmetrics.ModeFull)
	if !ok {
		return nil, fmt.Errorf("%w: IW-SSIM on WebGPU: a %d×%d image exceeds the device's buffer limits", zenmetrics.ErrUnsupported, ref.Width, ref.Height)
	}
	b.RefreshHeld(ctx)
	if err := b.CheckBudget(need); err != nil {
		return nil, err
	}
	cref, err := cpuiw.PrepareContext(ctx, ref, cpuiw.Config{})
	if err != nil {
		return nil, err
	}
	defer cref.Release()
	data := cref.Scales()
	r := &reference{dev: b.Device(), gm: newGeometry(ref.Width, ref.Height)}
	err = r.dev.Do(ctx, func(g *webgpu.GPU) error {
		defer g.NoteHeld()
		k, err := compile(g)
		if err != nil {
			return err
		}
		r.k = k
		if err := r.upload(g, data, worstRaw(ref.Width, ref.Height)); err != nil {
			return err
		}
		return g.Encoder().SubmitAndWait()
	})
	if err != nil {
		r.dev.Free(r.own.Take())
		return nil, err
	}
	return r, nil
}
